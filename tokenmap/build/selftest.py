"""The build's self-test: drafting replayed over the map's own training utterances.

:func:`simulate` replays an n-gram map's lookups (:func:`draft_passes`), :func:`self_test`
the decoder's own drafter over a suffix map; both count tokens per pass and acceptance
as if the model had emitted each utterance.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from tokenmap.decode.cost import CostModel
from tokenmap.decode.follow import FollowDrafter
from tokenmap.decode.replay import replay
from tokenmap.maps.mapfile import TokenMap


def draft_passes(tm: TokenMap, ids: Sequence[int]):
    """Replay greedy drafting over one token sequence, as if the model emitted it.

    At each position the decoder asks ``tm.draft([BOS] + emitted)``, accepts
    the agreeing prefix and gets one token from the model; yields
    ``(draft length, draft tokens accepted)`` per decoder pass.
    """
    ctx = [TokenMap.BOS]
    i = 0
    while i < len(ids):
        d = tm.draft(ctx)
        a = 0
        while a < len(d) and i + a < len(ids) and d[a] == ids[i + a]:
            a += 1
        yield len(d), a
        step = min(a + 1, len(ids) - i)
        ctx.extend(ids[i:i + step])
        i += step


def simulate(tm: TokenMap, utterances: Sequence[Sequence[int]]) -> dict:
    """:func:`draft_passes` over many utterances; returns
    ``{tokens, passes, drafts, drafted, accepted, acceptance, tokens_per_pass}``."""
    tokens = passes = drafts = drafted = accepted = 0
    for ids in utterances:
        for n, a in draft_passes(tm, ids):
            drafts += n > 0
            drafted += n
            accepted += a
            passes += 1
        tokens += len(ids)
    return {"tokens": tokens, "passes": passes, "drafts": drafts, "drafted": drafted, "accepted": accepted,
            "acceptance": accepted / drafted if drafted else 0.0,
            "tokens_per_pass": tokens / passes if passes else 0.0}


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
