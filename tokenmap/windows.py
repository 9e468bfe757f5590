"""One place where a window is encoded: the audio context, the first window's reuse, short and full outputs.

:class:`WindowEncoder` encodes a window's log-mel features on its audio context (:class:`tokenmap.context.AudioContext`)
into an :class:`EncodedWindow`, whose :meth:`EncodedWindow.full` the guard (:mod:`tokenmap.decode.guarding`) and the
stream ask for when a short decode is rejected. A ``transcribe`` call's state is its :class:`Session`.

**The first window's reuse.** Without a ``language``, faster-whisper encodes the first 30 s to detect it,
then the first window again to transcribe it: the same frames, except that the detection window of a file
under 30 s holds one more (faster-whisper's padding). ``tokenmap.WhisperModel`` encodes :func:`first_window`
to detect the language and leaves it as its session's ``first``, which the call's next encode, its first
window's, takes. The dropped frame moves the language probabilities a little, so the first window's answer
is taken only when its top language has at least :data:`CONFIDENT` probability.

Example::

    >>> first_window(np.zeros((80, 251), np.float32)).shape, first_window(np.zeros((80, 4500))).shape
    ((80, 250), (80, 4500))
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tokenmap.context import WINDOW_FRAMES, AudioContext, content_seconds
from tokenmap.decode.speculative import DecodeStats
from tokenmap.encoders import Encoder

#: the top language's probability on the first window above which it is taken as the detection's
CONFIDENT = 0.8


def first_window(features):
    """``features`` without their last frame when they fit one window with it (faster-whisper's padding
    frame, which the first transcribed window leaves out); longer features unchanged."""
    return features[..., :-1] if 1 < features.shape[-1] <= WINDOW_FRAMES + 1 else features


@dataclass
class Session:
    """What one ``transcribe`` call carries from window to window: its audio ``context``, ``stats``, the batched
    pipeline's ``capture`` of speech chunks (or None), whether its first window is the one its language is
    detected on (``shares_first``; the model's own session is no call's), that window once encoded (``first``,
    for the call's next encode), and the projected compression ratios of its last ``generate``'s stopped
    decodes, by text (``ratios``)."""

    context: AudioContext = field(default_factory=AudioContext)
    stats: DecodeStats = field(default_factory=DecodeStats)
    capture: object = None
    shares_first: bool = False
    first: object = None
    ratios: dict = field(default_factory=dict)


class EncodedWindow:
    """A window's (or batch's) encoder ``output`` (an :class:`~tokenmap.encoders.base.Output`: the view the
    decoder reads and the engine's handle on its copy) and what decoding it needs besides: the ``seconds`` of
    audio it holds, ``mel`` (its features, ``[batch, n_mels, 3000]``, or None), whether it is ``short``
    (encoded on fewer frames), its ``session`` and the ``encoder`` that encodes its full context."""

    def __init__(self, output, seconds: float | None = None, mel=None, short: bool = False,
                 session: Session | None = None, encoder: Encoder | None = None):
        self.output, self.seconds, self.mel, self.short = output, seconds, mel, short
        self.session, self.encoder = session, encoder
        self._full = None

    @property
    def sent_back(self) -> bool:
        """Whether the guard sent this short window back to its full context already."""
        return self._full is not None

    def full(self, rows=None):
        """The :class:`~tokenmap.encoders.base.Output` of the whole 30 s window, encoded once (``short`` windows
        only); or of the batch ``rows`` given, encoded for that call."""
        if not self.short:
            return self.output
        if rows is not None:
            return self.encoder.encode_held(_storage(self.mel[rows]))
        if self._full is None:
            self._full = self.encoder.encode_held(_storage(self.mel))
        return self._full


class WindowEncoder:
    """Encodes windows on ``encoder`` (module docstring); ``shared`` counts the encoder passes the first
    window's reuse saved."""

    def __init__(self, encoder: Encoder):
        self.encoder = encoder
        self.shared = 0

    def encode(self, features, session: Session, seconds: float | None = None) -> EncodedWindow:
        """The :class:`EncodedWindow` of ``features`` (``[n_mels, frames]`` or ``[batch, n_mels, frames]``) in
        ``session``: on its audio context, or its ``first`` window, encoded to detect its language (module
        docstring). ``seconds``: the audio it holds (default: up to its last non-zero frame)."""
        first, session.first = session.first, None
        if first is not None:
            self.shared += 1
            return first
        return self._encode(np.asarray(features, dtype=np.float32), session, seconds)

    def _encode(self, array: np.ndarray, session: Session, seconds: float | None) -> EncodedWindow:
        mel = array if array.ndim == 3 else array[None]
        seconds = content_seconds(mel) if seconds is None else seconds
        frames = session.context.frames(seconds) if mel.shape[-1] == WINDOW_FRAMES else None
        output = self.encoder.encode_held(_storage(mel if frames is None else mel[..., :frames]))
        return EncodedWindow(output, seconds, mel, frames is not None, session, self.encoder)


def _storage(array: np.ndarray):
    import ctranslate2  # the engine, loaded by the model that encodes; not on ``import tokenmap``

    return ctranslate2.StorageView.from_array(np.ascontiguousarray(array, dtype=np.float32))
