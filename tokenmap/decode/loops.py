"""Loops: stop a decode that has clearly started to repeat, as it starts.

Whisper's greedy decoder sometimes writes the same few tokens again and again until the maximum
length (224 steps for a window). faster-whisper sees it only after the whole window, by the text's
compression ratio, and then its temperature fallback decodes the window up to three more times, five
sampled hypotheses each, to the maximum length again. A loop is the dearest thing a window can do.

**The rule** (:class:`LoopRule`, measured in ``research/loop_rule.py`` on real speech): a decode has
clearly started to repeat when its text tokens (timestamps left out: a loop's segments advance their
timestamps) end with a unit of 1 to ``max_unit`` tokens repeated back to back until the repetition
spans at least ``min_span`` tokens and ``min_repeats`` units. Legit speech repeats too ("no, no, no",
a phone number, a menu said twice), but not for that long, back to back, inside one window.

**What a stopped decode returns** (:func:`cut_tokens`): its tokens up to the start of the repetition's
second unit (the first is kept: the speaker may have said it once), without a dangling timestamp.
Its score is the mean log-probability of every token decoded, the loop's included, as the loop's
would have been. faster-whisper must still see it as the loop it is (compression ratio above its
threshold, so that its temperature fallback runs as it did), so the text is registered here with the
compression ratio the loop would have reached at the maximum length (:func:`projected_ratio`), and
:func:`install` makes faster-whisper's ``get_compression_ratio`` answer that for it. Where the fallback
finds nothing better (every temperature loops, or temperature 0 alone), faster-whisper keeps this
result: the text up to where the repetition began, instead of the loop.

**Where it stops** a decode: the drafting loop checks every token it decides
(:func:`tokenmap.decode.speculative.decode_window` with ``loop=``); plain ``generate`` has no per-token
hook in CTranslate2 (stock or fork), so :func:`generate_stopping` runs it with a short maximum length
first (what legit speech of the window's length needs, with a margin) and checks the rule on what came
back; a hypothesis that reached that length without looping is decoded again with the next, doubled,
length, up to the caller's. Greedy decoding is deterministic, so a window that does not loop gets the
tokens the uncapped call gives.

Example::

    >>> rule = LoopRule(LoopOptions(min_span=6, min_repeats=3), timestamp_begin=1000)
    >>> [rule.feed(t) for t in [5, 7, 8, 7, 8, 1003, 7, 8]]   # 1003: a timestamp
    [False, False, False, False, False, False, False, True]
    >>> cut_tokens([5, 7, 8, 7, 8, 1003, 7, 8], rule.loop)
    [5, 7, 8]
"""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass, field
from typing import Callable, Sequence


@dataclass(frozen=True)
class LoopOptions:
    """The loop rule's thresholds (chosen on the dev split of ``research/loop_rule.py``'s sets).

    ``max_unit``: longest repeated unit, in text tokens; a repetition must span ``min_span`` text tokens
    and ``min_repeats`` units. ``cap_tokens`` + ``cap_rate`` * seconds: the steps plain ``generate`` is
    first given for a window of that much audio (:func:`generate_stopping`).
    """

    max_unit: int = 16
    min_span: int = 24
    min_repeats: int = 4
    cap_tokens: int = 48
    cap_rate: float = 8.0


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
    ``max_span_seen`` (with ``max_span_unit``) is the longest repetition of at least ``min_repeats``
    units seen so far, whether or not it fired: the margin ``research/loop_rule.py`` reports.
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
        self.max_span_seen = 0
        self.max_span_unit: tuple[int, ...] = ()

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
            if span > self.max_span_seen:
                self.max_span_seen, self.max_span_unit = span, tuple(text[-n:])
            if span >= options.min_span:
                second = length - runs[n]  # the text index where the repetition's second unit starts
                self.loop = Loop(self.fed, self.where[second], tuple(text[-n:]))
                return True
        return False


def find_loop(tokens: Sequence[int], options: LoopOptions, timestamp_begin: int, eot: int | None = None) -> Loop | None:
    """The rule over a finished token list: where it would have stopped the decode (None: nowhere)."""
    rule = LoopRule(options, timestamp_begin, eot)
    for token in tokens:
        if rule.feed(token):
            return rule.loop
    return None


def cut_tokens(tokens: Sequence[int], loop: Loop, timestamp_begin: int | None = None) -> list[int]:
    """What a stopped decode returns: ``tokens`` before the repetition's second unit, ending with at most
    one timestamp (a closing one; the next segment's opening one is left out)."""
    kept = list(tokens[: loop.second])
    if timestamp_begin is not None:
        while len(kept) >= 2 and kept[-1] >= timestamp_begin and kept[-2] >= timestamp_begin:
            kept.pop()
    return kept


def compression_ratio(text: str) -> float:
    """faster-whisper's compression ratio of ``text`` (its bytes over their zlib size)."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def projected_ratio(kept: Sequence[int], loop: Loop, steps: int, text: Callable[[Sequence[int]], str]) -> float:
    """The compression ratio of the text the loop would have written by ``steps`` tokens: ``kept`` and
    its unit again and again (what faster-whisper would have judged, had the decode not been stopped)."""
    body = list(kept)
    unit = list(loop.unit) or [0]
    while len(body) < steps:
        body.extend(unit)
    return compression_ratio(text(body[:max(steps, len(kept))]).strip())


# faster-whisper's compression ratio, answered for stopped decodes ------------------------------------

_stopped = threading.local()  # text -> projected ratio of the decodes this thread stopped last
_installed: list = []


def register_stopped(text: str, ratio: float) -> None:
    """Remember that ``text`` is a stopped loop's, whose compression ratio faster-whisper must see as ``ratio``."""
    if not hasattr(_stopped, "texts"):
        _stopped.texts = {}
    _stopped.texts[text.strip()] = ratio


def clear_stopped() -> None:
    """Forget this thread's stopped texts (a new ``generate`` call begins)."""
    _stopped.texts = {}


def install() -> None:
    """Make faster-whisper's ``get_compression_ratio`` answer :func:`register_stopped`'s ratio for a stopped
    decode's text (once per process; other texts get faster-whisper's own ratio)."""
    if _installed:
        return
    import faster_whisper.transcribe as fw

    original = fw.get_compression_ratio

    def get_compression_ratio(text: str) -> float:
        texts = getattr(_stopped, "texts", None)
        ratio = texts.pop(text.strip(), None) if texts else None
        return original(text) if ratio is None else max(ratio, original(text))

    get_compression_ratio.__wrapped__ = original
    fw.get_compression_ratio = get_compression_ratio
    _installed.append(original)


# plain generate, stopped by a short maximum length -------------------------------------------------


@dataclass
class Result:
    """A ``generate`` result with stopped hypotheses cut (CTranslate2's own results cannot be changed)."""

    sequences_ids: list
    scores: list
    no_speech_prob: float = 0.0
    loop: Loop | None = None  # where the first hypothesis was stopped (None: it was not)
    decoded: list | None = None  # the first hypothesis as decoded up to the stop, the repetition included


def decoded_tokens(result) -> list:
    """A ``generate`` result's first hypothesis as it was decoded: up to the stop, the repetition included,
    where the loop stop cut it (what the guards judge); else its tokens."""
    decoded = getattr(result, "decoded", None)
    return list(decoded if decoded is not None else result.sequences_ids[0])


def window_as_result(window) -> "Result":
    """The drafting loop's :class:`tokenmap.decode.speculative.WindowResult` as a ``generate`` result; a stopped
    window's ``decoded`` tokens are its kept tokens and its unit again up to the stop."""
    decoded = None
    if window.loop is not None:
        decoded = list(window.tokens)
        unit = list(window.loop.unit) or [0]
        while len(decoded) < window.loop.stop:
            decoded.extend(unit)
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
    """The ``max_length`` that gives a prompt of ``prompt_length`` at least ``steps`` decoding steps (at most
    ``max_length``): a long previous text takes its share of it.

    >>> length_for(50, 4, 448), length_for(50, 200, 448), steps_of(length_for(50, 200, 448), 200)
    (100, 249, 50)
    """
    return min(max_length, max(2 * steps, prompt_length - 1 + steps))


def generate_stopping(generate, features, prompts, options: LoopOptions, timestamp_begin: int,
                      seconds: float | None = None, eot: int | None = None, **kwargs):
    """``generate(features, prompts, **kwargs)`` whose looping hypotheses are stopped and cut.

    The first call gets the steps ``options.cap_tokens + options.cap_rate * seconds`` (``seconds``: the
    window's audio; None: 30); a hypothesis that used them all is checked with the rule: cut when it
    loops, decoded again (its whole call, at twice the steps) when it does not. Returns
    ``(results, StoppedGeneration)``; rows with nothing stopped are CTranslate2's own results.
    """
    max_length = kwargs.pop("max_length", 448)
    longest = max(len(p) for p in prompts)
    steps_needed = int(options.cap_tokens + options.cap_rate * (30.0 if seconds is None else seconds))
    cap = length_for(steps_needed, longest, max_length)
    report = StoppedGeneration()
    results: list = [None] * len(prompts)
    pending = list(range(len(prompts)))
    while pending:
        final = cap >= max_length or steps_of(cap, longest) >= steps_of(max_length, longest)
        cap = max_length if final else cap
        report.calls += 1
        got = generate(features, prompts, max_length=cap, **kwargs)
        again = []
        for row in pending:
            result = got[row]
            if final:
                results[row] = result
                continue
            limit = steps_of(cap, len(prompts[row]))
            cut = _cut_result(result, limit, options, timestamp_begin, eot, report, row)
            if cut is None:
                again.append(row)
            else:
                results[row] = cut
        pending = again
        steps_needed *= 2
        cap = length_for(steps_needed, longest, max_length)
    return results, report


def _cut_result(result, limit: int, options, timestamp_begin, eot, report: StoppedGeneration, row: int):
    """``result`` with its looping hypotheses cut; None when a hypothesis used every step without looping."""
    sequences, changed, first = [], False, None
    for h, sequence in enumerate(result.sequences_ids):
        sequence = list(sequence)
        if len(sequence) < limit:  # it ended with EOT
            sequences.append(sequence)
            continue
        loop = find_loop(sequence, options, timestamp_begin, eot)
        if loop is None:
            return None
        sequences.append(cut_tokens(sequence, loop, timestamp_begin))
        changed = True
        report.loops += 1
        if h == 0:
            first = loop
            report.stopped_rows.append((row, loop, sequence))
    if not changed:
        return result
    decoded = list(result.sequences_ids[0][: first.stop]) if first is not None else None
    return Result(sequences, list(result.scores or []), getattr(result, "no_speech_prob", 0.0), first, decoded)


class StoppingDecoder:
    """A plain decoder (anything with CTranslate2's ``generate``) whose decodes stop as they start to loop.

    ``options``: the rule's (None: ``generate`` as it is); ``special``, ``text`` (token ids -> text): the
    model's; ``seconds``: the audio of the window being decoded (None: 30 s or unknown); ``stats``: a
    :class:`tokenmap.decode.speculative.DecodeStats` counting ``loops_stopped``. ``generate`` (greedy or sampled,
    one window or a batch; not beam search, which keeps several hypotheses a step, nor a decoding prefix)
    goes through :func:`generate_stopping`; :meth:`note` takes the drafting loop's result. Either way a
    stopped window's text is registered for faster-whisper's compression ratio (:func:`register_stopped`).
    Anything else is the wrapped decoder's.
    """

    def __init__(self, plain, options: LoopOptions | None, special, text, seconds: float | None = None, stats=None):
        self.plain, self.loop, self.special, self.text = plain, options, special, text
        self.seconds, self.stats = seconds, stats

    def generate(self, features, prompts, **kwargs):
        clear_stopped()
        if self.loop is None or not stoppable(prompts, self.special, kwargs):
            return self.plain.generate(features, prompts, **kwargs)
        results, report = generate_stopping(self.plain.generate, features, prompts, self.loop,
                                            self.special.timestamp_begin, self.seconds if len(prompts) == 1 else None,
                                            self.special.eot, **kwargs)
        if self.stats is not None:
            self.stats.loops_stopped += report.loops
        max_length = kwargs.get("max_length", 448)
        for row, loop, _ in report.stopped_rows:
            kept = results[row].sequences_ids[0]
            register_stopped(self.text(kept), projected_ratio(kept, loop, steps_of(max_length, len(prompts[row])),
                                                              self.text))
        return results

    def note(self, prompt, result, max_length: int = 448) -> None:
        """Register the drafting loop's ``result`` (a :class:`tokenmap.decode.speculative.WindowResult` decoded
        with ``loop=self.loop``) when it was stopped (its ``stats`` count it already)."""
        clear_stopped()
        if result.loop is not None:
            register_stopped(self.text(result.tokens),
                             projected_ratio(result.tokens, result.loop, steps_of(max_length, len(prompt)), self.text))

    def __getattr__(self, name):
        if name == "plain":  # not set yet (a copy being made): never recurse
            raise AttributeError(name)
        return getattr(self.plain, name)


def stoppable(prompts, special, kwargs) -> bool:
    """Whether :func:`generate_stopping` may run these ``generate`` arguments: one hypothesis a step (greedy
    or sampling, not beam search), no decoding prefix, no vocabulary logits asked for."""
    if kwargs.get("beam_size", 5) != 1 or kwargs.get("return_logits_vocab"):
        return False
    return all(special.prompt_length(list(p)) == len(p) for p in prompts)
