"""Model-free replay: how a drafter would do on token streams the model is known to emit.

Greedy decoding is deterministic, so a drafter can be scored on a window's recorded output without the
model: at every pass the agreeing prefix of the draft is kept plus the model's own next token, as
:func:`tokenmap.decode.speculative.decode_window` proceeds; a cost curve turns the passes into ms.

Example (a drafter that always proposes the truth, 3 tokens then EOT = 99)::

    >>> from tokenmap.decode.drafters import FixedDrafter
    >>> r = replay_window(FixedDrafter([5, 6, 7, 99]), [5, 6, 7], eot=99, with_timestamps=False,
    ...                   timestamp_begin=100)
    >>> r.passes, r.accepted, r.tokens
    (1, 4, 4)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from tokenmap.decode.cost import DEFAULT, CostModel
from tokenmap.decode.speculative import DecodeStats, window_draft


@dataclass
class ReplayStats(DecodeStats):
    """:class:`tokenmap.decode.speculative.DecodeStats` of a replay, plus its modelled decoder time in ms
    (prefill excluded) and that of plain greedy decoding of the same windows."""

    ms: float = 0.0
    greedy_ms: float = 0.0

    def as_dict(self, prefill_ms: float = 0.0, windows: int = 0) -> dict:
        d = super().as_dict()
        d["tokens_per_pass"] = self.tokens / self.passes if self.passes else 0.0
        extra = prefill_ms * windows
        d["speedup"] = (self.greedy_ms + extra) / (self.ms + extra) if self.ms else 0.0
        return d


def replay_window(drafter, truth: Sequence[int], eot: int, with_timestamps: bool, timestamp_begin: int,
                  cost: CostModel = DEFAULT, feed: int = 1, max_len: int = 64,
                  history: Sequence[int] = ()) -> ReplayStats:
    """Replay one window whose greedy output is ``truth`` (without EOT). ``feed``: tokens of the first pass
    besides the draft (the prompt after SOT); ``history``: the window's previous text."""
    target = list(truth) + [eot]
    tokens: list[int] = []
    stats = ReplayStats()
    drafter.reset(history)
    first = True
    while len(tokens) < len(target):
        draft = window_draft(drafter, tokens, with_timestamps, timestamp_begin, max_len)
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
