"""The library side of ``tokenmap transcribe``: :func:`load_model` once, then :func:`transcribe_file` per file.

A missing path or a file that is not audio raises :class:`AudioError` (one line); nothing here prints.

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
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from tokenmap.assembly import ModelOptions
from tokenmap.audio import SAMPLE_RATE, audio_input, load_audio
from tokenmap.batched import BatchedInferencePipeline
from tokenmap.runtime import memory
from tokenmap.runtime.engine import default_threads
from tokenmap.whisper import WhisperModel
from tokenmap.writers import Segment, Transcript, Word

logger = logging.getLogger("tokenmap")


@dataclass(frozen=True)
class TranscribeOptions:
    """The faster-whisper ``transcribe`` options tokenmap exposes: ``language`` None detects it; ``vad`` is
    ``vad_filter`` (on by default: without it Whisper may invent sentences in long pauses); ``batch_size`` above
    1 decodes the speech chunks that many at a time (:class:`tokenmap.batched.BatchedInferencePipeline`; needs
    ``vad`` on a file over 30 s); ``decoding``: further keyword arguments of ``transcribe``, passed as given."""

    language: str | None = None
    task: str = "transcribe"
    beam_size: int = 1
    vad: bool = True
    word_timestamps: bool = False
    batch_size: int = 1
    decoding: dict = field(default_factory=dict)

    def as_kwargs(self) -> dict:
        return dict(language=self.language, task=self.task, beam_size=self.beam_size, vad_filter=self.vad,
                    word_timestamps=self.word_timestamps, **self.decoding)


def load_model(model: str = "base", compute_type: str | None = None, threads: int | None = None,
               options: ModelOptions = ModelOptions(), **fields):
    """A :class:`tokenmap.WhisperModel` on the CPU as ``options`` say, with ``compute_type``, ``threads`` and any
    other of their ``fields`` given here instead (``model``: anything :func:`tokenmap.models.resolve_model`
    accepts). Raises ``ModelError``."""
    options = replace(options, compute_type=compute_type or options.compute_type,
                      threads=threads or options.threads or default_threads(), **fields)
    logger.info("loading %s (%s, %d threads)", model, options.compute_type, options.threads)
    return WhisperModel(str(model), device="cpu", compute_type=options.compute_type, cpu_threads=options.threads,
                        options=options)


#: files longer than this (seconds) give their freed decoding buffers back to the system
LONG_SECONDS = 60.0


def transcribe_file(
    model,
    path: str | os.PathLike,
    options: TranscribeOptions = TranscribeOptions(),
    progress: Callable[[float, float], None] | None = None,
    on_segment: Callable[[Segment], None] | None = None,
) -> Transcript:
    """Transcribe one file; ``on_segment(segment)`` is called with each :class:`Segment` as soon as it is
    decoded, then ``progress(done_seconds, total_seconds)``."""
    held = [load_audio(path)]  # handed over: the decoded file is freed once VAD has joined its speech
    return _transcribe_held(model, held, str(path), options, progress, on_segment)


def transcribe_audio(model, audio: np.ndarray, name: str, options: TranscribeOptions, progress=None,
                     on_segment=None) -> Transcript:
    """Transcribe a decoded ``audio`` array (mono, 16 kHz, shape ``[samples]``; see :func:`audio_input`);
    ``progress`` and ``on_segment`` as in :func:`transcribe_file`."""
    return _transcribe_held(model, [audio], name, options, progress, on_segment)


def _transcribe_held(model, held: list, name: str, options: TranscribeOptions, progress, on_segment) -> Transcript:
    """:func:`transcribe_audio` of ``held.pop()``, dropped once faster-whisper has taken what it decodes (the
    memory of a file over :data:`LONG_SECONDS` is then given back)."""
    audio = audio_input(held.pop(), name)
    duration = len(audio) / SAMPLE_RATE
    started = time.perf_counter()
    if len(audio) == 0:
        return Transcript(name, options.language or "", 0.0, [], stats=_timing(0.0, started))
    segments_iter, info = _transcribe(model, audio, options)
    del audio
    if duration > LONG_SECONDS:
        memory.release_free_memory()
    segments = []
    for seg in segments_iter:
        words = tuple(Word(w.start, w.end, w.word, w.probability) for w in (seg.words or ()))
        segments.append(Segment(seg.start, seg.end, seg.text, words, seg.avg_logprob, seg.no_speech_prob))
        if on_segment:
            on_segment(segments[-1])
        if progress:
            progress(min(seg.end, duration), duration)
    if progress:
        progress(duration, duration)
    stats = _timing(duration, started)
    decoder_stats = getattr(model, "last_stats", None)
    asked = getattr(model, "token_map", None) is not None or getattr(model, "recall", None) is not None \
        or getattr(getattr(model, "audio_context", None), "mode", "full") != "full"  # plain greedy: no counters
    if callable(decoder_stats) and getattr(model, "drafting", True) and asked:
        stats.update(decoder_stats())
    return Transcript(name, info.language, duration, segments, info.language_probability, stats)


def _transcribe(model, audio: np.ndarray, options: TranscribeOptions):
    """``(segments, info)`` of ``audio``: window after window, or in batches (``options.batch_size``)."""
    if options.batch_size <= 1:
        return model.transcribe(audio, **options.as_kwargs())
    if options.vad is False and len(audio) > 30 * SAMPLE_RATE:
        raise ValueError("--batch-size needs VAD on a file over 30 s (it batches the speech chunks VAD finds)")
    pipeline = BatchedInferencePipeline(model=model)  # faster-whisper's, features batch by batch
    kwargs = options.as_kwargs()
    if kwargs.get("clip_timestamps"):  # spans past the end would make faster-whisper count negative silence
        duration = len(audio) / SAMPLE_RATE
        kwargs["clip_timestamps"] = [{"start": c["start"], "end": min(c["end"], duration)}
                                     for c in kwargs["clip_timestamps"] if c["start"] < duration]
    return pipeline.transcribe(audio, batch_size=options.batch_size, **kwargs)


def _timing(duration: float, started: float) -> dict:
    wall = time.perf_counter() - started
    return {"audio_seconds": duration, "wall_seconds": wall, "rtf": wall / duration if duration else 0.0}
