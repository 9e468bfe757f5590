"""Short audio context: encode a window's audio plus a margin instead of 30 s, guarded.

Whisper's encoder always sees 30 s: a 2 s prompt is encoded with 28 s of
silence after it, and on a CPU that encoder is most of a short file's time.
CTranslate2's encoder accepts fewer frames, and the decoder's cross-attention
then spans fewer frames too. With too little context the model fails in
known ways: it repeats itself, runs past the audio, or never ends.

:class:`AudioContext` says how many mel frames to encode for a window holding
``seconds`` of audio (``None``: the full window). :class:`Guard` looks at what
the decoder wrote on a short context and names the failure it sees; the
caller then decodes that window again with the full context
(:class:`tokenmap.whisper.SpeculativeModel`), so a rejected short decode
costs one more encoder pass, never a worse transcript on that window. A
window the guard accepts may still differ from the full-context transcript
by a word: ``auto`` trades that for speed (docs/BENCHMARKS.md, "Short audio").

Example::

    >>> ctx = AudioContext("auto", margin_s=3.0, min_s=5.0)
    >>> ctx.frames(1.2), ctx.frames(4.51), ctx.frames(28.0), AudioContext().frames(1.2)
    (500, 752, None, None)
    >>> Guard().reason([50365, 400, 500, 50415], seconds=1.0, score=-0.2, no_speech_prob=0.01,
    ...                finished=True, timestamp_begin=50365, text="Hello.")
    >>> Guard().reason([50365, 400, 50565], seconds=1.0, score=-0.2, no_speech_prob=0.01,
    ...                finished=True, timestamp_begin=50365, text="Hello.")
    'a timestamp 3.0 s past the audio'
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: mel frames of a full window (30 s at 10 ms)
WINDOW_FRAMES = 3000
MODES = ("full", "auto")


#: ``auto``'s margin and minimum (seconds) for languages whose dev sets asked for others than the
#: defaults (``docs/BENCHMARKS.md``, "Short audio on speech nobody tuned on")
LANGUAGE_CONTEXT: dict[str, tuple[float, float]] = {}


@dataclass(frozen=True)
class AudioContext:
    """How much of a window the encoder sees: ``full`` (30 s) or ``auto`` (the audio, then
    ``margin_s`` seconds of what follows, at least ``min_s`` in all; the full window when that
    would exceed ``max_s`` or 30 s). ``by_language``: :meth:`for_language` takes the margin and
    minimum of :data:`LANGUAGE_CONTEXT` for the languages it lists."""

    mode: str = "full"
    margin_s: float = 4.0
    min_s: float = 5.0
    max_s: float = 30.0
    by_language: bool = True

    def for_language(self, language: str | None) -> "AudioContext":
        """This context for windows in ``language``.

        >>> AudioContext("auto").for_language("xx") == AudioContext("auto")
        True
        """
        if self.mode == "full" or not self.by_language or language not in LANGUAGE_CONTEXT:
            return self
        margin, minimum = LANGUAGE_CONTEXT[language]
        return AudioContext(self.mode, margin, minimum, self.max_s, False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"audio context must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.margin_s < 0 or self.min_s < 0:
            raise ValueError("the audio context's margin and minimum must be >= 0 seconds")

    def frames(self, seconds: float) -> int | None:
        """Mel frames to encode for a window with ``seconds`` of audio (an even count), or None
        for the full window (``full``, or when the context would reach 30 s anyway)."""
        if self.mode == "full":
            return None
        wanted = int(math.ceil(round(max(seconds + self.margin_s, self.min_s) * 100, 6)))
        wanted += wanted % 2
        return wanted if wanted < min(WINDOW_FRAMES, self.max_s * 100 + 1) else None


@dataclass(frozen=True)
class Guard:
    """What makes a short-context decode untrustworthy; :meth:`reason` names the first failure seen.

    ``past_audio_s``: a timestamp this far past the window's audio, or past ``min_closing_s`` (Whisper
    closes a short utterance at a round time, often 2.00 s, with any context); ``compression``:
    faster-whisper's compression-ratio threshold on the text; ``repeats``: a run of the same 1-8 tokens
    this many times in a row; ``logprob``: average log-probability per token below this (faster-whisper's
    ``log_prob_threshold`` is -1.0; a one-word prompt decodes near it with any context, so the guard
    waits for less); ``no_speech``: ``no_speech_prob`` above this with that low log-probability
    (faster-whisper would then drop the window as silence); ``tokens_per_s``: more text tokens a second
    of audio than this.

    The defaults, and :class:`AudioContext`'s, were chosen by replaying greedy decodes of 180
    Asterisk prompts of the train split (60 each of en, es, fr) at several contexts
    (``research/short_context.py``); the benchmark measures the test split.
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

    def copied(self, tokens: Sequence[int], history: Sequence[int], text: str, history_text: str) -> str | None:
        """Why a window's text (``tokens``, ``text``) is a copy of its prompt's previous text (``history``,
        ``history_text``), or None: a run of ``copy_tokens`` tokens of it, or at least ``copy_min_words``
        words of which ``copy_share`` lie in word ``copy_ngram``-grams of it (phrases stitched together)."""
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


def compression_ratio(text: str) -> float:
    """faster-whisper's: UTF-8 bytes over zlib-compressed bytes (high for repetitive text)."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data))


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


def words_of(text: str) -> list[str]:
    """Lower-case words of ``text``, punctuation dropped.

    >>> words_of("Press 1, for Sales!  ¿Qué?")
    ['press', '1', 'for', 'sales', 'qué']
    """
    return re.findall(r"\w+(?:'\w+)?", text.lower())


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


def as_audio_context(value) -> AudioContext:
    """An :class:`AudioContext` from ``"full"``, ``"auto"`` or an :class:`AudioContext`.

    >>> as_audio_context("auto").mode, as_audio_context(None).mode
    ('auto', 'full')
    """
    if isinstance(value, AudioContext):
        return value
    return AudioContext(value or "full")


def content_seconds(features, frame_seconds: float = 0.01) -> float:
    """Seconds of audio in a mel window: faster-whisper pads a window's features with zero columns.

    >>> import numpy as np
    >>> mel = np.zeros((80, 3000), dtype=np.float32); mel[:, :250] = -0.5
    >>> content_seconds(mel)
    2.5
    """
    array = np.asarray(features)
    columns = np.flatnonzero(array.reshape(-1, array.shape[-1]).any(axis=0))
    return round(float(columns[-1] + 1) * frame_seconds, 2) if columns.size else 0.0
