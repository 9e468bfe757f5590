"""``tokenmap.WhisperModel``: faster-whisper's model with token-map drafting.

A drop-in subclass: ``transcribe()`` keeps VAD, segment and word timestamps,
long-form audio with ``condition_on_previous_text`` and language detection,
because faster-whisper itself runs unchanged. Only the model object it calls
(``self.model``) is replaced, once, by a :class:`SpeculativeModel`: greedy ``generate`` calls are decoded
speculatively, everything else (beam search, sampling temperatures of the
fallback, repetition penalties, ``encode``, ``detect_language``, ``align``)
goes to CTranslate2 as before, and the first call of each such kind logs
which option kept it off the map.

Speculative verification reproduces greedy decoding: the model checks one
drafted path and keeps the prefix its own argmax agrees with. The decoder runs at
``compute_type`` (int8 by default: batched int8 logits may swap a near-tie, so a
word may differ from plain decoding); ``exact=True`` decodes an int8 model with a
float32 copy, whose batched logits equal its step logits
(:mod:`tokenmap.runtime.precision`). The encoder runs on the engine
:mod:`tokenmap.encoders` chooses for this CPU: OpenVINO, or CTranslate2. Beam search
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

import faster_whisper
import numpy as np

from tokenmap import vad
from tokenmap.audio import samples
from tokenmap.context import WINDOW_FRAMES, AudioContext, Guard, as_audio_context, content_seconds
from tokenmap.decode.control import ControllerSet
from tokenmap.decode.drafters import SessionCache, default_drafter, map_languages
from tokenmap.decode.guarding import GuardedGeneration
from tokenmap.decode.recall import load_recall
from tokenmap.decode.replay import replay_generated
from tokenmap.decode.rules import supports_fast_path
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import DecodeStats, decode_window
from tokenmap.detection import FirstWindowDetection
from tokenmap.features import WindowedExtractor
from tokenmap.models import resolve_model
from tokenmap.runtime import memory
from tokenmap.runtime.engine import default_threads, setup_model
from tokenmap.runtime.precision import SplitModel
from tokenmap.runtime.stock_worker import GenerationResult
from tokenmap.runtime.threads import blas_single_thread

logger = logging.getLogger("tokenmap")


class SpeculativeModel(GuardedGeneration, SplitModel):
    """A :class:`~tokenmap.runtime.precision.SplitModel` whose greedy ``generate`` is decoded speculatively.

    It is the one object that holds the encoder and the decoder (taken over from ``model``) and the
    drafting state: ``token_map`` (the active map, or a list of maps; assign another to switch),
    ``recall``, ``session_cache`` and ``prompt_lookup`` (what :meth:`make_drafter` drafts from), the
    verify-pass ``cost`` curve, the ``guard`` of short audio contexts and, per thread, the statistics
    (:meth:`take_stats`) and the draft controllers, one set per active map (what one map taught them
    says nothing of another). A fresh drafter is made per window (drafters hold per-window state,
    so concurrent calls never share one). ``text`` turns token ids into text for the guard.
    """

    def __init__(self, model: SplitModel, special: SpecialTokens, cost=None, adaptive: bool = True, *,
                 token_map=None, recall=None, session_cache: SessionCache | None = None,
                 prompt_lookup: bool = True, text=None):
        super().__init__(model.encoder, model.decoder, model.encoder_engine, model.decoder_compute_type, model.plain)
        self.special = special
        self.cost = cost
        self.adaptive = adaptive and cost is not None
        self.token_map = token_map
        self.recall = recall
        self.session_cache = session_cache
        self.prompt_lookup = prompt_lookup
        self.recorder = None  # a RecallIndex that every decoded window is added to (`tokenmap recall`)
        self.guard = Guard()  # judges windows decoded on a short audio context
        self.text = text or (lambda ids: "")  # token ids -> text, for the guard's compression ratio
        self._local = threading.local()
        self._bypass_logged: set[str] = set()
        self._bypass_lock = threading.Lock()

    def make_drafter(self, controllers=None, seconds: float | None = None, audio=None, mel=None):
        """The drafter of one window: ``seconds`` of audio, ``audio`` its encoder output, ``mel`` its features."""
        return default_drafter(self.token_map, self.special, self.prompt_lookup, self.session_cache, controllers,
                               seconds=seconds, recall=self.recall, audio=audio, mel=mel)

    def drafts_worth_trying(self, prompt=()) -> bool:
        """Whether a window may be decoded speculatively at all: only with a recall index, or a map
        built from text in the window's language (the language its ``prompt`` names; a map whose
        text's languages are not recorded drafts every window).

        Prompt lookup and the session cache draft beside them; alone they seldom save a pass, and a
        window without drafts decodes faster in plain ``generate`` (on stock CTranslate2 where its
        worker runs) than in the loop, which pays Python a token."""
        if self.recall is not None:
            return True
        if self.token_map is None:
            return False
        language = self.special.language_of(prompt) if prompt else None
        languages = map_languages(self.token_map) if language else None
        if languages is None or language in languages:
            return True
        self._log_bypass(f"language {language}", f"it was built from {', '.join(sorted(languages))} text, "
                                                 f"not {language}")
        return False

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
        """This thread's controllers for the active map (None when not adaptive)."""
        if not self.adaptive:
            return None
        per_map = self._local.__dict__.setdefault("per_map", {})
        active_map = self.token_map
        entry = per_map.get(id(active_map))
        if entry is None or entry[0] is not active_map:  # the map is kept, so its id is not reused
            entry = per_map[id(active_map)] = (active_map, ControllerSet(self.cost))
        return entry[1]

    def current_stats(self) -> DecodeStats:
        """This thread's statistics since the last :meth:`take_stats` (not reset)."""
        return self._thread_stats()

    def take_stats(self) -> DecodeStats:
        """This thread's statistics since the last call; resets them."""
        stats = self._thread_stats()
        self._local.stats = DecodeStats()
        return stats

    def _generate(self, features, prompts, **kwargs):
        batch = len(prompts)
        if batch != 1 or not supports_fast_path(prompt=prompts[0], special=self.special, **kwargs):
            self._thread_stats().fallbacks += 1
            self._log_bypass(*bypass_reason(batch, prompts[0], self.special, kwargs))
            return self.plain_generate(features, prompts, **kwargs)
        stats = self._thread_stats()
        controllers = self.controllers()
        worth_trying = self.drafts_worth_trying(prompts[0])
        if not worth_trying or (controllers is not None and not controllers.use_speculation()):
            started = time.perf_counter()
            result = self.plain_generate(features, prompts, **kwargs)
            window = DecodeStats(windows=1, plain_windows=1, tokens=len(result[0].sequences_ids[0]) + 1,
                                 decoder_seconds=time.perf_counter() - started)
            if controllers is not None and worth_trying:  # what the gate weighs the loop against
                controllers.record_plain(window.decoder_seconds, window.tokens)
                controllers.record_replay(replay_generated(self._window_drafter(controllers, features), prompts[0],
                                                           result[0].sequences_ids[0], self.special,
                                                           self._history(prompts[0])))
            stats.add(window)
            return result
        prompt = list(prompts[0])
        result = decode_window(self.decoder, features, prompt, self.special,
                               self._window_drafter(controllers, features), history=self._history(prompt), **kwargs)
        if controllers is not None:
            controllers.record_window(result.stats)
        stats.add(result.stats)
        return [GenerationResult([result.tokens], [result.score], result.no_speech_prob or 0.0)]

    def _window_drafter(self, controllers, features):
        return self.make_drafter(controllers, getattr(self._local, "seconds", None), audio=features,
                                 mel=getattr(self._local, "mel", None))

    def _history(self, prompt) -> list[int]:
        """The previous text a window's prompt carries (before ``<|startoftranscript|>``)."""
        return list(prompt[1: self.special.sot_index(prompt)]) if prompt[0] != self.special.sot else []

    def _log_bypass(self, kind: str, message: str) -> None:
        """Log ``message`` the first time this model bypasses the map for reason ``kind``."""
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


def transcribe_signature() -> inspect.Signature:
    """faster-whisper's ``WhisperModel.transcribe`` signature, with ``beam_size=1`` (greedy, which drafts
    verify) and a keyword-only ``audio_context``: what IDEs, ``help()`` and introspecting tools show."""
    base = inspect.signature(faster_whisper.WhisperModel.transcribe)
    params = [p.replace(default=1) if p.name == "beam_size" else p for p in base.parameters.values()]
    params.append(inspect.Parameter("audio_context", inspect.Parameter.KEYWORD_ONLY, default=None))
    return base.replace(parameters=params)


class WhisperModel(FirstWindowDetection, faster_whisper.WhisperModel):
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
    ``encoder`` (``"auto"``: OpenVINO bf16 on CPUs with AMX or AVX512_BF16, elsewhere the
    engine measured fastest here at each audio length; ``"openvino"`` (or ``"openvino:f32"``,
    ...), ``"ctranslate2"``, ``"stock"``, ``"fork"``; see :mod:`tokenmap.encoders.choice`), ``recall`` (path or
    :class:`tokenmap.maps.recallindex.RecallIndex` from ``tokenmap recall``: segments heard
    before, drafted whole where their audio is heard again, at a window's start
    or inside it), ``audio_context`` (``"full"``: every window is encoded as
    30 s, as faster-whisper does; ``"auto"``: a window is encoded as its audio
    plus a margin, and the guard of :mod:`tokenmap.context` sends a window whose
    output looks broken back to the full context; or an
    :class:`tokenmap.context.AudioContext`; ``transcribe(audio_context=...)``
    overrides it per call), ``malloc_policy`` (True: apply
    :mod:`tokenmap.runtime.memory`'s policy to this process before the model loads:
    the encoder's large buffers are reused instead of returned to the system, so freed
    memory stays resident for the whole process; the ``tokenmap`` command applies it). All other arguments are
    faster-whisper's; ``cpu_threads=0`` (faster-whisper's default, CTranslate2's
    own choice) becomes :func:`tokenmap.runtime.engine.default_threads`, so the engine
    runs with the thread count its cost curve was calibrated for.

    ``drafting`` is False when the loaded CTranslate2 lacks the fork's
    decoder-step API: the model then decodes as plain faster-whisper, after
    one warning (:func:`tokenmap.runtime.engine.warn_drafting_off`). Otherwise ``self.model``
    is a :class:`SpeculativeModel`, which holds the encoder, the decoder and the drafting
    state; ``token_map``, ``recall`` and ``session_cache`` read and set its fields.
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
        self.feature_extractor = WindowedExtractor(self.feature_extractor)  # a long file's features, window by window
        vad.install()  # Silero VAD over a long file without a copy of it
        load = {k: kwargs[k] for k in ("device", "device_index", "num_workers") if k in kwargs}
        opened = setup_model(model_dir, self.model, kwargs.get("compute_type", "default"), kwargs["cpu_threads"],
                             decoder_compute_type, encoder, token_map=token_map, tokenizer=self.hf_tokenizer,
                             without_fork="warn", exact=exact, **load)
        memory.release_free_memory()  # the weights' conversion buffers, kept by the malloc policy
        self.drafting = opened.drafting
        self.audio_context = as_audio_context(audio_context)
        self._context_local = threading.local()
        if not self.drafting:  # faster-whisper's own model decodes; the maps are kept, unused
            self._undrafted = {"token_map": opened.token_map, "recall": None, "session_cache": None}
            return
        special = opened.special
        self.model = SpeculativeModel(
            opened.model, special, cost_model if cost_model is not None else opened.cost, adaptive,
            token_map=opened.token_map, recall=load_recall(recall, opened.tokenizer, model_dir),
            session_cache=SessionCache(timestamp_begin=special.timestamp_begin) if session_cache else None,
            prompt_lookup=prompt_lookup,
            text=lambda ids: self.hf_tokenizer.decode([t for t in ids if t < special.eot]))

    def _get(self, name: str):
        return getattr(self.model, name) if self.drafting else self._undrafted[name]

    def _set(self, name: str, value) -> None:
        if self.drafting:
            setattr(self.model, name, value)
        else:
            self._undrafted[name] = value

    token_map = property(lambda self: self._get("token_map"), lambda self, v: self._set("token_map", v),
                         doc="The active map (or list of maps) drafts come from; assign another to switch.")
    recall = property(lambda self: self._get("recall"), lambda self, v: self._set("recall", v),
                      doc="The recall index (``tokenmap recall``) drafting segments heard before, or None.")
    session_cache = property(lambda self: self._get("session_cache"), lambda self, v: self._set("session_cache", v),
                             doc="The tokens this model decoded earlier, drafted from when they recur (or None).")

    @property
    def decoder_compute_type(self) -> str | None:
        """The decoder's compute type (None when drafting is off)."""
        return self.model.decoder_compute_type if self.drafting else None

    @property
    def encoder_engine(self) -> str | None:
        """The engine that encodes, ``"openvino"``, ``"stock"`` or ``"fork"`` (``"openvino+stock"`` when it
        depends on the window's length; None when drafting is off)."""
        return self.model.encoder_engine if self.drafting else None

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
        audio = samples(audio)  # files decoded without a full garbage collection; arrays checked
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
        # the features' BLAS product must leave no threads spinning; the language is detected on the
        # first window as it is transcribed, which the encoder then answers from what it kept
        with blas_single_thread(), self.detecting_for_transcribe():
            segments, info = super().transcribe(audio, *args, **kwargs)
        return self._remember(segments, context.for_language(info.language)), info

    transcribe.__signature__ = transcribe_signature()

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
