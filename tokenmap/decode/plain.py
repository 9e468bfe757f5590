"""Plain decoding: CTranslate2's own ``generate`` and ``detect_language``, for the windows nobody drafts.

:class:`PlainDecoder` runs them on stock CTranslate2 in its worker
(:class:`tokenmap.runtime.stock_worker.StockWorker`) while the worker works and runs at the decoder's
precision; otherwise, and for a call the worker refuses, the fork's ``decoder`` runs them.
"""

from __future__ import annotations

import copy
import logging

from tokenmap.runtime.stock_worker import StockWorker, StockWorkerError, WorkerDied, WorkerHung

logger = logging.getLogger("tokenmap")


class PlainDecoder:
    """``generate`` and ``detect_language`` on :attr:`engine` (module docstring); ``held``: the worker's handle
    on the encoder output it holds, when that is the output decoded (:meth:`on`)."""

    held: int | None = None

    def __init__(self, decoder, worker: StockWorker | None = None, compute_type: str | None = None):
        self.decoder = decoder
        self.worker = worker
        self.compute_type = compute_type

    def on(self, held: int | None) -> "PlainDecoder":
        """This decoder for encoder output whose copy the worker holds as ``held`` (None: none)."""
        bound = copy.copy(self)
        bound.held = held
        return bound

    @property
    def engine(self) -> str:
        """Where plain ``generate`` runs: ``"stock"`` (the worker, while it works) or ``"fork"``."""
        stock = self.worker is not None and self.worker.healthy
        return "stock" if stock and self.worker.compute_type == self.compute_type else "fork"

    def generate(self, features, prompts, **kwargs):
        """CTranslate2's ``generate`` on :attr:`engine`; the fork's when the worker fails."""
        return self._run("generate", features, prompts, **kwargs)

    def detect_language(self, features):
        """CTranslate2's ``detect_language`` on :attr:`engine`; the fork's when the worker fails."""
        return self._run("detect_language", features)

    def _run(self, method: str, *args, **kwargs):
        """``method`` of the worker's stock engine while it works (one refused call, or a dead or hung
        worker, goes to the fork: the call, or every call from then on)."""
        if self.engine == "stock":
            try:
                return getattr(self.worker, method)(*args, held=self.held, **kwargs)
            except (WorkerDied, WorkerHung) as exc:
                self.worker.give_up(str(exc))
            except StockWorkerError as exc:  # the worker is fine; this call's options were refused there
                logger.warning("stock CTranslate2 refused a %s call (%s); running it on the fork", method, exc)
        return getattr(self.decoder, method)(*args, **kwargs)

    def wait_ready(self) -> None:
        """Block until the worker has loaded its model (it loads while the caller goes on). A failed start is
        left to the first call, which then runs on the fork."""
        if self.worker is not None and self.worker.healthy:
            try:
                self.worker.wait_ready()
            except (StockWorkerError, OSError, WorkerDied, WorkerHung) as exc:
                logger.debug("stock worker not ready (%s); the first call decides", exc)
