"""The build's self-test: the decoder's drafter replayed over the map's own training utterances.

:func:`self_test` counts tokens per pass and acceptance as if the model had emitted each
utterance, and the decoder speed-up the cost curve predicts from them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tokenmap.decode.cost import CostModel
from tokenmap.decode.follow import FollowDrafter
from tokenmap.decode.speculative import replay


def self_test(sm, utterances: Sequence[Sequence[int]], cost: CostModel) -> dict:
    """Replay the decoder's drafter (:class:`tokenmap.decode.follow.FollowDrafter`, no timestamps)
    over the map's own training utterances: tokens per pass, acceptance, modelled speed-up."""
    eot = sm.bos  # any id above the text ids: the utterance's end
    drafter = FollowDrafter(sm, timestamp_begin=None, eot=eot, cost=cost)
    stats = replay(drafter, utterances, eot=eot, with_timestamps=False, timestamp_begin=eot + 2, cost=cost)
    d = stats.as_dict()
    d["acceptance"] = d.pop("acceptance_rate")
    keep = ("tokens", "passes", "drafts", "drafted", "accepted", "acceptance", "tokens_per_pass", "speedup")
    return {k: round(d[k], 4) if isinstance(d[k], float) else d[k] for k in keep} | {"utterances": len(utterances)}


def sample_utterances(tok, sep: int, limit: int) -> list[list[int]]:
    """First ``limit`` utterances of the spooled stream (without BOS/SEP)."""
    tok = tok.read(0, limit * 200) if hasattr(tok, "read") else np.asarray(tok[: limit * 200])
    ends = np.flatnonzero(tok == sep)[:limit]
    out, start = [], 0
    for e in ends.tolist():
        out.append(tok[start + 1:e].tolist())
        start = e + 1
    return out
