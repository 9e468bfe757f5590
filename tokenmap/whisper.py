"""``tokenmap.WhisperModel``: faster-whisper's model with token-map drafting.

A drop-in subclass: ``transcribe()`` keeps VAD, segment and word timestamps,
long-form audio with ``condition_on_previous_text`` and language detection,
because faster-whisper itself runs unchanged. Only the engine object it calls
(``self.model``) is wrapped: greedy ``generate`` calls are decoded
speculatively, everything else (beam search, sampling temperatures of the
fallback, repetition penalties, ``encode``, ``detect_language``, ``align``)
goes to CTranslate2 as before, and the first call of each such kind logs
which option kept it off the map.

Speculative verification reproduces greedy decoding: the model checks one
drafted path and keeps the prefix its own argmax agrees with. With an int8
``compute_type`` the decoder is a float32 copy of the model by default, whose
batched logits equal its step logits, and the encoder may be stock
CTranslate2 in a worker process (:mod:`tokenmap.runtime.precision`). Beam search
keeps several hypotheses and has no single path to verify, so
``transcribe()`` here defaults to ``beam_size=1`` (faster-whisper's default
is 5); pass ``beam_size`` to choose.

Without the engine fork (stock CTranslate2, e.g. on macOS, Windows or Linux
on ARM) the model is plain faster-whisper with that same greedy default, and
one warning says why drafting is off.

Example::

    >>> from tokenmap import WhisperModel
    >>> model = WhisperModel("/path/to/ct2-model", token_map="maint.tmap",
    ...                      compute_type="int8", cpu_threads=2)          # doctest: +SKIP
    >>> segments, info = model.transcribe("report.wav", language="en")   # doctest: +SKIP
    >>> model.last_stats()["acceptance_rate"]                              # doctest: +SKIP
    0.83
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from dataclasses import dataclass

import faster_whisper
import numpy as np

from tokenmap.runtime import memory
from tokenmap.audio import audio_input
from tokenmap.context import WINDOW_FRAMES, AudioContext, Guard
from tokenmap.decode.control import ControllerSet
from tokenmap.decode.drafters import SessionCache, default_drafter
from tokenmap.decode.rules import SpecialTokens, supports_fast_path
from tokenmap.decode.speculative import DecodeStats, decode_window
from tokenmap.runtime.engine import default_threads, open_engine
from tokenmap.models import resolve_model
from tokenmap.recall import load_recall
from tokenmap.runtime.threads import blas_single_thread

logger = logging.getLogger("tokenmap")


@dataclass(frozen=True)
class GenerationResult:
    """The fields of ``ctranslate2.models.WhisperGenerationResult`` faster-whisper reads."""

    sequences_ids: list
    scores: list
    no_speech_prob: float


class SpeculativeEngine:
    """Wraps a ``ctranslate2.models.Whisper``; greedy ``generate`` goes speculative.

    ``make_drafter(controllers, seconds, audio=encoder_output, mel=features)`` builds a fresh drafter per
    window (drafters hold per-window state, so concurrent calls never share one). Statistics are
    kept per thread (:meth:`take_stats`), and so are the draft controllers, one
    set for each object ``session()`` returns (the token map in use: what one map
    taught them says nothing of another).
    """

    def __init__(self, engine, special: SpecialTokens, make_drafter, cost=None, adaptive: bool = True,
                 session=None, text=None):
        self._engine = engine
        self.special = special
        self.make_drafter = make_drafter
        self.cost = cost
        self.adaptive = adaptive and cost is not None
        self.session = session or (lambda: None)
        self.recorder = None  # a RecallIndex that every decoded window is added to (`tokenmap recall`)
        self.guard = Guard()  # judges windows decoded on a short audio context
        self.text = text or (lambda ids: "")  # token ids -> text, for the guard's compression ratio
        self._local = threading.local()
        self._bypass_logged: set[str] = set()
        self._bypass_lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def note_window(self, seconds: float, mel=None, short=None) -> None:
        """The audio length and log-mel features (all 30 s) of the window this thread encoded last, for the
        next ``generate``; ``short``: its encoder output when it was encoded on a short audio context."""
        self._local.seconds = seconds
        self._local.mel = mel
        self._local.short = short
        self._local.full = None  # the full-context encoder output, once the guard asked for it

    def _thread_stats(self) -> DecodeStats:
        if not hasattr(self._local, "stats"):
            self._local.stats = DecodeStats()
        return self._local.stats

    def controllers(self) -> ControllerSet | None:
        """This thread's controllers for the current session (None when not adaptive)."""
        if not self.adaptive:
            return None
        sessions = self._local.__dict__.setdefault("sessions", {})
        key = self.session()
        entry = sessions.get(id(key))
        if entry is None or entry[0] is not key:  # the key is kept, so its id is not reused
            entry = sessions[id(key)] = (key, ControllerSet(self.cost))
        return entry[1]

    def current_stats(self) -> DecodeStats:
        """This thread's statistics since the last :meth:`take_stats` (not reset)."""
        return self._thread_stats()

    def take_stats(self) -> DecodeStats:
        """This thread's statistics since the last call; resets them."""
        stats = self._thread_stats()
        self._local.stats = DecodeStats()
        return stats

    def generate(self, features, prompts, **kwargs):
        short = getattr(self._local, "short", None)
        if short is not None and features is short:
            features, results = self._guarded(features, prompts, kwargs)
        else:
            results = self._generate(features, prompts, **kwargs)
        if self.recorder is not None and len(prompts) == 1:
            frames = np.asarray(features)
            self.recorder.add_window(frames[0] if frames.ndim == 3 else frames, results[0].sequences_ids[0],
                                     self.special.timestamp_begin, mel=getattr(self._local, "mel", None))
        return results

    def _guarded(self, short, prompts, kwargs):
        """``(encoder output, results)`` of a window encoded on a short context: the short decode when
        the guard accepts it, else the full context's (kept for the window's later calls)."""
        if self._local.full is None:
            results = self._generate(short, prompts, **kwargs)
            why = self._rejected(results, prompts, kwargs)
            stats = self._thread_stats()
            stats.short_windows += 1
            if why is None:
                return short, results
            stats.guarded += 1
            logger.debug("short audio context rejected (%s): decoding the window with 30 s", why)
            import ctranslate2

            mel = np.ascontiguousarray(np.asarray(self._local.mel, dtype=np.float32).reshape(1, -1, WINDOW_FRAMES))
            self._local.full = self._engine.encode(ctranslate2.StorageView.from_array(mel))
        return self._local.full, self._generate(self._local.full, prompts, **kwargs)

    def _rejected(self, results, prompts, kwargs) -> str | None:
        """Why the guard rejects a short-context result (None: it is kept)."""
        if len(results) != 1:
            return "a batch"
        tokens = list(results[0].sequences_ids[0])
        score = results[0].scores[0] if results[0].scores else 0.0
        finished = len(prompts[0]) + len(tokens) < kwargs.get("max_length", 448) - 1
        return self.guard.reason(tokens, seconds=getattr(self._local, "seconds", None) or 30.0, score=score,
                                 no_speech_prob=getattr(results[0], "no_speech_prob", 0.0), finished=finished,
                                 timestamp_begin=self.special.timestamp_begin, text=self.text(tokens))

    def _generate(self, features, prompts, **kwargs):
        batch = len(prompts)
        if batch != 1 or not supports_fast_path(prompt=prompts[0], special=self.special, **kwargs):
            self._thread_stats().fallbacks += 1
            self._log_bypass(*bypass_reason(batch, prompts[0], self.special, kwargs))
            return self._engine.generate(features, prompts, **kwargs)
        stats = self._thread_stats()
        controllers = self.controllers()
        if controllers is not None and not controllers.use_speculation():
            started = time.perf_counter()
            result = self._engine.generate(features, prompts, **kwargs)
            stats.add(DecodeStats(windows=1, plain_windows=1, decoder_seconds=time.perf_counter() - started))
            return result
        prompt = list(prompts[0])
        history = prompt[1: self.special.sot_index(prompt)] if prompt[0] != self.special.sot else []
        result = decode_window(
            self._engine, features, prompt, self.special,
            self.make_drafter(controllers, getattr(self._local, "seconds", None), audio=features,
                              mel=getattr(self._local, "mel", None)),
            history=history, **kwargs,
        )
        if controllers is not None:
            controllers.record_window(result.stats)
        stats.add(result.stats)
        return [GenerationResult([result.tokens], [result.score], result.no_speech_prob or 0.0)]

    def _log_bypass(self, kind: str, message: str) -> None:
        """Log ``message`` the first time this engine bypasses the map for reason ``kind``."""
        with self._bypass_lock:
            if kind in self._bypass_logged:
                return
            self._bypass_logged.add(kind)
        logger.warning("decoding without the token map: %s", message)


def bypass_reason(batch: int, prompt, special: SpecialTokens, kwargs: dict) -> tuple[str, str]:
    """Why a ``generate`` call cannot be drafted: ``(kind, advice)``.

    :func:`tokenmap.decode.rules.supports_fast_path` decides; this names the option
    that made it refuse, by trying each option alone on top of greedy search.
    """
    if batch != 1:
        return "batch", (f"batched decoding ({batch} windows per generate call) is not drafted; "
                         "use WhisperModel.transcribe, which decodes one window at a time")
    culprits = [key for key, value in kwargs.items() if not supports_fast_path(**{"beam_size": 1, key: value})]
    if "sampling_topk" in culprits:  # faster-whisper's temperature fallback (num_hypotheses = best_of)
        return "sampling", (f"faster-whisper's temperature fallback re-decoded a window by sampling "
                            f"(temperature {kwargs.get('sampling_temperature', 1)}), which is not drafted; "
                            "pass temperature=0.0 to keep every window greedy")
    if "beam_size" in culprits:
        return "beam_size", (f"beam search (beam_size={kwargs['beam_size']}) has no single draft path to "
                             "verify; pass beam_size=1 (greedy) to decode with the map")
    if culprits:
        key = culprits[0]
        return key, (f"{key}={kwargs[key]!r} is not reproduced by draft verification, which decodes "
                     f"greedily; leave {key} at its default to decode with the map")
    return "prefix", ("a decoding prefix (faster-whisper's prefix=) is not drafted; "
                      "transcribe without prefix to decode with the map")


class WhisperModel(faster_whisper.WhisperModel):
    """faster-whisper's ``WhisperModel`` with token-map speculative decoding.

    Extra arguments: ``token_map`` (path or :class:`tokenmap.maps.mapfile.TokenMap`;
    a list of them, one per task, or a map set from ``tokenmap build --balance``,
    to infer the task while decoding with :class:`tokenmap.decode.drafters.MapSetDrafter`;
    or None for prompt lookup and the session cache only), ``prompt_lookup``
    and ``session_cache`` (drafters after the map), ``adaptive`` (let the
    cost curve and the running acceptance decide how far to draft),
    ``cost_model`` (a :class:`tokenmap.decode.cost.CostModel`; default: this
    machine's calibration or the built-in curve), ``exact`` (False: decode at
    ``compute_type``, the fastest; True: an int8 ``compute_type`` decodes with a
    float32 copy of the model, so the transcript equals plain greedy decoding of
    that configuration), ``decoder_compute_type`` (``"auto"``: as ``exact``
    says; ``"same"``, ``"float32"``, ``"int8"``: explicitly),
    ``encoder`` (``"auto"``: stock CTranslate2 in a worker process when
    ``make stock-encoder`` installed it, else the fork; ``"fork"``, ``"stock"``;
    see :mod:`tokenmap.runtime.precision`), ``recall`` (path or
    :class:`tokenmap.recall.RecallIndex` from ``tokenmap recall``: segments heard
    before, drafted whole where their audio is heard again, at a window's start
    or inside it), ``audio_context`` (``"full"``: every window is encoded as
    30 s, as faster-whisper does; ``"auto"``: a window is encoded as its audio
    plus a margin, and the guard of :mod:`tokenmap.context` sends a window whose
    output looks broken back to the full context; or an
    :class:`tokenmap.context.AudioContext`; ``transcribe(audio_context=...)``
    overrides it per call), ``malloc_policy`` (True: apply
    :mod:`tokenmap.runtime.memory`'s policy to this process before the model loads:
    encodes up to 1.8× faster, but freed memory stays resident for the whole
    process; the ``tokenmap`` command applies it). All other arguments are
    faster-whisper's; ``cpu_threads=0`` (faster-whisper's default, CTranslate2's
    own choice) becomes :func:`tokenmap.runtime.engine.default_threads`, so the engine
    runs with the thread count its cost curve was calibrated for.

    ``drafting`` is False when the loaded CTranslate2 lacks the fork's
    decoder-step API: the model then decodes as plain faster-whisper, after
    one warning (:func:`tokenmap.runtime.engine.warn_drafting_off`).
    """

    def __init__(self, model_size_or_path: str, token_map=None, prompt_lookup: bool = True,
                 session_cache: bool = True, adaptive: bool = True, cost_model=None,
                 decoder_compute_type: str = "auto", encoder: str = "auto", recall=None, exact: bool = False,
                 audio_context="full", malloc_policy: bool = False, **kwargs):
        if malloc_policy:
            memory.install()
        model_dir = resolve_model(model_size_or_path)
        if not kwargs.get("cpu_threads"):  # one thread count for the engine and its calibrated cost curve
            kwargs["cpu_threads"] = default_threads()
        super().__init__(str(model_dir), **kwargs)
        load = {k: kwargs[k] for k in ("device", "device_index", "num_workers") if k in kwargs}
        engine = open_engine(model_dir, kwargs.get("compute_type", "default"), kwargs["cpu_threads"],
                             decoder_compute_type, encoder, token_map=token_map, fw_model=self, without_fork="warn",
                             exact=exact, **load)
        self.drafting = engine.drafting
        self.token_map = engine.token_map
        self.recall = None
        self.audio_context = as_audio_context(audio_context)
        self._context_local = threading.local()
        if not self.drafting:
            self.session_cache = None
            return
        self.decoder_compute_type, self.encoder_engine = engine.decoder_compute_type, engine.encoder_engine
        special = engine.special
        self.recall = load_recall(recall, engine.tokenizer, model_dir)
        self.session_cache = SessionCache(timestamp_begin=special.timestamp_begin) if session_cache else None
        self._prompt_lookup = prompt_lookup
        cost = cost_model if cost_model is not None else engine.cost
        self.model = SpeculativeEngine(self.model, special, self._make_drafter, cost, adaptive,
                                       session=lambda: self.token_map,
                                       text=lambda ids: self.hf_tokenizer.decode([t for t in ids if t < special.eot]))

    def _make_drafter(self, controllers=None, seconds: float | None = None, audio=None, mel=None):
        return default_drafter(self.token_map, self.model.special.timestamp_begin, self._prompt_lookup,
                               self.session_cache, controllers, eot=self.model.special.eot, seconds=seconds,
                               recall=self.recall, audio=audio, mel=mel)

    def encode(self, features):
        """faster-whisper's ``encode``; notes how much audio the window holds (drafts end with a guess
        of its closing timestamp) and, on a short audio context, encodes only that much of it."""
        if not self.drafting:
            return super().encode(features)
        array = np.asarray(features)
        seconds = content_seconds(array)
        context = getattr(self._context_local, "value", None) or self.audio_context
        frames = context.frames(seconds) if array.shape[-1] == WINDOW_FRAMES else None
        if frames is None:
            self.model.note_window(seconds, features)
            return super().encode(features)
        output = super().encode(np.ascontiguousarray(array[..., :frames]))
        self.model.note_window(seconds, features, short=output)
        return output

    def transcribe(self, audio, *args, audio_context=None, **kwargs):
        """faster-whisper's ``transcribe``, with ``beam_size=1`` (greedy) unless the call sets it.

        Draft verification reproduces greedy decoding; beam search has no single
        path to verify and would bypass the map (faster-whisper's default is 5).
        ``audio_context`` (``"full"``, ``"auto"`` or an :class:`AudioContext`) overrides the
        model's for this call.
        """
        audio = audio_input(audio)  # arrays faster-whisper would misread: converted or refused, on every path
        bound = inspect.signature(super().transcribe).bind_partial(audio, *args, **kwargs)
        if "beam_size" not in bound.arguments:
            kwargs["beam_size"] = 1
        context = self.audio_context if audio_context is None else as_audio_context(audio_context)
        if not self.drafting:
            if context.mode != "full":
                logger.warning("audio_context=%r needs the engine fork's guard; encoding 30 s windows", context.mode)
            return super().transcribe(audio, *args, **kwargs)
        self.model.take_stats()  # start this thread's counters afresh
        self._context_local.value = context  # language detection encodes before the segments are read
        with blas_single_thread():  # the features' BLAS product must leave no threads spinning
            segments, info = super().transcribe(audio, *args, **kwargs)
        return self._remember(segments, context), info

    def _remember(self, segments, context: AudioContext):
        """``segments`` as faster-whisper yields them, each decoded with ``context`` (and numpy's BLAS
        on one thread: :func:`tokenmap.runtime.threads.blas_single_thread`)."""
        segments = iter(segments)
        while True:
            self._context_local.value = context  # another transcribe in this thread may have set its own
            with blas_single_thread():
                segment = next(segments, None)
            if segment is None:
                return
            if self.session_cache is not None:
                self.session_cache.add(segment.tokens)
            yield segment

    def last_stats(self) -> dict:
        """Decoder statistics of this thread's last ``transcribe`` (as it has run so far).

        All zero when drafting is off (no engine fork; see ``drafting``).
        """
        return (self.model.current_stats() if self.drafting else DecodeStats()).as_dict()


def as_audio_context(value) -> AudioContext:
    """An :class:`AudioContext` from ``"full"``, ``"auto"`` or an :class:`AudioContext`.

    >>> as_audio_context("auto").mode, as_audio_context(None).mode
    ('auto', 'full')
    """
    if isinstance(value, AudioContext):
        return value
    return AudioContext(value or "full")


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

