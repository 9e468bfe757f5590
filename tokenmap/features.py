"""Log-mel features of a long file, window by window, in constant memory.

faster-whisper computes the log-mel spectrogram of a whole file before it decodes its first window (for an
hour of audio, several gigabytes at the peak). :class:`WindowedExtractor` returns, for audio longer than
``min_seconds``, a :class:`LogMel`: it has the array's ``shape`` and computes the frames a slice asks for,
from the audio and the file's peak level (Whisper clamps its features at 8 below the file's highest value,
so that one number is measured first, 30 s at a time). The values equal the whole-file computation's.

Example::

    >>> import numpy as np
    >>> from faster_whisper.feature_extractor import FeatureExtractor
    >>> audio = np.random.default_rng(0).normal(0, 0.1, 16000 * 75).astype(np.float32)
    >>> whole = FeatureExtractor()(audio)
    >>> lazy = WindowedExtractor(FeatureExtractor(), min_seconds=60)(audio)
    >>> lazy.shape == whole.shape, np.allclose(lazy[:, 3000:6000], whole[:, 3000:6000], atol=1e-5)
    (True, True)
    >>> np.allclose(lazy[..., 7000:][:, :500], whole[:, 7000:7500], atol=1e-5)
    True
"""

from __future__ import annotations

import numpy as np
from faster_whisper.feature_extractor import FeatureExtractor

#: frames computed at a time when the file's peak is measured (30 s)
CHUNK_FRAMES = 3000


class WindowedExtractor(FeatureExtractor):
    """``extractor`` (faster-whisper's ``FeatureExtractor``, whose settings it takes) returning a
    :class:`LogMel` for audio of ``min_seconds`` or more."""

    def __init__(self, extractor: FeatureExtractor, min_seconds: float = 60.0):
        self.__dict__.update(extractor.__dict__)
        self.min_seconds = min_seconds

    def __call__(self, waveform: np.ndarray, padding: int = 160, chunk_length=None):
        """The features of ``waveform``: an array, or a :class:`LogMel` from ``min_seconds`` of audio on."""
        if len(waveform) < self.min_seconds * self.sampling_rate:
            return FeatureExtractor.__call__(self, waveform, padding, chunk_length)
        if chunk_length is not None:
            self.n_samples = chunk_length * self.sampling_rate
            self.nb_max_frames = self.n_samples // self.hop_length
        return LogMel(self, np.asarray(waveform, dtype=np.float32), padding)


class LogMel:
    """The ``[n_mels, frames]`` log-mel spectrogram of ``waveform`` and ``padding`` zero samples, computed when
    sliced: ``lazy[:, a:b]`` and ``lazy[..., a:b]`` return arrays (a view of the same kind beyond two windows);
    any other index, or ``np.asarray``, computes what it covers."""

    def __init__(self, extractor: FeatureExtractor, waveform: np.ndarray, padding: int = 160,
                 start: int = 0, stop: int | None = None, peak: list | None = None):
        self.x = extractor
        self.audio = waveform
        self.padding = padding
        self.samples = len(waveform) + padding
        total = self.samples // extractor.hop_length  # faster-whisper drops the STFT's last frame
        self.start, self.stop = start, total if stop is None else stop
        self._peak = peak if peak is not None else []  # shared by views: the file's highest log-mel value
        self.dtype = np.dtype(np.float32)
        self.ndim = 2

    @property
    def shape(self) -> tuple[int, int]:
        return (self.x.mel_filters.shape[0], self.stop - self.start)

    def __len__(self) -> int:
        return self.shape[0]

    def _signal(self, lo: int, hi: int) -> np.ndarray:
        """Samples ``lo`` to ``hi`` of the padded signal (reflected at both ends, as the STFT pads)."""
        left, right = max(0, -lo), max(0, hi - self.samples)
        lo, hi = max(lo, 0), min(hi, self.samples)
        piece = self.audio[lo: min(hi, len(self.audio))]
        if hi > len(self.audio):
            piece = np.concatenate([piece, np.zeros(hi - max(lo, len(self.audio)), np.float32)])
        return np.pad(piece, (left, right), mode="reflect") if left or right else piece

    def _log10(self, a: int, b: int) -> np.ndarray:
        """log10 of the mel energies of frames ``a`` to ``b`` (absolute), before Whisper's scaling."""
        hop, n_fft = self.x.hop_length, self.x.n_fft
        signal = self._signal(a * hop - n_fft // 2, (b - 1) * hop + n_fft // 2)
        window = np.hanning(n_fft + 1)[:-1].astype("float32")
        stft = self.x.stft(signal, n_fft, hop, window=window, center=False, return_complex=True).astype("complex64")
        mel = self.x.mel_filters @ (np.abs(stft) ** 2)
        return np.log10(np.clip(mel, a_min=1e-10, a_max=None))

    def peak(self) -> float:
        if not self._peak:
            total = self.samples // self.x.hop_length
            self._peak.append(max(float(self._log10(a, min(a + CHUNK_FRAMES, total)).max())
                                  for a in range(0, total, CHUNK_FRAMES)))
        return self._peak[0]

    def frames(self, a: int, b: int) -> np.ndarray:
        """Frames ``a`` to ``b`` of this view as faster-whisper computes them (float32)."""
        if b <= a:
            return np.zeros((self.shape[0], 0), np.float32)
        log = self._log10(self.start + a, self.start + b)
        return ((np.maximum(log, self.peak() - 8.0) + 4.0) / 4.0).astype(np.float32)

    def __getitem__(self, key):
        columns = _column_slice(key)
        if columns is None:
            return np.asarray(self)[key]
        a, b, _ = columns.indices(self.shape[1])
        if b - a > 2 * self.x.nb_max_frames:
            return LogMel(self.x, self.audio, self.padding, self.start + a, self.start + max(a, b), self._peak)
        return self.frames(a, b)

    def __array__(self, dtype=None, copy=None):
        array = self.frames(0, self.shape[1])
        return array if dtype is None else array.astype(dtype)


def _column_slice(key) -> slice | None:
    """The column slice of ``[:, a:b]`` or ``[..., a:b]`` (step 1), else None."""
    if isinstance(key, tuple) and len(key) == 2 and (key[0] is Ellipsis or key[0] == slice(None)):
        if isinstance(key[1], slice) and key[1].step in (None, 1):
            return key[1]
    return None
