"""``tokenmap.WhisperModel``: faster-whisper's model with token-map drafting.

A drop-in subclass: ``transcribe()`` keeps VAD, segment and word timestamps,
long-form audio with ``condition_on_previous_text`` and language detection,
because faster-whisper itself runs unchanged. Only the engine object it calls
(``self.model``) is wrapped: greedy ``generate`` calls are decoded
speculatively, everything else (beam search, sampling temperatures of the
fallback, repetition penalties, ``encode``, ``detect_language``, ``align``)
goes to CTranslate2 as before.

Example::

    >>> from tokenmap import WhisperModel
    >>> model = WhisperModel("/path/to/ct2-model", token_map="maint.tmap",
    ...                      compute_type="int8", cpu_threads=2)          # doctest: +SKIP
    >>> segments, info = model.transcribe("report.wav", language="en")   # doctest: +SKIP
    >>> model.last_stats()["acceptance_rate"]                              # doctest: +SKIP
    0.83
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass

import faster_whisper

from .drafters import SessionCache, default_drafter
from .engine import require_step_api
from .rules import SpecialTokens, supports_fast_path
from .speculative import ControllerSet, DecodeStats, decode_window
from .transcriber import audio_input

logger = logging.getLogger("tokenmap")


@dataclass(frozen=True)
class GenerationResult:
    """The fields of ``ctranslate2.models.WhisperGenerationResult`` faster-whisper reads."""

    sequences_ids: list
    scores: list
    no_speech_prob: float


class SpeculativeEngine:
    """Wraps a ``ctranslate2.models.Whisper``; greedy ``generate`` goes speculative.

    ``make_drafter(controllers)`` builds a fresh drafter per window (drafters hold
    per-window state, so concurrent calls never share one). Statistics are
    kept per thread (:meth:`take_stats`).
    """

    def __init__(self, engine, special: SpecialTokens, make_drafter, cost=None, adaptive: bool = True):
        self._engine = engine
        self.special = special
        self.make_drafter = make_drafter
        self.cost = cost
        self.adaptive = adaptive and cost is not None
        self._local = threading.local()

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def _thread_stats(self) -> DecodeStats:
        if not hasattr(self._local, "stats"):
            self._local.stats = DecodeStats()
            self._local.controllers = ControllerSet(self.cost) if self.adaptive else None
        return self._local.stats

    def current_stats(self) -> DecodeStats:
        """This thread's statistics since the last :meth:`take_stats` (not reset)."""
        return self._thread_stats()

    def take_stats(self) -> DecodeStats:
        """This thread's statistics since the last call; resets them."""
        stats = self._thread_stats()
        self._local.stats = DecodeStats()
        return stats

    def generate(self, features, prompts, **kwargs):
        batch = len(prompts)
        if batch != 1 or not supports_fast_path(prompt=prompts[0], special=self.special, **kwargs):
            self._thread_stats().fallbacks += 1
            return self._engine.generate(features, prompts, **kwargs)
        stats = self._thread_stats()
        controllers = self._local.controllers
        if controllers is not None and not controllers.use_speculation():
            started = time.perf_counter()
            result = self._engine.generate(features, prompts, **kwargs)
            stats.add(DecodeStats(windows=1, plain_windows=1, decoder_seconds=time.perf_counter() - started))
            return result
        prompt = list(prompts[0])
        history = prompt[1: self.special.sot_index(prompt)] if prompt[0] != self.special.sot else []
        result = decode_window(
            self._engine, features, prompt, self.special, self.make_drafter(controllers),
            history=history, **kwargs,
        )
        stats.add(result.stats)
        return [GenerationResult([result.tokens], [result.score], result.no_speech_prob or 0.0)]


class WhisperModel(faster_whisper.WhisperModel):
    """faster-whisper's ``WhisperModel`` with token-map speculative decoding.

    Extra arguments: ``token_map`` (path or :class:`tokenmap.mapfile.TokenMap`;
    a list of them, one per task, or a map set from ``tokenmap build --balance``,
    to infer the task while decoding with :class:`tokenmap.drafters.MapSetDrafter`;
    or None for prompt lookup and the session cache only), ``prompt_lookup``
    and ``session_cache`` (drafters after the map), ``adaptive`` (let the
    cost curve and the running acceptance decide how far to draft),
    ``cost_model`` (a :class:`tokenmap.cost.CostModel`; default: this
    machine's calibration or the built-in curve). All other arguments are
    faster-whisper's; ``cpu_threads=0`` (faster-whisper's default, CTranslate2's
    own choice) becomes :func:`tokenmap.engine.default_threads`, so the engine
    runs with the thread count its cost curve was calibrated for.
    """

    def __init__(self, model_size_or_path: str, token_map=None, prompt_lookup: bool = True,
                 session_cache: bool = True, adaptive: bool = True, cost_model=None, **kwargs):
        require_step_api()
        from .models import resolve_model

        from .engine import default_threads

        model_dir = resolve_model(model_size_or_path)
        if not kwargs.get("cpu_threads"):  # one thread count for the engine and its calibrated cost curve
            kwargs["cpu_threads"] = default_threads()
        super().__init__(str(model_dir), **kwargs)
        special = SpecialTokens.from_model_dir(str(model_dir))
        self.token_map = _load_map(token_map, self.hf_tokenizer)
        self.session_cache = SessionCache(timestamp_begin=special.timestamp_begin) if session_cache else None
        self._prompt_lookup = prompt_lookup
        if cost_model is None:
            from .cost import load_cost_model

            cost_model = load_cost_model(model_dir, kwargs.get("compute_type", "int8"), kwargs["cpu_threads"])
        self.model = SpeculativeEngine(self.model, special, self._make_drafter, cost_model, adaptive)

    def _make_drafter(self, controllers=None):
        return default_drafter(self.token_map, self.model.special.timestamp_begin, self._prompt_lookup,
                               self.session_cache, controllers)

    def transcribe(self, audio, *args, **kwargs):
        self.model.take_stats()  # start this thread's counters afresh
        segments, info = super().transcribe(audio_input(audio), *args, **kwargs)
        return self._remember(segments), info

    def _remember(self, segments):
        for segment in segments:
            if self.session_cache is not None:
                self.session_cache.add(segment.tokens)
            yield segment

    def last_stats(self) -> dict:
        """Decoder statistics of this thread's last ``transcribe`` (as it has run so far)."""
        return self.model.current_stats().as_dict()


def _load_map(token_map, hf_tokenizer):
    """One map, or a list of maps (several paths, or a map set's sections) for :class:`MapSetDrafter`."""
    if token_map is None:
        return None
    from .mapfile import load_maps
    from .textok import TextTokenizer

    tok = None
    maps = []
    for m in token_map if isinstance(token_map, (list, tuple)) else [token_map]:
        if isinstance(m, (str, os.PathLike)):
            tok = tok or TextTokenizer(hf_tokenizer)
            maps.extend(load_maps(m, tok.fingerprint, vocab_size=tok.vocab_size))
        else:
            maps.append(m)
    return maps[0] if len(maps) == 1 else maps
