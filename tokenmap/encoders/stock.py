"""Stock CTranslate2's encoder: the encoder room's face of :class:`tokenmap.runtime.stock_worker.StockWorker`."""

from __future__ import annotations

import logging

from tokenmap.encoders.base import Encoder, Output
from tokenmap.runtime.stock_worker import StockEncoderError, StockWorker

logger = logging.getLogger("tokenmap")


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
            except (StockEncoderError, OSError, ValueError) as exc:
                if self.fallback is None:
                    raise
                self.worker.failed = str(exc)
                logger.warning("the stock encoder worker failed (%s); encoding with the fork from now on", exc)
                self.worker.close()
        if self.fallback is None:
            raise StockEncoderError(f"the stock worker was given up: {self.worker.failed}")
        return Output(self.fallback.encode(features))

    def describe(self) -> str:
        version = self.worker.version or "(not started yet)"
        return f"ctranslate2 {version} (stock, worker process), {self.precision}"

    def close(self) -> None:
        self.worker.close()
