"""One assembly: the model faster-whisper decodes with, composed from its parts by :func:`compose_model`.

A :class:`Model` is what faster-whisper calls ``self.model``:

* an :class:`~tokenmap.encoders.base.Encoder` (:func:`tokenmap.encoders.open_encoder`) behind a
  :class:`~tokenmap.windows.WindowEncoder`;
* a decoder: the fork's ``ctranslate2.models.Whisper`` at the precision :mod:`tokenmap.runtime.precision` chooses,
  and a :class:`~tokenmap.decode.plain.PlainDecoder` for ``generate`` and ``detect_language`` without drafts
  (stock CTranslate2 in its worker where installed);
* drafters (:class:`~tokenmap.decode.model_drafting.Drafting`), or none where the installed CTranslate2 has no step API.

Every ``generate`` goes through the guard (:mod:`tokenmap.decode.guarding`). Every caller builds its model here,
from one :class:`ModelOptions`: :func:`compose_model` around a loaded ``ctranslate2.models.Whisper``, or
:func:`open_model`, which loads it.

Example::

    >>> model = open_model("base", ModelOptions(threads=2, token_map="ivr.tmap"))   # doctest: +SKIP
    >>> model.encoder_engine, model.decoder_compute_type                     # doctest: +SKIP
    ('stock', 'int8')
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from tokenmap.decode.cost import load_cost_model
from tokenmap.decode.drafters import EchoDrafter, SessionCache
from tokenmap.decode.guarding import Guard, guarded_generate
from tokenmap.decode.loops import LoopOptions, StoppingDecoder, stopped_ratios
from tokenmap.decode.model_drafting import Drafting
from tokenmap.decode.plain import PlainDecoder
from tokenmap.decode.recall import load_recall
from tokenmap.decode.rules import supports_fast_path
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import decode_window
from tokenmap.encoders import CTranslate2Encoder, Encoder, Output, open_encoder, open_worker
from tokenmap.maps.mapfile import load_maps
from tokenmap.models import resolve_model
from tokenmap.runtime import packing, precision
from tokenmap.runtime.engine import default_threads, drafting_off_reason, require_step_api, warn_drafting_off
from tokenmap.runtime.threads import warn_if_late
from tokenmap.textok import TextTokenizer
from tokenmap.windows import EncodedWindow, Session, WindowEncoder


@dataclass(frozen=True)
class ModelOptions:
    """How a model is put together, passed whole from the CLI and ``tokenmap.WhisperModel`` to :func:`compose_model`.

    * ``compute_type`` and ``threads`` (0: :func:`~tokenmap.runtime.engine.default_threads`, the thread count the
      cost curve is calibrated for) load the model;
    * ``token_map``: a path or :class:`tokenmap.maps.mapfile.TokenMap`, a list of them (one per task), or a map
      set from ``tokenmap build --balance``; None, with no ``recall``, drafts nothing
      (:meth:`~tokenmap.decode.model_drafting.Drafting.drafts_worth_trying`);
    * ``prompt_lookup``, ``session_cache``: the drafters after the map; ``recall``: a
      :class:`tokenmap.maps.recallindex.RecallIndex` (or its path) of segments heard before;
    * ``adaptive``: let the cost curve (``cost_model``, default this machine's calibration) and the running
      acceptance decide how far to draft;
    * ``exact``: an int8 ``compute_type`` decodes with a float32 copy, so the transcript equals plain greedy
      decoding; ``decoder_compute_type``: ``"auto"`` (as ``exact`` says), ``"same"``, ``"float32"``, ``"int8"``;
    * ``encoder``: one of :data:`tokenmap.encoders.ENCODERS` (:mod:`tokenmap.encoders.choice`);
    * ``audio_context``: ``"full"`` (30 s windows, as faster-whisper), ``"auto"`` (a window's audio plus a
      margin, guarded by :mod:`tokenmap.context`) or an :class:`tokenmap.context.AudioContext`;
    * ``loop_stop``: stop decodes that start to repeat (:mod:`tokenmap.decode.loops`).
    """

    compute_type: str = "int8"
    threads: int = 0
    decoder_compute_type: str | None = "auto"
    encoder: str = "auto"
    exact: bool = False
    token_map: object = None
    recall: object = None
    prompt_lookup: bool = True
    session_cache: bool = True
    adaptive: bool = True
    cost_model: object = None
    audio_context: object = "full"
    loop_stop: bool = True


class Model:
    """An ``encoder``, the ``plain`` decoder with its ``decoder``, and ``drafting`` (or None), composed.

    ``generate``, ``detect_language`` and ``align`` take an :class:`~tokenmap.windows.EncodedWindow` or a bare
    encoder output; the model's settings faster-whisper reads (``is_multilingual``, ``n_mels``, ``device``, ...)
    are the decoder's. ``guard`` judges
    every decoded window, ``recorder`` (a :class:`~tokenmap.maps.recallindex.RecallIndex`, or None) records it,
    and ``session`` counts the calls made outside a ``transcribe``."""

    def __init__(self, encoder: Encoder, plain: PlainDecoder, drafting: Drafting | None, *,
                 special: SpecialTokens, tokenizer, model_dir: Path, options: ModelOptions,
                 decoder_compute_type: str):
        self.encoder = encoder
        self.windows = WindowEncoder(encoder)
        self.decoder = plain.decoder
        self.plain = plain
        self.drafting = drafting
        self.special = special
        self.tokenizer = tokenizer
        self.model_dir = model_dir
        self.threads = options.threads
        self.decoder_compute_type = decoder_compute_type
        self.guard = Guard()
        self.recorder = None
        self.session = Session()
        self.loop = LoopOptions() if options.loop_stop else None  # stop decodes as they repeat (decode.loops)

    @property
    def encoder_engine(self) -> str:
        """The engine that encodes: ``"openvino"``, ``"stock"`` or ``"fork"`` (``"openvino+stock"`` when it
        depends on the window's length)."""
        return self.encoder.engine

    @property
    def token_map(self):
        """The active map (or list of maps) drafts come from; None without drafters."""
        return self.drafting.token_map if self.drafting is not None else None

    @cached_property
    def cost(self):
        """The verify-pass cost curve calibrated for this decoder precision and thread count (else the built-in one)."""
        return load_cost_model(self.model_dir, self.decoder_compute_type, self.threads)

    def text(self, ids) -> str:
        """The text of token ids (special tokens left out)."""
        return self.tokenizer.decode([t for t in ids if t < self.special.eot])

    def encode(self, features, to_cpu: bool = False):
        """The encoder output of ``features`` as they are (no audio context): a ``ctranslate2.StorageView``."""
        return self.encoder.encode(features, to_cpu=to_cpu)

    def generate(self, features, prompts, **kwargs):
        """CTranslate2's ``generate``, guarded, with greedy windows drafted where the drafters pay."""
        window = _window(features, self.session)
        stats = (window.session or self.session).stats

        def decode(output: Output, prompts, kwargs):
            plain = StoppingDecoder(self.plain.on(output.held), self.loop, self.special, self.text, window.seconds,
                                    stats, self.decoder if self.drafting is not None else None)
            if self.drafting is None:
                return plain.generate(output.view, prompts, **kwargs)
            return self.drafting.generate(self.decoder, plain, output.view, prompts, stats, window.seconds,
                                          window.mel, **kwargs)

        output, results = guarded_generate(decode, window, prompts, kwargs, stats, self, self.verify_copy)
        (window.session or self.session).ratios = stopped_ratios(results, self.text)  # tokenmap.hooks reads them
        if self.recorder is not None and len(prompts) == 1:
            frames = np.asarray(output.view)  # [T, D], or [1, T, D]
            self.recorder.add_window(frames[0] if frames.ndim == 3 else frames, results[0].sequences_ids[0],
                                     self.special.timestamp_begin, mel=window.mel)
        return results

    def verify_copy(self, output: Output, prompt, kwargs, expected):
        """The copy guard's probe, ``verify`` of :func:`tokenmap.decode.copies.probe_copy`."""
        if self.drafting is None or not supports_fast_path(prompt=prompt, special=self.special, **kwargs):
            return None
        return decode_window(self.decoder, output.view, prompt, self.special, EchoDrafter(expected),
                             loop=self.loop, **kwargs).tokens

    def detect_language(self, features):
        output = _window(features, self.session).output
        return self.plain.on(output.held).detect_language(output.view)

    def align(self, features, *args, **kwargs):
        return self.decoder.align(_window(features, self.session).output.view, *args, **kwargs)

    def wait_ready(self) -> None:
        """Block until the stock worker, where it runs, has loaded its model (the first call waits otherwise)."""
        self.plain.wait_ready()

    # what faster-whisper, the stream and the bench read of a ``ctranslate2.models.Whisper``: the decoder's
    is_multilingual = property(lambda self: self.decoder.is_multilingual)
    n_mels = property(lambda self: self.decoder.n_mels)
    device = property(lambda self: self.decoder.device)


def _window(features, session: Session) -> EncodedWindow:
    """``features`` as an :class:`EncodedWindow`: one already, or bare encoder output of ``session``."""
    return features if isinstance(features, EncodedWindow) else EncodedWindow(Output(features), session=session)


def compose_model(fork, model_dir: Path, options: ModelOptions, tokenizer=None, without_fork: str = "raise",
             **load_kwargs) -> Model:
    """The :class:`Model` around ``fork``, the ``ctranslate2.models.Whisper`` loaded from ``model_dir`` as
    ``options`` say (their ``threads`` resolved). Without the fork's step API, ``without_fork`` says ``"raise"``
    (:class:`~tokenmap.runtime.engine.EngineError`), ``"warn"`` (once) or ``"quiet"``, and ``fork`` alone encodes
    and decodes. Else the decoder is a second copy, loaded with ``load_kwargs``, where its precision differs."""
    packing.loaded()  # the fork has read the packed-GEMM switch: children must not inherit it
    if without_fork == "raise":
        require_step_api()
    drafts = warn_drafting_off() if without_fork == "warn" else drafting_off_reason() is None
    warn_if_late()
    model_dir, compute_type, threads = Path(model_dir), options.compute_type, options.threads
    tokenizer = tokenizer or Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    special = SpecialTokens.from_model_dir(str(model_dir))
    parts = dict(special=special, tokenizer=tokenizer, model_dir=model_dir, options=options)
    if not drafts:
        return Model(CTranslate2Encoder(fork, compute_type), PlainDecoder(fork), None,
                     decoder_compute_type=compute_type, **parts)
    decoder_type = precision.decoder_compute_type(compute_type, options.decoder_compute_type, options.exact)
    decoder = fork if decoder_type == compute_type else precision.load_decoder(str(model_dir), decoder_type,
                                                                                cpu_threads=threads, **load_kwargs)
    worker = open_worker(options.encoder, model_dir, compute_type, threads, fork)
    model = Model(open_encoder(options.encoder, model_dir, compute_type, threads, fork, worker),
                  PlainDecoder(decoder, worker, decoder_type), None, decoder_compute_type=decoder_type, **parts)
    model.drafting = Drafting(special, options.cost_model if options.cost_model is not None else model.cost,
                              options.adaptive, token_map=load_token_maps(options.token_map, tokenizer),
                              recall=load_recall(options.recall, tokenizer, model_dir),
                              session_cache=SessionCache(timestamp_begin=special.timestamp_begin)
                              if options.session_cache else None, prompt_lookup=options.prompt_lookup)
    return model


def open_model(model: str | os.PathLike = "base", options: ModelOptions = ModelOptions(), **load_kwargs) -> Model:
    """:func:`compose_model` around ``model`` (anything :func:`tokenmap.models.resolve_model` accepts), loaded on
    the fork as ``options`` say (``threads`` 0: :func:`~tokenmap.runtime.engine.default_threads`)."""
    import ctranslate2  # the engine loads with the first model, not on ``import tokenmap``

    model_dir = resolve_model(model)
    options = replace(options, threads=options.threads or default_threads())
    fork = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type=options.compute_type,
                                      intra_threads=options.threads)
    return compose_model(fork, model_dir, options, **load_kwargs)


def load_token_maps(token_map, hf_tokenizer):
    """``token_map`` (a path or a loaded map, or a list of them) as one map, or a list of maps for
    :class:`tokenmap.decode.drafters.MapSetDrafter`; paths are loaded for ``hf_tokenizer``'s fingerprint."""
    if token_map is None:
        return None
    tok = None
    maps = []
    for m in token_map if isinstance(token_map, (list, tuple)) else [token_map]:
        if isinstance(m, (str, os.PathLike)):
            tok = tok or TextTokenizer(hf_tokenizer)
            maps.extend(load_maps(m, tok.fingerprint, vocab_size=tok.vocab_size))
        else:
            maps.append(m)
    return maps[0] if len(maps) == 1 else maps
