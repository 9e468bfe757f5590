"""Audio in: any file FFmpeg reads, or an array, as the mono float32 16 kHz samples Whisper needs.

Errors a user can cause (a missing path, a file that is not audio, an array
faster-whisper would misread) raise :class:`AudioError` with a one-line message.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

import numpy as np

logger = logging.getLogger("tokenmap")

SAMPLE_RATE = 16_000  # Whisper's input rate, in samples per second
#: integer PCM sample types and the float scale of each: ``(x - offset) / scale``
_PCM = {np.dtype(np.int16): (0, 32768.0), np.dtype(np.int32): (0, 2147483648.0), np.dtype(np.uint8): (128, 128.0)}


class AudioError(RuntimeError):
    """An input file cannot be read as audio."""


def load_audio(path: str | os.PathLike) -> np.ndarray:
    """Decode any audio file to mono float32 at 16 kHz, shape ``[samples]`` (PyAV resamples and down-mixes,
    through faster-whisper); :class:`AudioError` for a missing path, a directory or undecodable data."""
    path = Path(path)
    if not path.exists():
        raise AudioError(f"{path}: no such file")
    if path.is_dir():
        raise AudioError(f"{path}: is a directory, not an audio file")
    if path.stat().st_size == 0:
        raise AudioError(f"{path}: empty file (0 bytes)")
    try:
        audio = decode_pcm(str(path))
    except Exception as exc:  # PyAV raises FFmpegError subclasses, ValueError, IndexError…
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise AudioError(f"{path}: cannot decode audio ({reason})") from None
    if not np.all(np.isfinite(audio)):
        raise AudioError(f"{path}: audio contains NaN or infinite samples")
    return audio


@functools.cache
def _resampler_cycles() -> bool:
    """True for PyAV releases before 18, whose resampler graphs sit in reference cycles that only a
    full garbage collection frees (docs/ENGINE.md, "Audio decoding")."""
    import av

    try:
        return int(str(av.__version__).split(".")[0]) < 18
    except ValueError:
        return True


def decode_pcm(path, sampling_rate: int = SAMPLE_RATE) -> np.ndarray:
    """faster-whisper's ``decode_audio`` with the same samples, in less memory and time: each resampled
    piece is scaled straight into one float32 array sized from the container's duration (grown if that
    was short), instead of a growing 16-bit buffer converted in two more copies; and the full garbage
    collection after every file only with PyAV releases that need it (:func:`_resampler_cycles`).
    ``path``: a path or a binary file object.

    >>> from faster_whisper.audio import decode_audio
    >>> path = "tests/data/en-agent-pass.flac"
    >>> bool(np.array_equal(decode_pcm(path), decode_audio(path)))
    True
    """
    import gc

    import av
    from faster_whisper.audio import _group_frames, _ignore_invalid_frames, _resample_frames

    resampler = av.audio.resampler.AudioResampler(format="s16", layout="mono", rate=sampling_rate)
    with av.open(path, mode="r", metadata_errors="ignore") as container:
        seconds = container.duration / av.time_base if container.duration else 0.0
        audio = np.empty(int(seconds * sampling_rate) + sampling_rate, dtype=np.float32)
        at = 0
        # faster-whisper's own frame pipeline (its decode_audio's), so the samples are the same
        frames = _resample_frames(_group_frames(_ignore_invalid_frames(container.decode(audio=0)), 500000), resampler)
        for piece in frames:
            samples = piece.to_ndarray().reshape(-1)
            if at + len(samples) > len(audio):
                audio = np.resize(audio, max(2 * len(audio), at + len(samples)))
            np.multiply(samples, np.float32(1 / 32768.0), out=audio[at: at + len(samples)], casting="unsafe")
            at += len(samples)
    del resampler
    if _resampler_cycles():
        gc.collect()  # as faster-whisper does: older PyAV frees its resampler graphs only then
    return audio[:at]


def samples(audio):
    """``audio`` as samples for faster-whisper's ``transcribe``: a path or a binary file object decoded by
    :func:`decode_pcm` (faster-whisper's samples, without its per-file garbage collection), an array
    through :func:`audio_input`."""
    if isinstance(audio, np.ndarray):
        return audio_input(audio)
    if isinstance(audio, (str, os.PathLike)) or hasattr(audio, "read"):
        return decode_pcm(audio if hasattr(audio, "read") else os.fspath(audio))
    return audio


def audio_input(audio, name: str = "audio"):
    """``audio`` as faster-whisper's ``transcribe`` needs it: arrays it would misread are converted or refused.

    A path or a file object is returned unchanged. An array must hold mono
    samples at 16 kHz, shape ``[samples]``: a float array becomes float32;
    integer PCM (int16, int32, uint8, as in WAV files) is scaled to [-1, 1]
    (faster-whisper would read its raw values as huge samples, i.e. noise).
    Raises :class:`AudioError` for several channels (faster-whisper would
    take a 2-D array for a batch of spectrograms and try to allocate gigabytes),
    other sample types, or NaN and infinite samples.

    >>> audio_input(np.array([0, 16384, -32768], dtype=np.int16))
    array([ 0. ,  0.5, -1. ], dtype=float32)
    >>> audio_input(np.zeros((2, 8000), dtype=np.float32))
    Traceback (most recent call last):
    tokenmap.audio.AudioError: audio: an array of shape (2, 8000); tokenmap needs mono samples at 16 kHz, \
shape [samples] (mix the channels down first, e.g. audio.mean(axis=0))
    """
    if not isinstance(audio, np.ndarray):
        return audio
    if audio.ndim != 1:
        raise AudioError(f"{name}: an array of shape {audio.shape}; tokenmap needs mono samples at 16 kHz, shape "
                         "[samples] (mix the channels down first, e.g. audio.mean(axis=0))")
    if audio.dtype in _PCM:
        offset, scale = _PCM[audio.dtype]
        logger.info("%s: %s PCM samples scaled to float32 in [-1, 1]", name, audio.dtype)
        return ((audio.astype(np.float32) - offset) / scale).astype(np.float32)
    if audio.dtype.kind != "f":
        raise AudioError(f"{name}: samples of type {audio.dtype}; pass float32 in [-1, 1] (or int16/int32 PCM)")
    audio = audio.astype(np.float32, copy=False)
    if not np.isfinite(audio).all():
        raise AudioError(f"{name}: audio contains NaN or infinite samples")
    return audio
