"""The one interface every encoder engine answers: ``encode(features) -> encoder output``.

Whisper's decoder calls (``generate``, ``detect_language``, ``align``, the fork's ``prefill``) take encoder
output ``[batch, frames / 2, d_model]`` as a float32 ``ctranslate2.StorageView`` from any engine, so the
encoder can run on another runtime than the decoder: OpenVINO
(:class:`tokenmap.encoders.openvino.OpenVINOEncoder`), the fork in process (:class:`CTranslate2Encoder`) or
stock CTranslate2 in its worker (:class:`tokenmap.encoders.stock.StockEncoder`).

Example::

    >>> class Zeros(Encoder):
    ...     engine, precision = "zeros", "f32"
    ...     def encode(self, features, to_cpu=False):
    ...         return features.shape
    ...     def describe(self):
    ...         return "zeros"
    >>> import numpy as np
    >>> Zeros().encode(np.zeros((1, 80, 3000)))
    (1, 80, 3000)
"""

from __future__ import annotations

import abc
from typing import NamedTuple


class Output(NamedTuple):
    """Encoder output: ``view``, ``[batch, frames / 2, d_model]`` as a float32 ``ctranslate2.StorageView``, and
    ``kept``, the engine's handle on a copy of it that the engine keeps (stock CTranslate2's worker decodes
    from that copy: :meth:`tokenmap.runtime.stock_worker.StockWorker.encode_kept`), or None."""

    view: object
    kept: int | None = None


class Encoder(abc.ABC):
    """An encoder engine: ``engine`` names the runtime, ``precision`` the arithmetic it encodes in."""

    engine: str
    precision: str

    @abc.abstractmethod
    def encode(self, features, to_cpu: bool = False):
        """Encoder output of ``features`` (``[batch, n_mels, frames]``) as a ``ctranslate2.StorageView``."""

    def encode_kept(self, features) -> Output:
        """:meth:`encode`'s output with the engine's handle on the copy it keeps (none here)."""
        return Output(self.encode(features))

    @abc.abstractmethod
    def describe(self) -> str:
        """One line for ``tokenmap doctor``: the runtime, its version and precision."""

    def close(self) -> None:
        """Free what the engine holds outside this process (nothing, unless it says otherwise)."""


class CTranslate2Encoder(Encoder):
    """``model.encode`` of a ``ctranslate2.models.Whisper`` loaded in this process (the fork's)."""

    engine = "fork"

    def __init__(self, model, compute_type: str):
        self.model = model
        self.precision = compute_type

    def encode(self, features, to_cpu: bool = False):
        return self.model.encode(features, to_cpu=to_cpu)

    def describe(self) -> str:
        import ctranslate2

        return f"ctranslate2 {ctranslate2.__version__} (the fork, in process), {self.precision}"
