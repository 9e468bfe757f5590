"""``tokenmap.WhisperModel``: faster-whisper's model with token-map drafting.

A drop-in subclass: faster-whisper's own ``transcribe`` runs (VAD, segment and word timestamps, long-form
audio, language detection) on parts tokenmap replaces:

* ``self.model``, a :class:`tokenmap.assembly.Model`: the encoder this CPU should use, the decoder, and the
  drafters that decode greedy ``generate`` calls speculatively (everything else goes to CTranslate2);
* ``encode``, the window encoder (:mod:`tokenmap.windows`): the audio context, and the first window's encoder
  pass shared with language detection;
* ``self.feature_extractor`` (:class:`tokenmap.features.WindowedExtractor`) and, within its calls,
  faster-whisper's VAD and compression ratio (:mod:`tokenmap.hooks`).

Each ``transcribe`` call runs on a shallow copy of the model holding that call's :class:`tokenmap.windows.Session`,
whose life is the call's, so concurrent calls share the parts and nothing else. Beam search has no single path
to verify, so ``transcribe()`` defaults to ``beam_size=1``.

Example::

    >>> from tokenmap import WhisperModel
    >>> model = WhisperModel("/path/to/ct2-model", token_map="maint.tmap",
    ...                      compute_type="int8", cpu_threads=2)          # doctest: +SKIP
    >>> segments, info = model.transcribe("report.wav", language="en")   # doctest: +SKIP
    >>> model.last_stats()["acceptance_rate"]                              # doctest: +SKIP
    0.83
"""

from __future__ import annotations

import copy
import inspect
import logging
from dataclasses import fields, replace

import faster_whisper
from faster_whisper.audio import pad_or_trim

from tokenmap import hooks
from tokenmap.assembly import ModelOptions, compose_model
from tokenmap.audio import samples
from tokenmap.context import WINDOW_FRAMES, AudioContext, as_audio_context
from tokenmap.decode.speculative import DecodeStats
from tokenmap.features import WindowedExtractor
from tokenmap.models import resolve_model
from tokenmap.runtime import memory
from tokenmap.runtime.engine import default_threads
from tokenmap.runtime.threads import blas_single_thread
from tokenmap.windows import CONFIDENT, Session, first_window

logger = logging.getLogger("tokenmap")


def transcribe_signature() -> inspect.Signature:
    """faster-whisper's ``WhisperModel.transcribe`` signature, with ``beam_size=1`` (greedy, which drafts
    verify) and a keyword-only ``audio_context``: what IDEs, ``help()`` and introspecting tools show."""
    base = inspect.signature(faster_whisper.WhisperModel.transcribe)
    params = [p.replace(default=1) if p.name == "beam_size" else p for p in base.parameters.values()]
    params.append(inspect.Parameter("audio_context", inspect.Parameter.KEYWORD_ONLY, default=None))
    return base.replace(parameters=params)


#: the keywords of ``tokenmap.WhisperModel`` that are :class:`~tokenmap.assembly.ModelOptions`' fields
OPTION_KEYWORDS = {f.name for f in fields(ModelOptions)} - {"compute_type", "threads"}


class WhisperModel(faster_whisper.WhisperModel):
    """faster-whisper's ``WhisperModel`` with token-map speculative decoding.

    Extra arguments: ``malloc_policy`` applies :mod:`tokenmap.runtime.memory`'s policy to this process first;
    ``options``, a :class:`tokenmap.assembly.ModelOptions` (``token_map``, the drafters, precision, encoder,
    ``audio_context``, ``loop_stop``), whose fields may be given as keywords too (they override it).
    ``transcribe(audio_context=...)`` overrides the audio context per call.

    All other arguments are faster-whisper's (``cpu_threads=0``: as ``ModelOptions.threads``). Where the loaded
    CTranslate2 lacks the fork's decoder-step API, ``drafting`` is False and the model decodes as plain
    faster-whisper (with one warning if a map or recall index asked for drafting).
    """

    def __init__(self, model_size_or_path: str, token_map=None, *, options: ModelOptions | None = None,
                 malloc_policy: bool = False, **kwargs):
        if malloc_policy:
            memory.install()
        ours = {name: kwargs.pop(name) for name in OPTION_KEYWORDS & kwargs.keys()}
        options = replace(options or ModelOptions(compute_type="default"), **ours,
                          **({"token_map": token_map} if token_map is not None else {}))
        model_dir = resolve_model(model_size_or_path)
        kwargs.setdefault("compute_type", options.compute_type)
        # one thread count for the engine and its calibrated cost curve
        kwargs["cpu_threads"] = kwargs.get("cpu_threads") or options.threads or default_threads()
        options = replace(options, compute_type=kwargs["compute_type"], threads=kwargs["cpu_threads"])
        super().__init__(str(model_dir), **kwargs)
        self.feature_extractor = WindowedExtractor(self.feature_extractor)  # a long file's features, window by window
        hooks.install()  # tokenmap's VAD and a stopped loop's compression ratio, within its own calls
        load = {k: kwargs[k] for k in ("device", "device_index", "num_workers") if k in kwargs}
        asked = options.token_map is not None or options.recall is not None  # drafting asked for: say if it is off
        self.model = compose_model(self.model, model_dir, options, self.hf_tokenizer, "warn" if asked else "quiet",
                                   **load)
        memory.release_free_memory()  # the weights' conversion buffers, kept by the malloc policy
        self.audio_context = as_audio_context(options.audio_context)
        self.session = Session(self.audio_context if self.drafting else AudioContext())
        self.last_session: Session | None = None  # the session of the last transcribe call started

    @property
    def drafting(self) -> bool:
        """Whether the model has drafters (the loaded CTranslate2 is the fork)."""
        return self.model.drafting is not None

    def _drafters_field(name: str, doc: str):  # noqa: N805 - builds a property of the class body
        def get(self):
            return getattr(self.model.drafting, name) if self.drafting else None

        def set_(self, value):
            if self.drafting:
                setattr(self.model.drafting, name, value)
            elif value is not None:
                logger.warning("drafting is off (no engine fork): %s is not used", name)

        return property(get, set_, doc=doc)

    token_map = _drafters_field("token_map", "The map (or list of maps) drafts come from; assign another to switch.")
    recall = _drafters_field("recall", "The recall index (``tokenmap recall``) of segments heard before, or None.")
    session_cache = _drafters_field("session_cache", "Tokens decoded earlier, drafted when they recur (or None).")
    del _drafters_field

    @property
    def decoder_compute_type(self) -> str | None:
        """The decoder's compute type (None when drafting is off)."""
        return self.model.decoder_compute_type if self.drafting else None

    @property
    def encoder_engine(self) -> str | None:
        """:attr:`tokenmap.assembly.Model.encoder_engine` (None when drafting is off)."""
        return self.model.encoder_engine if self.drafting else None

    @property
    def shared_encodes(self) -> int:
        """Encoder passes saved by sharing the first window's with language detection."""
        return self.model.windows.shared

    def encode(self, features):
        """faster-whisper's ``encode``, on this call's audio context: an :class:`tokenmap.windows.EncodedWindow`
        (the first window, when language detection encoded it)."""
        return self.model.windows.encode(features, self.session)

    def detect_language(self, audio=None, features=None, *args, **kwargs):
        session = self.session
        if session.capture is not None and audio is None and features is not None:
            # the batched pipeline's chunks, joined as it joins them (it hands over placeholders)
            segments = kwargs.get("language_detection_segments", 1)
            return super().detect_language(None, session.capture.detection_features(segments), *args, **kwargs)
        if audio is not None or features is None or not session.shares_first or args or \
                kwargs.get("language_detection_segments", 1) != 1:
            return super().detect_language(audio, features, *args, **kwargs)
        window = first_window(features)  # the call's first window: encoded once, for detection and its decode
        first = self.model.windows.encode(pad_or_trim(window[..., :WINDOW_FRAMES]), session)
        probabilities = [(token[2:-2], p) for token, p in self.model.detect_language(first)[0]]  # as faster-whisper
        result = (*probabilities[0], probabilities)
        if window.shape[-1] != features.shape[-1] and result[1] < CONFIDENT:  # a near-tie: faster-whisper's own
            result = super().detect_language(audio, features, *args, **kwargs)  # window decides
        session.first = first
        return result

    detect_language.__signature__ = inspect.signature(faster_whisper.WhisperModel.detect_language)
    detect_language.__doc__ = faster_whisper.WhisperModel.detect_language.__doc__

    def for_call(self, context: AudioContext | None = None, capture=None, shares_first: bool = False):
        """This model for one ``transcribe`` call: a shallow copy (the same parts) with a fresh
        :class:`~tokenmap.windows.Session` on ``context`` (default: the model's), which :meth:`last_stats` reads
        until the next call starts; ``capture``: the batched pipeline's chunk capture; ``shares_first``: the
        call's first window is the one its language is detected on."""
        context = context or self.session.context
        if not self.drafting and context.mode != "full":
            logger.warning("audio_context=%r needs the engine fork's guard; encoding 30 s windows", context.mode)
            context = AudioContext()
        call = copy.copy(self)
        call.session = self.last_session = Session(context, capture=capture, shares_first=shares_first)
        return call

    def transcribe(self, audio, *args, audio_context=None, **kwargs):
        """faster-whisper's ``transcribe``, with ``beam_size=1`` (greedy) unless the call sets it;
        ``audio_context`` overrides the model's for this call."""
        audio = samples(audio)  # files decoded without a full garbage collection; arrays checked
        bound = inspect.signature(super().transcribe).bind_partial(audio, *args, **kwargs)
        if "beam_size" not in bound.arguments:
            kwargs["beam_size"] = 1
        call = self.for_call(None if audio_context is None else as_audio_context(audio_context),  # a first window
                             shares_first=bound.arguments.get("clip_timestamps", "0") == "0")  # at the start

        # the features' BLAS product must leave no threads spinning (tokenmap.runtime.threads)
        with blas_single_thread(), hooks.within(call.session):
            segments, info = faster_whisper.WhisperModel.transcribe(call, audio, *args, **kwargs)
        return call._segments(segments), info

    transcribe.__signature__ = transcribe_signature()

    def _segments(self, segments):
        """faster-whisper's ``segments``, decoded with numpy's BLAS on one thread, each added to the session cache."""
        for segment in hooks.each_within(self.session, segments, blas_single_thread):
            if self.session_cache is not None:
                self.session_cache.add(segment.tokens)
            yield segment

    def last_stats(self) -> dict:
        """Decoder statistics of the last ``transcribe`` call started on this model (as it has run so far; all
        zero when drafting is off)."""
        return (self.last_session.stats if self.last_session is not None else DecodeStats()).as_dict()
