"""Encoder and decoder precision: an int8 encoder with a float32 decoder.

Map decoding verifies a draft in one batched decoder pass and keeps what the
model's own argmax agrees with. At float32 the batched logits equal the
step-wise ones, so the map changes speed and nothing else. At int8 they do not
(the GEMM kernel picks a different blocking for several rows than for one), so
near-ties flip and a few transcripts differ from plain decoding.

The encoder runs once per window and holds most of the int8 speed gain; the
decoder's steps cost about the same at float32 as at int8 on the CPUs measured
(docs/BENCHMARKS.md). So ``decoder_compute_type="auto"`` (the default) keeps
the requested int8 for the encoder and decodes with a float32 copy of the same
model: exact, at a small price in decoder speed and memory. ``"same"`` decodes
at the encoder's compute type (int8 throughout: faster, not identical).

:class:`SplitEngine` routes ``encode`` to one ``ctranslate2.models.Whisper``
and every decoder call (``generate``, ``detect_language``, ``align`` and the
fork's step API) to the other; the encoder output is an ordinary float32
``StorageView`` that either model accepts.

Example::

    >>> decoder_compute_type("int8")
    'float32'
    >>> decoder_compute_type("int8", "same"), decoder_compute_type("float32")
    ('int8', 'float32')
"""

from __future__ import annotations

import logging

from tokenmap.stock_encoder import StockEncoder, StockEncoderError, stock_dir, stock_installed

logger = logging.getLogger("tokenmap")

#: compute types whose batched decoder logits depart from step logits (quantized GEMM)
QUANTIZED = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16")
CHOICES = ("auto", "same", "float32", "int8")
ENCODERS = ("auto", "fork", "stock")
#: what the stock encoder gains, as measured (docs/BENCHMARKS.md, "Engine: encoder gap")
STOCK_GAIN = ("with tokenmap's memory policy in both, encodes 1.02x faster than the fork in process, IPC "
              "included, and 1.03x end to end on short commands (1.2-1.3x and 1.11x without the policy)")


def decoder_compute_type(compute_type: str, requested: str | None = "auto") -> str:
    """The decoder's compute type for an encoder at ``compute_type``.

    ``auto`` (or None): float32 when ``compute_type`` is quantized, else
    ``compute_type``; ``same``: ``compute_type``; anything else is used as given.
    """
    if requested in (None, "auto"):
        return "float32" if compute_type in QUANTIZED else compute_type
    if requested == "same":
        return compute_type
    return requested


def describe(compute_type: str, requested: str | None = "auto") -> str:
    """One line for ``tokenmap doctor``: which precision decodes, and why."""
    decoder = decoder_compute_type(compute_type, requested)
    if decoder == compute_type and compute_type in QUANTIZED:
        return (f"{compute_type} encoder and decoder (--decoder-compute-type same): fastest, but batched "
                f"{compute_type} logits differ from step logits, so a few map transcripts differ from plain decoding")
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
    its output is bit-identical and it encodes faster (docs/BENCHMARKS.md).
    """
    if requested == "fork":
        return "fork", "the fork's own encoder, in process (asked for)"
    if requested not in ("auto", "stock"):
        raise ValueError(f"encoder must be one of {', '.join(ENCODERS)}, not {requested!r}")
    if stock_installed():
        return "stock", (f"stock CTranslate2 in a worker process ({stock_dir()}): {STOCK_GAIN}, "
                         "bit-identical encoder output")
    if requested == "stock":
        raise StockEncoderError(f"no stock CTranslate2 in {stock_dir()}; run `make stock-encoder`")
    return "fork", (f"the fork's own encoder, in process: no stock CTranslate2 in {stock_dir()} "
                    "(`make stock-encoder` installs it; it encodes faster)")


def build_engine(fw_model, model_path: str, compute_type: str, decoder: str | None = "auto",
                 encoder: str = "auto", *, cpu_threads: int, **load_kwargs) -> tuple[str, str]:
    """Give faster-whisper model ``fw_model`` the encoder and decoder this configuration asks for.

    ``fw_model.model`` (the fork's model at ``compute_type``) stays the decoder
    when ``decoder`` resolves to ``compute_type`` and the encoder when the fork
    encodes; otherwise it becomes a :class:`SplitEngine`. Returns the decoder's
    compute type and the encoder's engine (``"fork"`` or ``"stock"``).
    """
    decoder_type = decoder_compute_type(compute_type, decoder)
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
