"""The guard: what makes a window's output untrustworthy, and ``generate`` decoding such a window again.

Two failures of Whisper are caught and decoded again, each as faster-whisper itself would decode the
window without the cause:

* **A short audio context that broke the window** (:meth:`Guard.reason`): the window was encoded as its
  audio plus a margin (:mod:`tokenmap.context`), and its output repeats itself, runs past the audio, never
  ends or has a low log-probability. The window asks its encoder for the full 30 s output and is decoded
  on that (kept for the window's later calls, e.g. the temperature fallback). In a batch, only the rows
  the guard rejects are encoded and decoded again.
* **A copied prompt** (:meth:`Guard.copied`), at every audio context: faster-whisper conditions a window
  on the previous window's text, and Whisper sometimes writes that text again instead of what it hears,
  whole or as phrases of it stitched together. Unless a short probe hears it said again
  (:mod:`tokenmap.decode.copies`), the window is decoded again without that text (faster-whisper's
  ``condition_on_previous_text=False`` for that window alone, on the same encoder output).

Every decision is counted in the call's :class:`tokenmap.decode.speculative.DecodeStats`, which
``WhisperModel.last_stats()`` returns.

Example::

    >>> Guard().reason([50365, 400, 500, 50415], seconds=1.0, score=-0.2, no_speech_prob=0.01,
    ...                finished=True, timestamp_begin=50365, text="Hello.")
    >>> Guard().reason([50365, 400, 50565], seconds=1.0, score=-0.2, no_speech_prob=0.01,
    ...                finished=True, timestamp_begin=50365, text="Hello.")
    'a timestamp 3.0 s past the audio'
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Sequence

from tokenmap.decode.copies import CopyProbe, probe_copy, words_of
from tokenmap.decode.loops import compression_ratio, decoded_tokens

logger = logging.getLogger("tokenmap")


@dataclass(frozen=True)
class Guard:
    """What makes a window's output untrustworthy: :meth:`reason` names the first failure of a short-context
    decode, :meth:`copied` a copy of the prompt's previous text (``copy_*``, at any context).

    ``past_audio_s``: a timestamp this far past the window's audio, or past ``min_closing_s`` (Whisper
    closes a short utterance at a round time, often 2.00 s, with any context); ``compression``:
    faster-whisper's compression-ratio threshold on the text; ``repeats``: a run of the same 1-8 tokens
    this many times in a row; ``logprob``: average log-probability per token below this (faster-whisper's
    ``log_prob_threshold`` is -1.0; a one-word prompt decodes near it with any context, so the guard
    waits for less); ``no_speech``: ``no_speech_prob`` above this with that low log-probability
    (faster-whisper would then drop the window as silence); ``tokens_per_s``: more text tokens a second
    of audio than this. The defaults, and :class:`tokenmap.context.AudioContext`'s, come from
    ``research/short_context.py``. ``copies=False`` turns the copy guard off (:meth:`copied` finds none);
    ``probe``: how a copy is told from speech that repeats (:func:`tokenmap.decode.copies.probe_copy`).
    """

    past_audio_s: float = 1.0
    min_closing_s: float = 2.0
    compression: float = 2.4
    repeats: int = 3
    logprob: float = -1.5
    no_speech: float = 0.6
    tokens_per_s: float = 12.0
    copy_tokens: int = 12
    copy_ngram: int = 3
    copy_share: float = 0.75
    copy_min_words: int = 8
    copies: bool = True
    probe: CopyProbe = CopyProbe()

    def copied(self, tokens: Sequence[int], history: Sequence[int], text: str, history_text: str) -> str | None:
        """Why a window's text (``tokens``, ``text``) is a copy of its prompt's previous text (``history``,
        ``history_text``), or None: a run of ``copy_tokens`` tokens of it, or at least ``copy_min_words``
        words of which ``copy_share`` lie in word ``copy_ngram``-grams of it (phrases stitched together)."""
        if not self.copies:
            return None
        run = copied_run(tokens, history, self.copy_tokens)
        if run >= self.copy_tokens:
            return f"a run of {run} tokens of the previous text"
        window = words_of(text)
        if len(window) >= self.copy_min_words:
            share = copied_share(window, words_of(history_text), self.copy_ngram)
            if share >= self.copy_share:
                return f"{share:.0%} of its words in {self.copy_ngram}-word phrases of the previous text"
        return None

    def reason(self, tokens: Sequence[int], *, seconds: float, score: float, no_speech_prob: float,
               finished: bool, timestamp_begin: int, text: str) -> str | None:
        """Why ``tokens`` (a window's output, no prompt, no EOT) should be decoded again with the full
        context, or None. ``score``: the result's score as CTranslate2 returns it (mean log-probability)."""
        if not finished:
            return "no end of text"
        stamps = [t - timestamp_begin for t in tokens if t >= timestamp_begin]
        if stamps and max(stamps) * 0.02 > max(seconds + self.past_audio_s, self.min_closing_s):
            return f"a timestamp {max(stamps) * 0.02 - seconds:.1f} s past the audio"
        words = [t for t in tokens if t < timestamp_begin]
        if text and compression_ratio(text) > self.compression:
            return "repetitive text"
        if repeated_run(words) >= self.repeats:
            return "a repeated phrase"
        low = bool(words) and score * len(tokens) / (len(tokens) + 1) < self.logprob
        if low and no_speech_prob > self.no_speech:
            return "no speech"
        if low:
            return "a low log-probability"
        if len(words) > self.tokens_per_s * max(seconds, 1.0):
            return "more text than the audio can hold"
        return None


def repeated_run(tokens: Sequence[int], longest: int = 8) -> int:
    """The most times any sequence of 1 to ``longest`` tokens repeats back to back in ``tokens``.

    >>> repeated_run([1, 2, 3, 2, 3, 2, 3, 4]), repeated_run([1, 2, 3]), repeated_run([])
    (3, 1, 0)
    """
    best = 1 if tokens else 0
    n = len(tokens)
    for period in range(1, longest + 1):
        run = 0
        for i in range(period, n):
            run = run + 1 if tokens[i] == tokens[i - period] else 0
            best = max(best, 1 + run // period)
    return best


def copied_run(tokens: Sequence[int], history: Sequence[int], at_least: int) -> int:
    """The longest run of ``tokens`` that also occurs, in a row, in ``history``, counted only when it
    reaches ``at_least`` (else 0): a window that copied its prompt instead of transcribing.

    >>> copied_run([5, 1, 2, 3, 4, 9], [7, 1, 2, 3, 4, 8], 3), copied_run([1, 2, 9, 3], [1, 2, 3], 3)
    (4, 0)
    """
    if at_least < 1 or len(tokens) < at_least or len(history) < at_least:
        return 0
    starts: dict[tuple, list[int]] = {}  # each run of ``at_least`` tokens of history -> where it starts
    for j in range(len(history) - at_least + 1):
        starts.setdefault(tuple(history[j: j + at_least]), []).append(j)
    best = 0
    for i in range(len(tokens) - at_least + 1):
        for j in starts.get(tuple(tokens[i: i + at_least]), ()):
            n = at_least
            while i + n < len(tokens) and j + n < len(history) and tokens[i + n] == history[j + n]:
                n += 1
            best = max(best, n)
    return best


def copied_share(words: Sequence[str], history: Sequence[str], n: int) -> float:
    """The share of ``words`` inside some run of ``n`` consecutive words that also occurs in ``history``.

    Two phrases of the previous text stitched together are covered whole; a sentence that shares a
    phrase or two with it is not:

    >>> prev = "the old house stood on the hill and the river ran below it".split()
    >>> copied_share("the old house stood and the river ran below".split(), prev, 3)
    1.0
    >>> copied_share("a new house stood on the hill by the sea".split(), prev, 3)
    0.5
    """
    if not words or len(history) < n:
        return 0.0
    seen = {tuple(history[j: j + n]) for j in range(len(history) - n + 1)}
    covered = [False] * len(words)
    for i in range(len(words) - n + 1):
        if tuple(words[i: i + n]) in seen:
            covered[i: i + n] = [True] * n
    return sum(covered) / len(words)


def guarded_generate(decode: Callable, window, prompts, kwargs: dict, stats, model, verify: Callable | None = None):
    """``(encoder output decoded on, results)`` of ``generate`` on ``window`` with both guards of ``model``.

    ``decode(output, prompts, kwargs)`` decodes; ``window`` is a :class:`tokenmap.windows.EncodedWindow`
    (its ``output``, ``seconds``, ``short``, and ``full()`` that encodes the 30 s window); ``model`` judges: its
    ``guard``, ``special`` tokens and ``text`` (token ids -> text). One prompt's result is checked for a copy of
    its previous text, probed by ``verify`` where it decodes (:func:`tokenmap.decode.copies.probe_copy`)."""
    guard, special, text = model.guard, model.special, model.text
    output, results = (_short_context(decode, window, prompts, kwargs, stats, model) if window.short
                       else (window.output, decode(window.output, prompts, kwargs)))
    if len(prompts) != 1:
        return output, results
    prompt = list(prompts[0])
    if not prompt or prompt[0] == special.sot:  # no previous text in the prompt
        return output, results
    start = special.sot_index(prompt)
    history = [t for t in prompt[1:start] if t < special.eot]
    tokens = [t for t in decoded_tokens(results[0]) if t < special.eot]  # a stopped loop as decoded
    written = text(tokens)
    why = guard.copied(tokens, history, written, text(history))
    if why is None:
        return output, results
    again = probe_copy(decode, output, prompt[start:], results, history, kwargs, model, verify=verify)
    if again is None:  # the audio says it again (tokenmap.decode.copies): speech that repeats, not a copy
        stats.copies_kept += 1
        logger.debug("a window repeats its previous text (%s) and the audio says it again: kept %r", why,
                     written[:100])
        return output, results
    logger.debug("a window copied its previous text (%s): decoding it again without that text: %r", why,
                 written[:100])
    stats.prompt_copies += 1
    return output, again


def _short_context(decode, window, prompts, kwargs, stats, model):
    """``(encoder output, results)`` of a window (or batch) encoded on a short context: the short decode
    where ``model``'s guard accepts it (:meth:`Guard.reason`), else the full context's."""
    if window.sent_back:  # an earlier call on this window was sent back already
        return window.full(), decode(window.full(), prompts, kwargs)
    results = list(decode(window.output, prompts, kwargs))
    rejected = []
    for row, (result, prompt) in enumerate(zip(results, prompts)):
        tokens = decoded_tokens(result)  # a stopped loop as decoded
        why = model.guard.reason(tokens, seconds=window.seconds or 30.0, score=result.scores[0] if result.scores
                                 else 0.0, no_speech_prob=getattr(result, "no_speech_prob", 0.0),
                                 finished=len(prompt) + len(tokens) < kwargs.get("max_length", 448) - 1,
                                 timestamp_begin=model.special.timestamp_begin, text=model.text(tokens))
        if why is not None:
            logger.debug("short audio context rejected (%s): decoding the window with 30 s", why)
            rejected.append(row)
    stats.short_windows += len(results)
    stats.guarded += len(rejected)
    if not rejected:
        return window.output, results
    if len(results) == 1:
        return window.full(), decode(window.full(), prompts, kwargs)
    for row, result in zip(rejected, decode(window.full(rejected), [prompts[i] for i in rejected], kwargs)):
        results[row] = result
    return window.output, results
