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

from .writers import Segment, Transcript, Word

logger = logging.getLogger("tokenmap")

SAMPLE_RATE = 16_000


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
    ``token_map`` (a path or a :class:`tokenmap.mapfile.TokenMap`, a list of
    them, one per task, or a map set from ``tokenmap build --balance``) turns on
    token-map speculative decoding; on stock CTranslate2 (no engine fork) the
    model decodes as plain faster-whisper after one warning.
    ``decoder_compute_type`` (``auto``: an int8 encoder with a float32
    decoder) and ``encoder`` (``auto``: stock CTranslate2 in a worker when
    installed) are :func:`tokenmap.precision.build_engine`'s and apply with or
    without a map, so a map changes the speed and not the transcript. Raises ``ModelError``.
    """
    from .engine import default_threads, drafting_off_reason
    from .models import resolve_model

    model_dir = resolve_model(model)
    threads = threads or default_threads()
    logger.info("loading %s (%s, %d threads)", model_dir, compute_type, threads)
    if token_map is None:
        from faster_whisper import WhisperModel as Plain

        from .precision import build_engine

        plain = Plain(str(model_dir), device="cpu", compute_type=compute_type, cpu_threads=threads)
        if drafting_off_reason() is None:  # the configuration map decoding would use
            build_engine(plain, str(model_dir), compute_type, decoder_compute_type, encoder, device="cpu",
                         cpu_threads=threads)
        return plain
    from .whisper import WhisperModel

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
    """Transcribe a decoded ``audio`` array (mono float32, 16 kHz, shape ``[samples]``)."""
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
