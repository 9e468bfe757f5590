"""Transcribe audio files with faster-whisper, one file at a time.

This is the library side of `tokenmap transcribe`: load a model once
(:func:`load_model`), then call :func:`transcribe_file` per file. Errors that
a user can cause (a missing path, a file that is not audio) raise
:class:`AudioError` with a one-line message; nothing here prints.

Example::

    >>> model = load_model("base", compute_type="int8")          # doctest: +SKIP
    >>> t = transcribe_file(model, "prompt.wav", TranscribeOptions(language="en"))  # doctest: +SKIP
    >>> t.text                                                     # doctest: +SKIP
    'Please enter the number of the mailbox.'
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from tokenmap.writers import Segment, Transcript, Word

logger = logging.getLogger("tokenmap")

SAMPLE_RATE = 16_000
#: integer PCM sample types and the float scale of each: ``(x - offset) / scale``
_PCM = {np.dtype(np.int16): (0, 32768.0), np.dtype(np.int32): (0, 2147483648.0), np.dtype(np.uint8): (128, 128.0)}


class AudioError(RuntimeError):
    """An input file cannot be read as audio."""


@dataclass(frozen=True)
class TranscribeOptions:
    """The faster-whisper ``transcribe`` options tokenmap exposes.

    ``language`` None means detect it; ``vad`` is faster-whisper's ``vad_filter``.
    """

    language: str | None = None
    task: str = "transcribe"
    beam_size: int = 1
    vad: bool = True
    word_timestamps: bool = False

    def as_kwargs(self) -> dict:
        return {
            "language": self.language,
            "task": self.task,
            "beam_size": self.beam_size,
            "vad_filter": self.vad,
            "word_timestamps": self.word_timestamps,
        }


def load_model(model: str = "base", compute_type: str = "int8", threads: int | None = None, token_map=None,
               decoder_compute_type: str = "auto", encoder: str = "auto"):
    """Load a Whisper model for CPU decoding.

    ``model`` is anything :func:`tokenmap.models.resolve_model` accepts;
    ``token_map`` (a path or a :class:`tokenmap.maps.mapfile.TokenMap`, a list of
    them, one per task, or a map set from ``tokenmap build --balance``) turns on
    token-map speculative decoding; on stock CTranslate2 (no engine fork) the
    model decodes as plain faster-whisper after one warning.
    ``decoder_compute_type`` (``auto``: an int8 encoder with a float32
    decoder) and ``encoder`` (``auto``: stock CTranslate2 in a worker when
    installed) are :func:`tokenmap.precision.build_engine`'s and apply with or
    without a map, so a map changes the speed and not the transcript. Raises ``ModelError``.
    """
    from tokenmap.engine import default_threads, drafting_off_reason
    from tokenmap.models import resolve_model

    model_dir = resolve_model(model)
    threads = threads or default_threads()
    logger.info("loading %s (%s, %d threads)", model_dir, compute_type, threads)
    if token_map is None:
        from faster_whisper import WhisperModel as Plain

        from tokenmap.precision import build_engine

        plain = Plain(str(model_dir), device="cpu", compute_type=compute_type, cpu_threads=threads)
        if drafting_off_reason() is None:  # the configuration map decoding would use
            build_engine(plain, str(model_dir), compute_type, decoder_compute_type, encoder, device="cpu",
                         cpu_threads=threads)
        return plain
    from tokenmap.whisper import WhisperModel

    return WhisperModel(
        str(model_dir), token_map=token_map, device="cpu", compute_type=compute_type, cpu_threads=threads,
        decoder_compute_type=decoder_compute_type, encoder=encoder,
    )


def load_audio(path: str | os.PathLike) -> np.ndarray:
    """Decode any audio file to mono float32 at 16 kHz, shape ``[samples]``.

    Resampling and down-mixing are PyAV's (through faster-whisper). Raises
    :class:`AudioError` for a missing path, a directory or undecodable data.
    """
    path = Path(path)
    if not path.exists():
        raise AudioError(f"{path}: no such file")
    if path.is_dir():
        raise AudioError(f"{path}: is a directory, not an audio file")
    if path.stat().st_size == 0:
        raise AudioError(f"{path}: empty file (0 bytes)")
    from faster_whisper.audio import decode_audio

    try:
        audio = decode_audio(str(path), sampling_rate=SAMPLE_RATE)
    except Exception as exc:  # PyAV raises FFmpegError subclasses, ValueError, IndexError…
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise AudioError(f"{path}: cannot decode audio ({reason})") from None
    if not np.all(np.isfinite(audio)):
        raise AudioError(f"{path}: audio contains NaN or infinite samples")
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
    tokenmap.transcriber.AudioError: audio: an array of shape (2, 8000); tokenmap needs mono samples at 16 kHz, \
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


def transcribe_file(
    model,
    path: str | os.PathLike,
    options: TranscribeOptions = TranscribeOptions(),
    progress: Callable[[float, float], None] | None = None,
) -> Transcript:
    """Transcribe one file; ``progress(done_seconds, total_seconds)`` is called per segment."""
    audio = load_audio(path)
    return transcribe_audio(model, audio, str(path), options, progress)


def transcribe_audio(model, audio: np.ndarray, name: str, options: TranscribeOptions, progress=None) -> Transcript:
    """Transcribe a decoded ``audio`` array (mono, 16 kHz, shape ``[samples]``; see :func:`audio_input`)."""
    audio = audio_input(audio, name)
    duration = len(audio) / SAMPLE_RATE
    started = time.perf_counter()
    if len(audio) == 0:
        return Transcript(name, options.language or "", 0.0, [], stats=_timing(0.0, started))
    segments_iter, info = model.transcribe(audio, **options.as_kwargs())
    segments = []
    for seg in segments_iter:
        words = tuple(Word(w.start, w.end, w.word, w.probability) for w in (seg.words or ()))
        segments.append(Segment(seg.start, seg.end, seg.text, words, seg.avg_logprob, seg.no_speech_prob))
        if progress:
            progress(min(seg.end, duration), duration)
    if progress:
        progress(duration, duration)
    stats = _timing(duration, started)
    decoder_stats = getattr(model, "last_stats", None)
    if callable(decoder_stats) and getattr(model, "drafting", True):
        stats.update(decoder_stats())
    return Transcript(name, info.language, duration, segments, info.language_probability, stats)


def _timing(duration: float, started: float) -> dict:
    wall = time.perf_counter() - started
    return {"audio_seconds": duration, "wall_seconds": wall, "rtf": wall / duration if duration else 0.0}
