"""Encoder and decoder precision: fast by default, exact on request.

Map decoding verifies a draft in one batched decoder pass and keeps what the
model's own argmax agrees with. At float32 the batched logits equal the
step-wise ones, so the map changes speed and nothing else. At int8 they do not
(the GEMM kernel picks a different blocking for several rows than for one), so
near-ties flip and some transcripts differ from plain decoding by a word or a
comma, at the same word error rate.

``decoder_compute_type="auto"`` (the default) decodes at the encoder's
compute type: int8 throughout, the fastest configuration. ``exact=True`` makes
``auto`` decode a quantized model with a float32 copy of it instead, whose
output equals plain greedy decoding of that configuration, at the price of a
second copy of the weights and a slower decoder. ``"same"``, ``"float32"`` and
``"int8"`` choose explicitly.

Names used here and in :mod:`tokenmap.runtime.engine`:

* an **engine** is what runs a half of the model: ``"fork"`` (the CTranslate2 fork with the
  decoder-step API), ``"stock"`` (stock CTranslate2 in a worker process:
  :mod:`tokenmap.runtime.stock_worker`) or, for the encoder only, ``"openvino"``
  (:mod:`tokenmap.encoders`, which also chooses among them); ``encoder_engine`` names the one that encodes;
* a :class:`SplitModel` is one Whisper model object whose ``encode`` runs on one object and every
  decoder call (``generate``, ``detect_language``, ``align`` and the fork's step API) on another;
  the encoder output is an ordinary float32 ``StorageView`` that either accepts.
  :func:`split_model` returns the one a configuration asks for.

Example::

    >>> decoder_compute_type("int8"), decoder_compute_type("int8", exact=True)
    ('int8', 'float32')
    >>> decoder_compute_type("int8", "same", exact=True), decoder_compute_type("float32")
    ('int8', 'float32')
"""

from __future__ import annotations

import logging

from tokenmap.encoders.choice import choose, ctranslate2_engine, plan_summary
from tokenmap.encoders.routed import make_encoder
from tokenmap.runtime.stock_worker import StockEncoder, StockEncoderError
from tokenmap.runtime.worker import WorkerDied, WorkerHung

logger = logging.getLogger("tokenmap")

#: compute types whose batched decoder logits depart from step logits (quantized GEMM)
QUANTIZED = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16")


def decoder_compute_type(compute_type: str, requested: str | None = "auto", exact: bool = False) -> str:
    """The decoder's compute type for an encoder at ``compute_type``.

    ``auto`` (or None): ``compute_type``, or float32 when ``exact`` and
    ``compute_type`` is quantized; ``same``: ``compute_type``; anything else is
    used as given.
    """
    if requested in (None, "auto"):
        return "float32" if exact and compute_type in QUANTIZED else compute_type
    if requested == "same":
        return compute_type
    return requested


def describe(compute_type: str, requested: str | None = "auto", exact: bool = False) -> str:
    """One line for ``tokenmap doctor``: which precision decodes, and why."""
    decoder = decoder_compute_type(compute_type, requested, exact)
    if decoder == compute_type and compute_type in QUANTIZED:
        return (f"{compute_type} encoder and decoder: fastest; batched {compute_type} logits differ from step "
                f"logits, so some map transcripts differ from plain decoding by a word (--exact: a float32 "
                f"decoder whose output equals plain decoding)")
    if decoder == compute_type:
        return f"{compute_type} encoder and decoder: map decoding gives the plain transcript"
    return (f"{compute_type} encoder, {decoder} decoder (a second copy of the model): batched {decoder} logits "
            f"equal step logits, so map decoding gives the plain transcript of this configuration")


class SplitModel:
    """A Whisper model whose ``encode`` runs on ``encoder`` and everything else on ``decoder``.

    ``encoder`` is any object with ``encode`` (a :class:`tokenmap.encoders.base.Encoder`, or a
    ``ctranslate2.models.Whisper``); ``decoder`` a ``ctranslate2.models.Whisper`` (possibly the encoder's).
    ``encoder_engine`` (``"openvino"``, ``"fork"``, ``"stock"``, or e.g. ``"openvino+stock"`` when
    lengths differ) and ``decoder_compute_type`` say which configuration :func:`split_model` chose.

    ``generate`` (every call: greedy windows without drafts, beam search, sampling, batches) runs on
    stock CTranslate2 in its worker (``plain``, default: the encoder when it is that worker) when the
    worker runs at the decoder's precision (:attr:`plain_engine`): the same decoding stock faster-whisper
    runs. Encoder output the worker computed itself stays there; other output crosses in shared memory.
    :class:`tokenmap.whisper.SpeculativeModel` overrides ``generate`` for the windows it drafts.
    """

    def __init__(self, encoder, decoder, encoder_engine: str = "fork", decoder_compute_type: str | None = None,
                 plain: StockEncoder | None = None):
        self.encoder = encoder
        self.decoder = decoder
        self.encoder_engine = encoder_engine
        self.decoder_compute_type = decoder_compute_type
        self.plain = plain if plain is not None else (encoder if isinstance(encoder, StockEncoder) else None)

    def encode(self, *args, **kwargs):
        return self.encoder.encode(*args, **kwargs)

    def wait_ready(self) -> None:
        """Block until the encoder can encode: the stock worker has loaded its model (it loads while the
        caller goes on, so otherwise the first ``encode`` waits for it). A failed start is left to that
        first ``encode``, which then falls back to the fork."""
        if self.plain is not None and self.plain.failed is None:
            try:
                self.plain.wait_ready()
            except (StockEncoderError, OSError, WorkerDied, WorkerHung) as exc:
                logger.debug("stock worker not ready (%s); the first encode decides", exc)

    @property
    def plain_engine(self) -> str:
        """Where plain ``generate`` runs: ``"stock"`` (the worker, while it works) or ``"fork"``."""
        stock = self.plain is not None and self.plain.failed is None
        return "stock" if stock and self.plain.compute_type == self.decoder_compute_type else "fork"

    def plain_generate(self, features, prompts, **kwargs):
        """CTranslate2's ``generate`` on :attr:`plain_engine`; the fork's when the worker fails."""
        return self._on_plain_engine("generate", features, prompts, **kwargs)

    generate = plain_generate  # a subclass that drafts overrides generate, never plain_generate

    def detect_language(self, features):
        """CTranslate2's ``detect_language`` on :attr:`plain_engine` (in the worker, on the encoder output it
        keeps: its threads are the ones that just encoded); the fork's when the worker fails."""
        return self._on_plain_engine("detect_language", features)

    def _on_plain_engine(self, method: str, *args, **kwargs):
        """``method`` of the worker's stock engine while it works (one refused call, or a dead or hung
        worker, goes to the fork: the call, or every call from then on)."""
        if self.plain_engine == "stock":
            try:
                return getattr(self.plain, method)(*args, **kwargs)
            except (WorkerDied, WorkerHung) as exc:
                self.plain.failed = self.plain.failed or str(exc)
                logger.warning("the stock worker failed (%s); decoding with the fork from now on", exc)
            except StockEncoderError as exc:  # the worker is fine; this call's options were refused there
                logger.warning("stock CTranslate2 refused a %s call (%s); running it on the fork", method, exc)
        return getattr(self.decoder, method)(*args, **kwargs)

    def __getattr__(self, name):
        if name in ("encoder", "decoder", "plain"):  # not set yet (a copy being made): never recurse
            raise AttributeError(name)
        return getattr(self.decoder, name)


def load_decoder(model_path: str, compute_type: str, *, device: str = "auto", device_index=0,
                 cpu_threads: int = 0, num_workers: int = 1, **model_kwargs):
    """A second ``ctranslate2.models.Whisper`` of ``model_path`` at ``compute_type``, for decoding."""
    import ctranslate2

    logger.info("decoder: %s at %s", model_path, compute_type)
    return ctranslate2.models.Whisper(model_path, device=device, device_index=device_index,
                                      compute_type=compute_type, intra_threads=cpu_threads,
                                      inter_threads=num_workers, **model_kwargs)


def split_model(fork, model_path: str, compute_type: str, decoder: str | None = "auto", encoder: str = "auto", *,
                cpu_threads: int, exact: bool = False, **load_kwargs) -> SplitModel:
    """The encoder and decoder this configuration asks for, around ``fork``, the fork's model at ``compute_type``.

    ``fork`` decodes when ``decoder`` resolves to ``compute_type`` (:func:`decoder_compute_type`), else a
    second copy of ``model_path`` does (:func:`load_decoder`, given ``load_kwargs``). ``encoder`` is
    resolved by :func:`tokenmap.encoders.choice.choose` (on the CPU only; elsewhere the fork encodes).
    Stock CTranslate2's worker starts when it encodes a length, or, where ``make stock-encoder``
    installed it, to decode the windows that are not drafted. Nothing is changed in place: the caller
    puts the returned model where it decodes.
    """
    decoder_type = decoder_compute_type(compute_type, decoder, exact)
    on_cpu = getattr(fork, "device", "cpu") == "cpu"
    dec = fork if decoder_type == compute_type else load_decoder(model_path, decoder_type, cpu_threads=cpu_threads,
                                                                   **load_kwargs)
    if not on_cpu:
        return SplitModel(fork, dec, "fork", decoder_type)
    # the worker decodes plain windows wherever it is installed, and encodes where it is chosen to
    stock = None
    if encoder != "fork" and ctranslate2_engine() == "stock":
        stock = StockEncoder(model_path, compute_type, cpu_threads, fallback=fork)
    plan = choose(encoder, model_path, compute_type, cpu_threads, ct2_encoder=stock or fork)
    enc = make_encoder(plan, model_path, compute_type, cpu_threads, fork, stock)
    logger.info("encoder: %s", plan_summary(plan))
    return SplitModel(enc, dec, getattr(enc, "engine", "fork"), decoder_type, plain=stock)

