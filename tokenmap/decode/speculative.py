"""Speculative greedy decoding of one Whisper window on the fork's step API.

The loop (token-map paper, section III; the draft is verified in one pass)::

    prefill the prompt up to <|startoftranscript|>      (no_speech_prob comes from here)
    feed = rest of the prompt
    repeat:
        draft  = drafter(tokens so far), cut to what the controller allows
        logits = forward_batch(state, feed + draft)        # [1, T, V]
        decide each drafted position with the logit rules; keep the longest
        agreeing prefix plus the model's own next token; truncate the decoder
        state at the first mismatch; feed = [that next token]
    until <|endoftext|> or max_length

Every decision goes through :class:`tokenmap.decode.rules.RuleSet`, the same rules ``generate(beam_size=1)``
applies, so a draft can change the speed but not the output (exactly at float32; at int8 batched logits can
differ slightly from step logits).
:func:`replay_window` runs the same loop on a window's recorded output, without the model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from tokenmap.decode.cost import DEFAULT, CostModel
from tokenmap.decode.ct2math import log_softmax
from tokenmap.decode.loops import Loop, LoopOptions, LoopRule, cut_tokens
from tokenmap.decode.rules import GreedyResult, RuleSet, logit_rows
from tokenmap.decode.special import SpecialTokens


@dataclass
class DecodeStats:
    """Counters with the token-map paper's definitions (eqs. 4-5).

    ``drafted``: draft tokens proposed; ``accepted``: draft tokens kept; ``drafts``: verify passes that
    carried a draft; ``passes``: decoder passes of any kind; ``tokens``: tokens decided (EOT included);
    ``plain_windows``: windows the gate sent to plain ``generate``; ``short_windows``: windows decoded on
    a short audio context; ``guarded``: of those, windows the guard sent back to the full context;
    ``prompt_copies``: windows that copied their prompt's previous text, decoded again without it;
    ``copies_kept``: windows the copy guard suspected whose probe found the text said again;
    ``loops_stopped``: decodes stopped as they started to repeat; ``decoder_seconds``: wall time inside
    the decoding loop.
    """

    drafted: int = 0
    accepted: int = 0
    drafts: int = 0
    passes: int = 0
    tokens: int = 0
    windows: int = 0
    fallbacks: int = 0
    plain_windows: int = 0
    short_windows: int = 0
    guarded: int = 0
    prompt_copies: int = 0
    copies_kept: int = 0
    loops_stopped: int = 0
    decoder_seconds: float = 0.0

    def add(self, other: "DecodeStats") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict:
        d = {name: getattr(self, name) for name in self.__dataclass_fields__}
        d["acceptance_rate"] = self.accepted / self.drafted if self.drafted else 0.0
        d["acceptance_length"] = self.accepted / self.drafts if self.drafts else 0.0
        d["verify_passes"] = self.passes
        d["tokens_per_second"] = self.tokens / self.decoder_seconds if self.decoder_seconds else 0.0
        return d


@dataclass
class WindowResult(GreedyResult):
    """One window decoded with drafts, as ``generate`` returns it (:class:`~tokenmap.decode.rules.GreedyResult`)."""

    stats: DecodeStats = field(default_factory=DecodeStats)
    loop: Loop | None = None  # where the decode was stopped as a loop (``tokens`` are then cut there)


def decode_window(model, encoder_output, prompt: Sequence[int], special: SpecialTokens, drafter,
                  accept: Callable | None = None, loop: LoopOptions | None = None, **generate_kwargs) -> WindowResult:
    """Greedy decoding of one window with drafts; same output as ``generate(beam_size=1)``.

    ``prompt``: the window's prompt ids as faster-whisper builds it; its previous text (before SOT) is the
    history of prompt-lookup drafters. ``accept(row, tokens, draft_token, chosen) -> bool`` (biased
    verification): at a drafted position where the greedy ``chosen`` differs, True keeps ``draft_token``
    instead; None keeps exact greedy decoding. ``loop``: stop the window once it clearly repeats
    (:class:`tokenmap.decode.loops.LoopRule`); its tokens are then cut before the repetition (``result.loop``
    says where).
    """
    started = time.perf_counter()
    win = _Window(model, RuleSet.from_generate_kwargs(special, prompt, **generate_kwargs), special, accept)
    win.watch = LoopRule(loop, special.timestamp_begin, special.eot) if loop is not None else None
    sot = win.rules.sot_index
    drafter.reset(list(prompt[1: sot]))
    state, sot_logits = model.prefill(encoder_output, list(prompt[: sot + 1]))
    win.stats.passes += 1
    sot_row = logit_rows(sot_logits)[0]
    no_speech = win.rules.no_speech_prob(sot_row) if generate_kwargs.get("return_no_speech_prob", False) else None
    feed = list(prompt[sot + 1:])
    if not feed:  # the prompt ends at SOT: its logits decide the first token
        feed = [win.decide(sot_row)]
    while not win.done():
        remaining = win.rules.max_steps - len(win.tokens) - 1
        draft = window_draft(drafter, win.tokens, win.rules.with_timestamps, special.timestamp_begin, remaining)
        feed, accepted = win.verify(state, feed, draft)
        if draft:
            win.stats.drafts += 1
            win.stats.drafted += len(draft)
            win.stats.accepted += accepted
            drafter.update(len(draft), accepted)
    score = win.rules.final_score(win.total, len(win.tokens))
    win.stats.decoder_seconds = time.perf_counter() - started
    stopped = win.watch.loop if win.watch is not None else None
    if stopped is not None:
        win.stats.loops_stopped += 1
        return WindowResult(cut_tokens(win.tokens, stopped, special.timestamp_begin), score, no_speech, False,
                            win.stats, stopped)
    return WindowResult(win.tokens, score, no_speech, win.finished, win.stats)


def window_draft(drafter, tokens: Sequence[int], with_timestamps: bool, timestamp_begin: int,
                 limit: int) -> list[int]:
    """The drafter's proposal after ``tokens``; a timestamped window's opens with ``<|0.00|>`` (the model
    must emit a timestamp first, mostly that one) and goes on with the drafter's proposal after it."""
    if limit <= 0:
        return []
    if with_timestamps and not tokens:
        return [timestamp_begin] + drafter.draft([timestamp_begin], limit - 1)
    return drafter.draft(tokens, limit)


class _Window:
    """Decisions of one window: tokens so far, summed logprob, end state."""

    def __init__(self, model, rules: RuleSet, special: SpecialTokens, accept: Callable | None):
        self.model, self.rules, self.special, self.accept = model, rules, special, accept
        self.tokens: list[int] = []
        self.total = np.float32(0.0)
        self.finished = False
        self.stats = DecodeStats(windows=1)
        self.watch: LoopRule | None = None  # the loop rule, when loops are stopped

    def done(self) -> bool:
        return self.finished or len(self.tokens) >= self.rules.max_steps or (
            self.watch is not None and self.watch.stopped)

    def decide(self, row: np.ndarray, draft: int | None = None) -> int:
        """Apply the rules to one [V] row (in place), record and return the greedy token
        (or ``draft`` when the ``accept`` predicate keeps it)."""
        token, logprob = self.rules.choose(row, self.tokens)
        if draft is not None and token != draft and self.accept and self.accept(row, self.tokens, draft, token):
            token, logprob = draft, log_softmax(row)[draft]
        return self.record(token, logprob)

    def record(self, token: int, logprob) -> int:
        """Append one decided token (EOT ends the window) and add its log-prob to the score."""
        self.stats.tokens += 1
        self.total = np.float32(self.total + logprob)
        if token == self.special.eot:
            self.finished = True
        else:
            self.tokens.append(token)
            if self.watch is not None:
                self.watch.feed(token)
        return token

    def verify(self, state, feed: list[int], draft: list[int]) -> tuple[list[int], int]:
        """Feed ``feed + draft`` in one pass and decide up to the first rejected draft token, truncating the
        state there; return (next feed, draft tokens kept)."""
        start = state.current_step + len(feed) - 1  # cache length before the token that produced the first row
        tokens_in = feed + draft
        if len(tokens_in) == 1:
            logits = self.model.forward_step(state, tokens_in[0])
        else:
            logits = self.model.forward_batch(state, tokens_in)
        self.stats.passes += 1
        rows = logit_rows(logits)[len(feed) - 1:]
        if self.accept is None:
            chosen, logprobs = self.rules.choose_rows(rows, self.tokens, draft)
            decided = (self.record(int(token), logprob) for token, logprob in zip(chosen, logprobs))
        else:  # row by row, each through ``accept``
            decided = (self.decide(row, draft[j] if j < len(draft) else None) for j, row in enumerate(rows))
        for j, token in enumerate(decided):
            hit = j < len(draft) and token == draft[j]
            if not hit or self.done():
                break
        if state.current_step > start + j + 1:
            state.truncate_to_step(start + j + 1)
        return [token], j + hit


@dataclass
class ReplayStats(DecodeStats):
    """:class:`DecodeStats` of a replay, plus its modelled decoder time in ms
    (prefill excluded) and that of plain greedy decoding of the same windows."""

    ms: float = 0.0
    greedy_ms: float = 0.0

    def as_dict(self, prefill_ms: float = 0.0, windows: int = 0) -> dict:
        d = super().as_dict()
        d["tokens_per_pass"] = self.tokens / self.passes if self.passes else 0.0
        extra = prefill_ms * windows
        d["speedup"] = (self.greedy_ms + extra) / (self.ms + extra) if self.ms else 0.0
        return d


#: the longest draft :func:`replay_window` asks for
REPLAY_DRAFT = 64


def replay_window(drafter, truth: Sequence[int], eot: int, with_timestamps: bool, timestamp_begin: int,
                  cost: CostModel = DEFAULT, feed: int = 1, history: Sequence[int] = ()) -> ReplayStats:
    """Replay one window whose greedy output is ``truth`` (without EOT), without the model: greedy decoding is
    deterministic, so :func:`decode_window`'s passes follow from the drafts; the cost curve turns them into ms.
    ``feed``: tokens of the first pass besides the draft (the prompt after SOT); ``history``: its previous text.

    >>> from tokenmap.decode.drafters import FixedDrafter   # the truth, 3 tokens then EOT = 99
    >>> r = replay_window(FixedDrafter([5, 6, 7, 99]), [5, 6, 7], eot=99, with_timestamps=False,
    ...                   timestamp_begin=100)
    >>> r.passes, r.accepted, r.tokens
    (1, 4, 4)
    """
    target = list(truth) + [eot]
    tokens: list[int] = []
    stats = ReplayStats()
    drafter.reset(history)
    first = True
    while len(tokens) < len(target):
        draft = window_draft(drafter, tokens, with_timestamps, timestamp_begin, REPLAY_DRAFT)
        rest = target[len(tokens):]
        k = 0
        while k < len(draft) and k < len(rest) and draft[k] == rest[k]:
            k += 1
        n_in = (feed if first else 1) + len(draft)
        stats.ms += cost.step_ms if n_in == 1 else cost.batch(n_in)
        stats.passes += 1
        if draft:
            stats.drafts += 1
            stats.drafted += len(draft)
            stats.accepted += k
            drafter.update(len(draft), k)
        decided = rest[: k + 1]
        stats.tokens += len(decided)
        tokens.extend(decided)
        first = False
    stats.greedy_ms = (cost.batch(feed) if feed > 1 else cost.step_ms) + cost.step_ms * (len(target) - 1)
    return stats


def replay_generated(drafter, prompt: Sequence[int], truth: Sequence[int], special,
                     history: Sequence[int] = ()) -> ReplayStats:
    """How the loop would have decoded a window that plain ``generate`` decoded to ``truth`` from
    ``prompt``, with ``drafter``, which learns from the replay as from verified drafts."""
    prompt = list(prompt)
    feed = max(1, len(prompt) - special.sot_index(prompt) - 1)
    return replay_window(drafter, truth, special.eot, prompt[-1] != special.no_timestamps,
                         special.timestamp_begin, feed=feed, history=history)


def replay(drafter, windows: Iterable[Sequence[int]], eot: int, with_timestamps: bool, timestamp_begin: int,
           cost: CostModel = DEFAULT, feed: int = 1) -> ReplayStats:
    """:func:`replay_window` over many windows, summed."""
    total = ReplayStats()
    for truth in windows:
        total.add(replay_window(drafter, truth, eot, with_timestamps, timestamp_begin, cost, feed))
    return total
