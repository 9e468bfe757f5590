"""The commit policy's view of a hypothesis: its timestamped segments and which ones earlier hypotheses agree on.

A segment is ``<|t0|> text <|t1|>`` (closed) or a trailing ``<|t0|> text`` (open); :func:`agreed_segments`
counts the leading closed segments earlier hypotheses agree on (LocalAgreement over segments).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

TS_SECONDS = 0.02  # one Whisper timestamp step


@dataclass(frozen=True)
class TokenSegment:
    """A parsed piece of a hypothesis: token range [begin, end), times in s (end None if open)."""

    begin: int
    end: int
    start: float
    stop: float | None
    text: tuple


def parse_segments(tokens: Sequence[int], ts0: int) -> list[TokenSegment]:
    """Split decoder output into segments: ``<|t0|> text <|t1|>`` (closed) or a trailing open one."""
    segments, i, n = [], 0, len(tokens)
    while i < n:
        begin, start = i, 0.0
        if tokens[i] >= ts0:
            start = (tokens[i] - ts0) * TS_SECONDS
            i += 1
        j = i
        while j < n and tokens[j] < ts0:
            j += 1
        text = tuple(tokens[i:j])
        if j < n:  # closing timestamp
            segments.append(TokenSegment(begin, j + 1, start, (tokens[j] - ts0) * TS_SECONDS, text))
            i = j + 1
        else:
            if text:
                segments.append(TokenSegment(begin, j, start, None, text))
            i = j
    return [s for s in segments if s.text]


def agreed_segments(current: Sequence[TokenSegment], previous: Sequence[Sequence[TokenSegment]]) -> int:
    """How many leading closed segments of ``current`` have the same text in every earlier hypothesis."""
    count = 0
    for i, seg in enumerate(current):
        if seg.stop is None:
            break
        if not all(i < len(p) and p[i].stop is not None and p[i].text == seg.text for p in previous):
            break
        count += 1
    return count


def shift_timestamps(tokens: Sequence[int], ts0: int, ts_end: int, steps: int) -> list[int]:
    """``tokens`` with every timestamp moved ``steps`` positions earlier (clamped to the range)."""
    return [min(ts_end, max(ts0, t - steps)) if t >= ts0 else t for t in tokens]
