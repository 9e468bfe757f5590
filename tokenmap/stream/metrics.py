"""Streaming metrics of the self-speculative biased decoding paper on token ids: flicker, draft acceptance, latency.

Normalized erasure (paper eqs. 3-4) measures flicker: tokens the display takes back, per token of the
final text::

    E(i) = |Y^{i-1}| - |LCP(Y^{i-1}, Y^i)|            NE = sum_i E(i) / |Y^N|

    >>> normalized_erasure([[1, 2, 3], [1, 2, 4, 5], [1, 2, 4, 5, 6]])   # E(2) = 3 - 2 (3 erased), E(3) = 0: 1/5
    0.2

Draft acceptance (paper Table 2): the first ``k`` tokens of the draft (the previous hypothesis) survive
verification. A/D = sum k / sum |draft|, A/O = sum k / sum |output|::

    draft a b c d, new output a b c x y  ->  k = 3, A/D = 3/4, A/O = 3/5

Latency: for each committed segment, from the end of its speech (its closing timestamp) to the moment the
commit is known (the end of the audio the update saw plus the update's compute time).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from tokenmap.decode.drafters import lcp


def erasures(displays: Sequence[Sequence[int]]) -> list[int]:
    """E(i) for i = 1..N-1 (eq. 3): tokens of display i-1 that display i takes back."""
    return [len(prev) - lcp(prev, cur) for prev, cur in zip(displays, displays[1:])]


def normalized_erasure(displays: Sequence[Sequence[int]]) -> float:
    """NE (eq. 4): total erasure over the length of the last display (0 for an empty one)."""
    return sum(erasures(displays)) / len(displays[-1]) if displays and displays[-1] else 0.0


def mask_display(committed: Sequence[int], tentative: Sequence[int], k: int) -> list[int]:
    """Display-only mask-k: committed text plus the tentative tail without its last ``k`` tokens."""
    shown = list(tentative[: max(0, len(tentative) - k)]) if k > 0 else list(tentative)
    return list(committed) + shown


@dataclass(frozen=True)
class UpdateRecord:
    """What one update did; times in seconds. ``audio_end``: absolute audio time the buffer reached;
    ``draft``/``accepted``: previous-hypothesis draft length and its accepted prefix (paper's m and k);
    ``output``: tokens decoded (timestamps included, EOT excluded); ``committed``/``tentative``: text token
    ids after the update; ``scratch_decode``, ``scratch_same``, ``scratch_encode``: the decode from scratch on
    the buffer encoded as 30 s (None when not measured), whether it gave the same tokens, that encode's time;
    ``short``: encoded on a short audio context; ``guarded``: the guard sent it back to 30 s."""

    index: int
    audio_end: float
    buffer_seconds: float
    encode_seconds: float
    decode_seconds: float
    draft: int
    accepted: int
    output: int
    committed: tuple
    tentative: tuple
    engine_drafted: int = 0
    engine_accepted: int = 0
    scratch_decode: float | None = None
    scratch_same: bool | None = None
    scratch_encode: float | None = None
    short: bool = False
    guarded: bool = False
    commit_latencies: tuple = ()


@dataclass
class StreamMetrics:
    """Per-stream aggregates; :meth:`summary` gives the numbers the CLI and the benchmark print."""

    updates: list = field(default_factory=list)

    def displays(self, mask_k: int = 0) -> list[list[int]]:
        """The displayed token sequence after every update (the last one unmasked: the stream ended)."""
        return [mask_display(u.committed, u.tentative, mask_k if i < len(self.updates) - 1 else 0)
                for i, u in enumerate(self.updates)]

    def ne(self, mask_k: int = 0) -> float:
        return normalized_erasure(self.displays(mask_k))

    def summary(self, mask_k: int = 0) -> dict:
        u = self.updates
        n = len(u)
        drafted, accepted, output = (sum(getattr(r, a) for r in u) for a in ("draft", "accepted", "output"))
        decode = sum(r.decode_seconds for r in u)
        encode = sum(r.encode_seconds for r in u)
        timed = [r for r in u if r.scratch_decode is not None]
        scratch = sum(r.scratch_decode for r in timed)
        scratch_encode = sum(r.scratch_encode or 0.0 for r in timed)
        own = sum(r.encode_seconds + r.decode_seconds for r in timed)
        spec_timed = sum(r.decode_seconds for r in timed)
        lat = [x for r in u for x in r.commit_latencies]
        e_drafted = sum(r.engine_drafted for r in u)
        return {
            "updates": n,
            "decode_ms_per_update": 1000 * decode / n if n else 0.0,
            "encode_ms_per_update": 1000 * encode / n if n else 0.0,
            "scratch_ms_per_update": 1000 * scratch / len(timed) if timed else None,
            "decode_cost_vs_scratch": spec_timed / scratch if scratch else None,
            "speedup_vs_scratch": scratch / spec_timed if spec_timed else None,
            "end_to_end_cost_vs_scratch": ((encode + spec_timed) / (encode + scratch)) if scratch else None,
            "scratch_identical": (sum(bool(r.scratch_same) for r in timed) / len(timed)) if timed else None,
            "update_cost_vs_30s": own / (scratch_encode + scratch) if timed and scratch_encode + scratch else None,
            "compute_rtf": (encode + decode) / u[-1].audio_end if u and u[-1].audio_end else None,
            "short_updates": sum(r.short for r in u),
            "guarded_updates": sum(r.guarded for r in u),
            "ne": self.ne(0),
            "ne_masked": self.ne(mask_k),
            "mask_k": mask_k,
            "a_d": accepted / drafted if drafted else 0.0,
            "a_o": accepted / output if output else 0.0,
            "engine_acceptance": (sum(r.engine_accepted for r in u) / e_drafted) if e_drafted else 0.0,
            "latency_mean": sum(lat) / len(lat) if lat else None,
            "latency_max": max(lat) if lat else None,
            "max_buffer_seconds": max((r.buffer_seconds for r in u), default=0.0),
        }
