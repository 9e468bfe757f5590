"""Loops: stop a decode that has clearly started to repeat, as it starts.

Whisper's greedy decoder sometimes writes the same few tokens again and again up to the maximum length
(224 steps a window); faster-whisper sees it only afterwards, by the text's compression ratio, and its
temperature fallback then decodes the window again, five sampled hypotheses a temperature.

**The rule** (:class:`LoopRule`, measured in ``research/loop_rule.py`` on real speech): the text tokens
(timestamps left out) end with a unit of 1 to ``max_unit`` tokens repeated back to back over at least
``min_span`` tokens and ``min_repeats`` units. Legit speech repeats too, but not that long, back to back.

**A stopped decode** returns its tokens before the repetition's second unit, without a dangling
timestamp (:func:`cut_tokens`), scored by every token decoded. faster-whisper must still see the loop (so
that its fallback runs as it did): the result carries the compression ratio the loop would have reached
(:func:`projected_ratio`, :attr:`Result.ratio`), which ``get_compression_ratio`` answers within a tokenmap call
(:mod:`tokenmap.hooks`). Where nothing better is found, faster-whisper keeps the text before the repetition.

**Where**: the drafting loop checks every token it decides (``decode_window(loop=)``); plain ``generate``
has no per-token hook, so :func:`generate_stopping` gives it the steps legit speech of the window's
length needs and checks what came back.

Example::

    >>> rule = LoopRule(LoopOptions(min_span=6, min_repeats=3), timestamp_begin=1000)
    >>> [rule.feed(t) for t in [5, 7, 8, 7, 8, 1003, 7, 8]]   # 1003: a timestamp
    [False, False, False, False, False, False, False, True]
    >>> cut_tokens([5, 7, 8, 7, 8, 1003, 7, 8], rule.loop)
    [5, 7, 8]
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

from tokenmap.decode.rules import sample_decode
from tokenmap.runtime.engine import GenerationResult


@dataclass(frozen=True)
class LoopOptions:
    """The loop rule's thresholds (chosen on the dev split of ``research/loop_rule.py``'s sets).

    ``max_unit``: longest repeated unit, in text tokens; a repetition must span ``min_span`` text tokens
    and ``min_repeats`` units. ``cap_tokens`` + ``cap_rate`` * seconds: the steps plain ``generate`` is
    first given for a window of that much audio (:func:`generate_stopping`); a sampled call gets
    ``sampled_share`` of them where its hypotheses can go on token by token (the fork's step API).
    """

    max_unit: int = 16
    min_span: int = 24
    min_repeats: int = 4
    cap_tokens: int = 48
    cap_rate: float = 8.0
    sampled_share: float = 0.5


@dataclass(frozen=True)
class Loop:
    """Where a decode was found looping: ``stop`` tokens had been decoded (timestamps included) when the
    rule fired; the repetition's units are ``unit`` text tokens long and its second unit starts at
    token ``second`` (an index into the decoded tokens)."""

    stop: int
    second: int
    unit: tuple[int, ...]


class LoopRule:
    """The rule over one decode, fed token by token; ``stopped`` once it fired (``loop`` says where).

    Timestamps (ids at or above ``timestamp_begin``) and other special tokens are skipped. For every
    unit length ``n`` it keeps how many text tokens in a row, at the end, equal the token ``n`` before
    them; the repetition of period ``n`` then spans that many tokens plus ``n``. O(``max_unit``) a token.
    """

    def __init__(self, options: LoopOptions, timestamp_begin: int, eot: int | None = None):
        self.options = options
        self.timestamp_begin = timestamp_begin
        self.eot = eot if eot is not None else timestamp_begin  # every special token is at or above EOT
        self.text: list[int] = []  # text tokens
        self.where: list[int] = []  # their indexes among every token fed
        self.runs = [0] * (options.max_unit + 1)
        self.fed = 0
        self.loop: Loop | None = None

    @property
    def stopped(self) -> bool:
        return self.loop is not None

    def feed(self, token: int) -> bool:
        """Take the next decoded token; True when the decode has now clearly started to repeat (once)."""
        index = self.fed
        self.fed += 1
        if self.loop is not None or token >= self.eot:
            return False
        text, runs, options = self.text, self.runs, self.options
        text.append(token)
        self.where.append(index)
        length = len(text)
        for n in range(1, min(options.max_unit, length - 1) + 1):
            runs[n] = runs[n] + 1 if text[-1 - n] == token else 0
            span = runs[n] + n
            if span < options.min_repeats * n or runs[n] == 0:
                continue
            if span >= options.min_span:
                second = length - runs[n]  # the text index where the repetition's second unit starts
                self.loop = Loop(self.fed, self.where[second], tuple(text[-n:]))
                return True
        return False


def find_loop(tokens: Sequence[int], options: LoopOptions, timestamp_begin: int, eot: int | None = None) -> Loop | None:
    """The rule over a finished token list: where it would have stopped the decode (None: nowhere)."""
    rule = LoopRule(options, timestamp_begin, eot)
    return rule.loop if any(rule.feed(token) for token in tokens) else None


def cut_tokens(tokens: Sequence[int], loop: Loop, timestamp_begin: int | None = None) -> list[int]:
    """What a stopped decode returns: ``tokens`` before the repetition's second unit, ending with at most
    one timestamp (a closing one; the next segment's opening one is left out)."""
    head = list(tokens[: loop.second])
    if timestamp_begin is not None:
        while len(head) >= 2 and head[-1] >= timestamp_begin and head[-2] >= timestamp_begin:
            head.pop()
    return head


def compression_ratio(text: str) -> float:
    """faster-whisper's compression ratio of ``text`` (its bytes over their zlib size)."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def projected_ratio(head: Sequence[int], loop: Loop, steps: int, text: Callable[[Sequence[int]], str]) -> float:
    """The compression ratio of the text the loop would have written by ``steps`` tokens after ``head`` (a
    stopped decode's tokens: what faster-whisper would have judged, had the decode not been stopped)."""
    return compression_ratio(text(looped(head, loop, steps)).strip())


def looped(head: Sequence[int], loop: Loop, length: int) -> list:
    """``head`` (a stopped decode's tokens) and the loop's unit again and again, to ``length`` tokens (all of
    ``head`` at least)."""
    return (list(head) + (list(loop.unit) or [0]) * length)[: max(length, len(head))]


# plain generate, stopped by a short maximum length -------------------------------------------------


@dataclass(frozen=True)
class Result(GenerationResult):
    """A ``generate`` result with stopped hypotheses cut (CTranslate2's own results cannot be changed)."""

    loop: Loop | None = None  # where the first hypothesis was stopped (None: it was not)
    decoded: list | None = None  # the first hypothesis as decoded up to the stop, the repetition included
    ratio: float | None = None  # the compression ratio faster-whisper must see for the first hypothesis


def stopped_ratios(results, text: Callable[[Sequence[int]], str]) -> dict:
    """The projected ratios of ``results``' stopped first hypotheses, by their text (:mod:`tokenmap.hooks`)."""
    return {text(r.sequences_ids[0]).strip(): r.ratio for r in results if getattr(r, "ratio", None) is not None}


def decoded_tokens(result) -> list:
    """A ``generate`` result's first hypothesis as it was decoded: up to the stop, the repetition included,
    where the loop stop cut it (what the guards judge); else its tokens."""
    decoded = getattr(result, "decoded", None)
    return list(decoded if decoded is not None else result.sequences_ids[0])


def window_as_result(window) -> "Result":
    """The drafting loop's :class:`tokenmap.decode.speculative.WindowResult` as a ``generate`` result; a stopped
    window's ``decoded`` tokens are its tokens and its unit again up to the stop."""
    decoded = looped(window.tokens, window.loop, window.loop.stop) if window.loop is not None else None
    return Result([list(window.tokens)], [window.score], window.no_speech_prob or 0.0, window.loop, decoded)


@dataclass
class StoppedGeneration:
    """What :func:`generate_stopping` did: ``calls`` to ``generate``, ``loops`` hypotheses it stopped
    (``stopped_rows``: the rows whose first, faster-whisper's chosen, hypothesis was stopped)."""

    calls: int = 0
    loops: int = 0
    stopped_rows: list = field(default_factory=list)


def steps_of(max_length: int, prompt_length: int) -> int:
    """The decoding steps CTranslate2's Whisper ``generate`` runs at ``max_length`` (EOT included)."""
    return min(max_length // 2, max_length - (prompt_length - 1))


def length_for(steps: int, prompt_length: int, max_length: int) -> int:
    """The ``max_length`` that gives a prompt of ``prompt_length`` at least ``steps`` decoding steps (a long previous
    text takes its share of it): ``max_length`` itself where a shorter one would give as many steps.

    >>> length_for(50, 4, 448), length_for(50, 200, 448), steps_of(length_for(50, 200, 448), 200)
    (100, 249, 50)
    """
    length = min(max_length, max(2 * steps, prompt_length - 1 + steps))
    return max_length if steps_of(length, prompt_length) >= steps_of(max_length, prompt_length) else length


def generate_stopping(generate, features, prompts, options: LoopOptions, special, seconds: float | None = None,
                      resume=None, **kwargs):
    """``generate(features, prompts, **kwargs)`` whose looping hypotheses are stopped and cut.

    The first call gets the steps ``options.cap_tokens + options.cap_rate * seconds`` (``seconds``: the
    window's audio; None: 30). A hypothesis that used them all is cut when it loops; else it goes on with
    twice the steps, up to the caller's ``max_length``, alone: a greedy one decoded again (deterministic:
    the uncapped call's tokens), a sampled one continued from its tokens as a decoding prefix (the same
    distribution; its score then covers both calls). With ``resume(features, prompt, prefix, max_length,
    kwargs) -> (tokens, log-probability of the new ones, Loop or None)``, a sampled call's first cap is
    ``options.sampled_share`` of that and its hypotheses go on there, stopped at the token the rule fires on.
    Hypotheses are then ordered by score, as CTranslate2 orders them. ``special``: the model's ``timestamp_begin``
    and ``eot``. Returns ``(results, StoppedGeneration)``; rows where nothing changed are CTranslate2's own.
    """
    timestamp_begin, eot = special.timestamp_begin, special.eot
    max_length = kwargs.pop("max_length", 448)
    sampled, power = kwargs.get("sampling_topk", 1) != 1, kwargs.get("length_penalty", 1.0)
    steps = int(options.cap_tokens + options.cap_rate * (30.0 if seconds is None else seconds))
    resume = resume if sampled else None
    steps = int(steps * options.sampled_share) if resume is not None else steps
    report = StoppedGeneration()
    firsts = table = None
    todo = [(row, None, ()) for row in range(len(prompts))]  # (row, hypothesis, prefix) to decode
    while todo:
        longest = max(len(prompts[row]) for row, _, _ in todo)
        cap = length_for(steps, longest, max_length)
        final = cap == max_length
        report.calls += 1
        if firsts is None:
            firsts = generate(features, prompts, max_length=cap, **kwargs)
            table = [[[list(s), sc, None] for s, sc in zip(r.sequences_ids, list(r.scores or []) or
                                                          [None] * len(r.sequences_ids))] for r in firsts]
            decoded = [(row, h) for row in range(len(prompts)) for h in range(len(table[row]))]
        elif resume is not None:
            for row, h, prefix in todo:
                tokens, logprob, loop = resume(_rows_of(features, [row]), prompts[row], prefix, max_length, kwargs)
                total = (table[row][h][1] or 0.0) * len(prefix) ** power + logprob
                table[row][h] = [tokens, total / max(len(tokens), 1) ** power, loop or "again"]
                report.loops += loop is not None
            break
        else:
            got = generate(_rows_of(features, [row for row, _, _ in todo]),
                           [list(prompts[row]) + list(prefix) for row, _, prefix in todo],
                           max_length=cap, **dict(kwargs, num_hypotheses=1))
            for (row, h, prefix), result in zip(todo, got):
                tokens, score = list(result.sequences_ids[0]), (list(result.scores or []) or [None])[0]
                if prefix and score is not None:  # the prefix's log-probability is the first call's
                    score = (table[row][h][1] * len(prefix) ** power + score * len(tokens) ** power) / len(
                        tokens) ** power
                table[row][h] = [tokens, score, "again"]
            decoded = [(row, h) for row, h, _ in todo]
        todo = []
        for row, h in decoded:
            entry = table[row][h]
            if len(entry[0]) < steps_of(cap, len(prompts[row])):
                continue  # it ended with EOT
            loop = find_loop(entry[0], options, timestamp_begin, eot)
            if loop is not None:
                entry[2] = loop
                report.loops += 1
            elif not final:
                todo.append((row, h, entry[0] if sampled else ()))
        steps *= 2
    return [_row_result(first, hypotheses, row, timestamp_begin, report)
            for row, (first, hypotheses) in enumerate(zip(firsts, table))], report


def _rows_of(features, rows: list):
    """``features`` (a StorageView or array, one window a row) for the windows ``rows``."""
    if features is None or (rows == [0] and getattr(features, "shape", (1,))[0] == 1):
        return features

    array = np.ascontiguousarray(np.asarray(features)[rows])
    return type(features).from_array(array) if hasattr(type(features), "from_array") else array


def _row_result(first, hypotheses, row: int, timestamp_begin: int, report: StoppedGeneration):
    """A row's result from its ``[tokens, score, loop or "again" or None]`` hypotheses: CTranslate2's ``first``
    where none was cut or decoded again; else the cut ones cut, all ordered by score."""
    if all(state is None for _, _, state in hypotheses):
        return first
    if all(score is not None for _, score, _ in hypotheses):
        hypotheses = sorted(hypotheses, key=lambda entry: -entry[1])
    tokens, _, loop = hypotheses[0]
    loop = loop if isinstance(loop, Loop) else None
    if loop is not None:
        report.stopped_rows.append((row, loop, tokens))
    sequences = [cut_tokens(t, s, timestamp_begin) if isinstance(s, Loop) else t for t, _, s in hypotheses]
    scores = [score for _, score, _ in hypotheses if score is not None]
    return Result(sequences, scores, getattr(first, "no_speech_prob", 0.0), loop,
                  tokens[: loop.stop] if loop is not None else None)


class StoppingDecoder:
    """A plain decoder (CTranslate2's ``generate``) whose decodes stop as they start to loop.

    ``options``: the rule's (None: ``generate`` as it is); ``special``, ``text`` (ids -> text): the model's;
    ``seconds``: the window's audio (None: 30 s or unknown); ``stats`` counts ``loops_stopped``. Greedy or
    sampled ``generate`` goes through :func:`generate_stopping` (see :func:`stoppable`), sampled hypotheses going
    on by :func:`~tokenmap.decode.rules.sample_decode` on ``stepper`` (the fork's model; None: by ``generate``);
    :meth:`finish` turns the drafting loop's result into a ``generate`` result.
    """

    def __init__(self, plain, options: LoopOptions | None, special, text, seconds: float | None = None, stats=None,
                 stepper=None):
        self.plain, self.loop, self.special, self.text = plain, options, special, text
        self.seconds, self.stats, self.stepper = seconds, stats, stepper

    def resumable(self, kwargs) -> bool:
        """Whether :meth:`resume` draws as ``generate`` would with these arguments (no penalties it lacks)."""
        return self.stepper is not None and kwargs.get("repetition_penalty", 1) == 1 and not kwargs.get(
            "no_repeat_ngram_size", 0)

    def resume(self, features, prompt, prefix, max_length: int, kwargs):
        """A sampled hypothesis, ``prefix`` so far, decoded on to its end or its loop (:func:`generate_stopping`)."""
        rule = LoopRule(self.loop, self.special.timestamp_begin, self.special.eot)
        for token in prefix:
            rule.feed(token)
        result = sample_decode(self.stepper, features, prompt, prefix, self.special, rule.feed,
                               **dict(kwargs, max_length=max_length))
        return result.tokens, result.score, rule.loop

    def generate(self, features, prompts, **kwargs):
        if self.loop is None or not stoppable(prompts, self.special, kwargs):
            return self.plain.generate(features, prompts, **kwargs)
        results, report = generate_stopping(self.plain.generate, features, prompts, self.loop, self.special,
                                            self.seconds if len(prompts) == 1 else None,
                                            self.resume if self.resumable(kwargs) else None, **kwargs)
        if self.stats is not None:
            self.stats.loops_stopped += report.loops
        max_length = kwargs.get("max_length", 448)
        for row, loop, _ in report.stopped_rows:
            results[row] = replace(results[row], ratio=projected_ratio(
                results[row].sequences_ids[0], loop, steps_of(max_length, len(prompts[row])), self.text))
        return results

    def finish(self, prompt, window, max_length: int = 448):
        """The drafting loop's ``window`` (a :class:`tokenmap.decode.speculative.WindowResult` decoded with
        ``loop=self.loop``; its ``stats`` count a stop already) as a ``generate`` result of ``prompt``."""
        if window.loop is None:
            return GenerationResult([window.tokens], [window.score], window.no_speech_prob or 0.0)
        return replace(window_as_result(window), ratio=projected_ratio(
            window.tokens, window.loop, steps_of(max_length, len(prompt)), self.text))


def stoppable(prompts, special, kwargs) -> bool:
    """Whether :func:`generate_stopping` may run these ``generate`` arguments: one hypothesis a step (greedy
    or sampling, not beam search), no decoding prefix, no vocabulary logits asked for."""
    if kwargs.get("beam_size", 5) != 1 or kwargs.get("return_logits_vocab"):
        return False
    return all(special.prompt_length(list(p)) == len(p) for p in prompts)
