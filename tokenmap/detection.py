"""Language detection on the window that is transcribed next, so that window is encoded once.

Without a ``language``, faster-whisper's ``transcribe`` detects it first: it encodes the first 30 s
of the features, asks the decoder for the language token, and then encodes the first window again
to transcribe it. The two inputs are the same frames, except that the detection window of a file
shorter than 30 s also holds the features' last frame, which covers the 160 zero samples faster-whisper
appends (the transcribed window stops before it and is padded with zeros instead). For longer files
the two windows are already equal.

Inside ``transcribe``, :class:`FirstWindowDetection` detects on the first window as it will be
transcribed and keeps that encoder output; the next ``encode`` of the same ``transcribe`` call, when
its features are equal (the first window), gets that output instead of a second encoder pass.
Nothing is kept beyond that one ``encode``: a file transcribed again is encoded again.

The dropped frame moves the language probabilities a little (by 0.01 at the median and at most 0.15
over 435 files in five sets of eight languages, ``research/first_window_detection.py``), enough to
flip the top language where it is a near-tie. So the first window's answer is taken only when its top
language has at least :data:`CONFIDENT` probability (another language could then win faster-whisper's
detection only if the frame moved the probabilities by more than 0.3); below that, faster-whisper's
own detection runs on its own window, at its usual cost. Either way the language is faster-whisper's
and the transcript the same; a confident one-window file costs one encoder pass instead of two, and
a long file always does (its two windows are equal).

Example::

    >>> import numpy as np
    >>> feats = np.zeros((80, 251), dtype=np.float32)   # 2.5 s of audio: 250 frames, then the padding frame
    >>> first_window(feats).shape, first_window(np.zeros((80, 4500), np.float32)).shape
    ((80, 250), (80, 4500))
"""

from __future__ import annotations

import contextlib
import inspect
import threading

import faster_whisper
import numpy as np

from tokenmap.context import WINDOW_FRAMES
from tokenmap.features import active_capture

#: the top language's probability on the first window above which it is taken as the detection's
CONFIDENT = 0.8


def first_window(features):
    """``features`` without their last frame when they fit one window with it (faster-whisper's padding
    frame, which the first transcribed window leaves out); longer features unchanged."""
    return features[..., :-1] if 1 < features.shape[-1] <= WINDOW_FRAMES + 1 else features


class FirstWindowDetection:
    """Mixin for a ``faster_whisper.WhisperModel`` subclass (before it in the bases): inside
    :meth:`detecting_for_transcribe`, ``detect_language(features=...)`` detects on :func:`first_window`
    of them (kept when confident, else faster-whisper's window decides) and the next ``encode`` of equal
    features reuses the first window's encoder output. Outside it (``detect_language`` called
    directly), both are faster-whisper's, unchanged; in :class:`tokenmap.batched.BatchedInferencePipeline`,
    ``detect_language`` reads the chunks' real features (that pipeline hands it placeholders).
    ``shared_encodes`` counts the encoder passes saved."""

    shared_encodes = 0

    @property
    def _detect_local(self) -> threading.local:
        """This model's per-thread state: ``active``, ``detecting``, ``kept`` (features, encoder output)."""
        local = self.__dict__.get("_detection_state")
        if local is None:
            local = self.__dict__.setdefault("_detection_state", threading.local())
        return local

    @contextlib.contextmanager
    def detecting_for_transcribe(self):
        """The block in which ``transcribe`` detects the language (this thread only)."""
        local = self._detect_local
        local.active, local.kept = True, None
        try:
            yield
        finally:
            local.active = False

    def detect_language(self, audio=None, features=None, *args, **kwargs):
        capture = active_capture()
        if capture is not None and capture.extractor is self.feature_extractor and audio is None \
                and features is not None:  # the batched pipeline's chunks, joined as it joins them
            segments = kwargs.get("language_detection_segments", 1)
            return super().detect_language(None, capture.detection_features(segments), *args, **kwargs)
        local = self._detect_local
        if audio is not None or features is None or not getattr(local, "active", False):
            return super().detect_language(audio, features, *args, **kwargs)
        window = first_window(features)
        local.detecting = True
        try:
            result = super().detect_language(audio, window, *args, **kwargs)
        finally:
            local.detecting = False
        if window is features or result[1] >= CONFIDENT:
            return result
        kept = local.kept  # a near-tie: faster-whisper's own window decides; the first window stays kept
        result = super().detect_language(audio, features, *args, **kwargs)
        local.kept = kept
        return result

    detect_language.__signature__ = inspect.signature(faster_whisper.WhisperModel.detect_language)
    detect_language.__doc__ = faster_whisper.WhisperModel.detect_language.__doc__

    def encode(self, features):
        local = self._detect_local
        if getattr(local, "detecting", False):
            output = super().encode(features)
            local.kept = (np.array(features, dtype=np.float32, copy=True), output)
            return output
        kept, local.kept = getattr(local, "kept", None), None  # offered to the next encode only
        if kept is not None and np.array_equal(np.asarray(features, dtype=np.float32), kept[0]):
            self.shared_encodes += 1
            return kept[1]
        return super().encode(features)

    encode.__doc__ = faster_whisper.WhisperModel.encode.__doc__
