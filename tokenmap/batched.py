"""``tokenmap.BatchedInferencePipeline``: faster-whisper's batched pipeline, features computed batch by batch.

faster-whisper's pipeline computes and stacks the features of every speech chunk of a file before the first
batch is decoded. This subclass runs the same ``transcribe`` on the model's view for the call
(:meth:`tokenmap.WhisperModel.for_call`), whose feature extractor is a :class:`ChunkCapture`, an extractor
that records each chunk; each batch is computed from the chunks when the decoder asks for it
(:class:`LazyBatches`), with the values faster-whisper would have stacked. With a model that is not a
:class:`tokenmap.WhisperModel` it is faster-whisper's pipeline, unchanged.

Example::

    >>> import numpy as np
    >>> from faster_whisper.feature_extractor import FeatureExtractor
    >>> capture = ChunkCapture(WindowedExtractor(FeatureExtractor()))
    >>> for seconds in (3, 5, 2):
    ...     _ = capture.add(np.zeros(16000 * seconds, np.float32))
    >>> batches = LazyBatches(capture)
    >>> len(batches), batches[0:2].shape, batches[2:3].shape
    (3, (2, 80, 3000), (1, 80, 3000))
"""

from __future__ import annotations

import copy

import faster_whisper
import numpy as np
from faster_whisper.audio import pad_or_trim

from tokenmap import hooks
from tokenmap.audio import samples
from tokenmap.features import WindowedExtractor
from tokenmap.whisper import WhisperModel


class ChunkCapture(WindowedExtractor):
    """The speech chunks a batched ``transcribe`` asked features of, in order. It stands in for ``extractor``
    (a :class:`tokenmap.features.WindowedExtractor`, whose settings it takes) during the call: called on a chunk
    it records it (:meth:`add`), and computes the chunk's features when they are asked for (:meth:`features`)."""

    def __init__(self, extractor: WindowedExtractor):
        super().__init__(extractor, extractor.min_seconds)
        self.chunks: list = []
        self.n_mels = self.mel_filters.shape[0]
        self._computed: dict[int, np.ndarray] = {}  # features language detection computed already

    def __len__(self) -> int:
        return len(self.chunks)

    def __call__(self, chunk: np.ndarray, *args, **kwargs) -> np.ndarray:
        return self.add(chunk)

    def add(self, chunk: np.ndarray) -> np.ndarray:
        """Record ``chunk``; a placeholder of the features' rows (one column plus the one faster-whisper
        drops), boolean, so the pipeline's padded stack of them is a quarter of the real size."""
        self.chunks.append(chunk)
        return np.zeros((self.n_mels, 2), dtype=bool)

    def features(self, index: int) -> np.ndarray:
        """Chunk ``index``'s features as faster-whisper's pipeline takes them (without the last frame)."""
        computed = self._computed.pop(index, None)
        return computed if computed is not None else super().__call__(self.chunks[index])[..., :-1]

    def detection_features(self, segments: int) -> np.ndarray:
        """What faster-whisper's pipeline gives ``detect_language``: the chunks' features joined, then one
        frame of -1.5, as far as ``segments`` windows of detection read."""
        wanted = segments * self.nb_max_frames
        parts, frames = [], 0
        for index in range(len(self.chunks)):
            if frames >= wanted:
                break
            self._computed[index] = self.features(index)  # kept for the chunk's batch
            parts.append(self._computed[index])
            frames += parts[-1].shape[-1]
        if frames < wanted:
            parts.append(np.full((self.n_mels, 1), -1.5, dtype=np.float32))
        return np.concatenate(parts, axis=1)


class LazyBatches:
    """The stacked, padded features of a capture's chunks, computed per slice: ``batches[i:j]`` is what
    faster-whisper's pipeline would have sliced from its whole stack. A slice lets its chunks go."""

    def __init__(self, capture: ChunkCapture):
        self.capture = capture

    def __len__(self) -> int:
        return len(self.capture)

    def __getitem__(self, key: slice) -> np.ndarray:
        rows = range(*key.indices(len(self)))
        batch = np.stack([pad_or_trim(self.capture.features(i)) for i in rows])
        for i in rows:
            self.capture.chunks[i] = None
        return batch


class BatchedInferencePipeline(faster_whisper.BatchedInferencePipeline):
    """faster-whisper's ``BatchedInferencePipeline`` whose chunks' features are computed batch by batch
    (module docstring); the same arguments, segments and transcript."""

    def transcribe(self, audio, *args, **kwargs):
        audio = samples(audio)  # files decoded without faster-whisper's per-file garbage collection
        if not (isinstance(self.model, WhisperModel) and isinstance(self.model.feature_extractor, WindowedExtractor)):
            return super().transcribe(audio, *args, **kwargs)
        pipeline = copy.copy(self)  # this call's: its model is the call's view, whose extractor is the capture
        capture = ChunkCapture(self.model.feature_extractor)
        pipeline.model = self.model.for_call(capture=capture)
        pipeline.model.feature_extractor = capture
        with hooks.within(pipeline.model.session):  # tokenmap's VAD and loop stop (tokenmap.hooks)
            segments, info = faster_whisper.BatchedInferencePipeline.transcribe(pipeline, audio, *args, **kwargs)
        return hooks.each_within(pipeline.model.session, segments), info

    transcribe.__doc__ = faster_whisper.BatchedInferencePipeline.transcribe.__doc__

    def _batched_segments_generator(self, features, tokenizer, chunks_metadata, batch_size, options,
                                    log_progress):
        capture = getattr(self.model, "session", None) and self.model.session.capture
        if capture is not None and len(capture) == len(features):
            features = LazyBatches(capture)
        return super()._batched_segments_generator(features, tokenizer, chunks_metadata, batch_size, options,
                                                   log_progress)

