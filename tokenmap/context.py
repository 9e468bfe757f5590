"""The audio context: how much of a window the encoder sees, its audio plus a margin instead of 30 s.

Whisper's encoder always sees 30 s: a 2 s prompt is encoded with 28 s of silence after it, and on a CPU
that encoder is most of a short file's time. CTranslate2's encoder accepts fewer frames; with too little
context the model repeats itself, runs past the audio, or never ends. :class:`AudioContext` says how many
mel frames to encode for a window holding ``seconds`` of audio (``None``: the full window);
:class:`tokenmap.windows.WindowEncoder` encodes by it, and :class:`tokenmap.decode.guarding.Guard` sends a
window whose short-context output looks broken back to the full context. A window the guard accepts may
still differ from the full-context transcript by a word: ``auto`` trades that for speed.

Example::

    >>> ctx = AudioContext("auto", margin_s=3.0, min_s=5.0)
    >>> ctx.frames(1.2), ctx.frames(4.51), ctx.frames(28.0), AudioContext().frames(1.2)
    (500, 752, None, None)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: mel frames of a full window (30 s at 10 ms)
WINDOW_FRAMES = 3000
MODES = ("full", "auto")


@dataclass(frozen=True)
class AudioContext:
    """How much of a window the encoder sees: ``full`` (30 s) or ``auto`` (the audio, then
    ``margin_s`` seconds of what follows, at least ``min_s`` in all; the full window when that
    would exceed ``max_s`` or 30 s)."""

    mode: str = "full"
    margin_s: float = 4.0
    min_s: float = 5.0
    max_s: float = 30.0

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


def as_audio_context(value) -> AudioContext:
    """An :class:`AudioContext` from ``"full"``, ``"auto"`` or an :class:`AudioContext`.

    >>> as_audio_context("auto").mode, as_audio_context(None).mode
    ('auto', 'full')
    """
    return value if isinstance(value, AudioContext) else AudioContext(value or "full")


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
