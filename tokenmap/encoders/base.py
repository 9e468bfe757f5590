"""The one interface every encoder engine answers: ``encode(features) -> encoder output``.

Whisper's decoder calls (``generate``, ``detect_language``, ``align``, the fork's ``prefill``) take encoder
output ``[batch, frames / 2, d_model]`` as a float32 ``ctranslate2.StorageView`` from any engine, so the
encoder can run on another runtime than the decoder: OpenVINO
(:class:`tokenmap.encoders.openvino.OpenVINOEncoder`), the fork in process (:class:`CTranslate2Encoder`) or
stock CTranslate2 in its worker (:class:`StockEncoder`); :class:`RoutedEncoder` puts several behind one ``encode``.

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
import logging
from typing import NamedTuple

import numpy as np

from tokenmap.runtime.stock_worker import StockWorker, StockWorkerError

logger = logging.getLogger("tokenmap")


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


class StockEncoder(Encoder):
    """``encode`` by stock CTranslate2 in ``worker`` (default: a worker started here from ``model_dir``,
    ``compute_type``, ``threads`` and ``options``). ``fallback`` (optional, e.g. the fork's model): if the
    worker fails, one warning is logged and every later ``encode`` runs on it."""

    engine = "stock"

    def __init__(self, model_dir=None, compute_type: str = "int8", threads: int = 2, *,
                 worker: StockWorker | None = None, fallback=None, **options):
        self.worker = worker if worker is not None else StockWorker(model_dir, compute_type, threads, **options)
        self.precision = self.worker.compute_type
        self.fallback = fallback

    def encode(self, features, to_cpu: bool = False):
        return self.encode_kept(features).view

    def encode_kept(self, features) -> Output:
        """The worker's output and its handle on the copy it keeps; the fallback's (no handle) once it failed."""
        if self.worker.failed is None:
            try:
                return Output(*self.worker.encode_kept(features))
            except (StockWorkerError, OSError, ValueError) as exc:
                if self.fallback is None:
                    raise
                self.worker.failed = str(exc)
                logger.warning("the stock encoder worker failed (%s); encoding with the fork from now on", exc)
                self.worker.close()
        if self.fallback is None:
            raise StockWorkerError(f"the stock worker was given up: {self.worker.failed}")
        return Output(self.fallback.encode(features))

    def describe(self) -> str:
        version = self.worker.version or "(not started yet)"
        return f"ctranslate2 {version} (stock, worker process), {self.precision}"

    def close(self) -> None:
        self.worker.close()


class RoutedEncoder(Encoder):
    """Each ``encode`` on the first of ``routes`` (``(max_frames, encoder)``, ascending) its frames fit.

    >>> class Named(Encoder):
    ...     def __init__(self, name): self.engine, self.precision = name, "f32"
    ...     def encode(self, features, to_cpu=False): return self.engine
    ...     def describe(self): return self.engine
    >>> routed = RoutedEncoder([(2000, Named("short")), (3000, Named("long"))])
    >>> routed.encode(np.zeros((1, 80, 800))), routed.encode(np.zeros((1, 80, 3000)))
    ('short', 'long')
    """

    def __init__(self, routes):
        self.routes = list(routes)
        self.engine = "+".join(dict.fromkeys(e.engine for _, e in self.routes))
        self.precision = "+".join(dict.fromkeys(e.precision for _, e in self.routes))

    def _route(self, features) -> Encoder:
        frames = np.shape(features)[-1]
        return next((enc for limit, enc in self.routes if frames <= limit), self.routes[-1][1])

    def encode(self, features, to_cpu: bool = False):
        return self._route(features).encode(features, to_cpu=to_cpu)

    def encode_kept(self, features) -> Output:
        return self._route(features).encode_kept(features)

    def describe(self) -> str:
        return "; ".join(f"up to {limit // 100} s: {enc.describe()}" for limit, enc in self.routes)

    def close(self) -> None:
        for _, enc in self.routes:
            enc.close()
