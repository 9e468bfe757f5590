"""The decoder's precision: fast by default, exact on request.

At float32 a batched verify pass gives the step-wise logits, so the map changes speed and nothing else; at
int8 the GEMM blocks several rows differently from one, so near-ties flip and some transcripts differ from
plain decoding by a word. ``decoder_compute_type="auto"`` decodes at the model's compute type (the fastest);
with ``exact=True`` a quantized model decodes with a float32 copy, whose output equals plain greedy decoding.
``"same"``, ``"float32"`` and ``"int8"`` choose explicitly.

Example::

    >>> decoder_compute_type("int8"), decoder_compute_type("int8", exact=True)
    ('int8', 'float32')
    >>> decoder_compute_type("int8", "same", exact=True), decoder_compute_type("float32")
    ('int8', 'float32')
"""

from __future__ import annotations

import logging

logger = logging.getLogger("tokenmap")

#: compute types whose batched decoder logits depart from step logits (quantized GEMM)
QUANTIZED = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16")


def decoder_compute_type(compute_type: str, requested: str | None = "auto", exact: bool = False) -> str:
    """The decoder's compute type for a model at ``compute_type``: ``requested`` as given, except ``"same"``
    and ``"auto"`` (or None): ``compute_type``, or float32 for a quantized one when ``exact``."""
    if requested in (None, "auto"):
        return "float32" if exact and compute_type in QUANTIZED else compute_type
    return compute_type if requested == "same" else requested


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


def load_decoder(model_path: str, compute_type: str, *, device: str = "auto", device_index=0,
                 cpu_threads: int = 0, num_workers: int = 1, **model_kwargs):
    """A second ``ctranslate2.models.Whisper`` of ``model_path`` at ``compute_type``, for decoding."""
    import ctranslate2  # the engine loads with the first model, not on ``import tokenmap``

    logger.info("decoder: %s at %s", model_path, compute_type)
    return ctranslate2.models.Whisper(model_path, device=device, device_index=device_index,
                                      compute_type=compute_type, intra_threads=cpu_threads,
                                      inter_threads=num_workers, **model_kwargs)
