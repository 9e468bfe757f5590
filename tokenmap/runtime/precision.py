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

:class:`SplitEngine` routes ``encode`` to one ``ctranslate2.models.Whisper``
and every decoder call (``generate``, ``detect_language``, ``align`` and the
fork's step API) to the other; the encoder output is an ordinary float32
``StorageView`` that either model accepts.

Example::

    >>> decoder_compute_type("int8"), decoder_compute_type("int8", exact=True)
    ('int8', 'float32')
    >>> decoder_compute_type("int8", "same", exact=True), decoder_compute_type("float32")
    ('int8', 'float32')
"""

from __future__ import annotations

import logging

from tokenmap.runtime.stock_encoder import StockEncoder, StockEncoderError, stock_dir, stock_installed

logger = logging.getLogger("tokenmap")

#: compute types whose batched decoder logits depart from step logits (quantized GEMM)
QUANTIZED = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16")
CHOICES = ("auto", "same", "float32", "int8")
ENCODERS = ("auto", "fork", "stock")
#: why the stock encoder is preferred (figures: docs/BENCHMARKS.md, "Engine")
STOCK_GAIN = ("stock CTranslate2's encoder is the one stock faster-whisper runs, and not slower than the fork's; "
              "its output equals the fork's within 1e-4 (bit for bit on the CPU measured, not promised on every CPU)")


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


class SplitEngine:
    """``encode`` on ``encoder``, everything else on ``decoder`` (two ``ctranslate2.models.Whisper``)."""

    def __init__(self, encoder, decoder):
        self.encoder = encoder
        self.decoder = decoder

    def encode(self, *args, **kwargs):
        return self.encoder.encode(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.decoder, name)


def load_decoder(model_path: str, compute_type: str, *, device: str = "auto", device_index=0,
                 cpu_threads: int = 0, num_workers: int = 1, **model_kwargs):
    """A second ``ctranslate2.models.Whisper`` of ``model_path`` at ``compute_type``, for decoding."""
    import ctranslate2

    logger.info("decoder: %s at %s", model_path, compute_type)
    return ctranslate2.models.Whisper(model_path, device=device, device_index=device_index,
                                      compute_type=compute_type, intra_threads=cpu_threads,
                                      inter_threads=num_workers, **model_kwargs)


def choose_encoder(requested: str = "auto") -> tuple[str, str]:
    """``(engine, reason)``: ``"stock"`` (worker process) or ``"fork"`` (in process) encodes.

    ``auto`` picks the stock worker when ``make stock-encoder`` installed it:
    it is the encoder stock faster-whisper runs (docs/BENCHMARKS.md, "Engine").
    """
    if requested == "fork":
        return "fork", "the fork's own encoder, in process (asked for)"
    if requested not in ("auto", "stock"):
        raise ValueError(f"encoder must be one of {', '.join(ENCODERS)}, not {requested!r}")
    if stock_installed():
        return "stock", f"stock CTranslate2 in a worker process ({stock_dir()}): {STOCK_GAIN}"
    if requested == "stock":
        raise StockEncoderError(f"no stock CTranslate2 in {stock_dir()}; run `make stock-encoder`")
    return "fork", (f"the fork's own encoder, in process: no stock CTranslate2 in {stock_dir()} "
                    "(`make stock-encoder` installs it; it encodes faster)")


def build_engine(fw_model, model_path: str, compute_type: str, decoder: str | None = "auto",
                 encoder: str = "auto", *, cpu_threads: int, exact: bool = False, **load_kwargs) -> tuple[str, str]:
    """Give faster-whisper model ``fw_model`` the encoder and decoder this configuration asks for.

    ``fw_model.model`` (the fork's model at ``compute_type``) stays the decoder
    when ``decoder`` resolves to ``compute_type`` and the encoder when the fork
    encodes; otherwise it becomes a :class:`SplitEngine`. Returns the decoder's
    compute type and the encoder's engine (``"fork"`` or ``"stock"``).
    """
    decoder_type = decoder_compute_type(compute_type, decoder, exact)
    fork = fw_model.model
    on_cpu = getattr(fork, "device", "cpu") == "cpu"
    encoder_engine, reason = choose_encoder(encoder) if on_cpu else ("fork", "not on the CPU")
    dec = fork if decoder_type == compute_type else load_decoder(model_path, decoder_type, cpu_threads=cpu_threads,
                                                                   **load_kwargs)
    enc = fork
    if encoder_engine == "stock":
        enc = StockEncoder(model_path, compute_type, cpu_threads, fallback=fork)
        logger.info("encoder: %s", reason)
    if enc is not dec:
        fw_model.model = SplitEngine(enc, dec)
    return decoder_type, encoder_engine
