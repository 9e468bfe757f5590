"""The encoder room: every engine that encodes Whisper's windows, and the one door to it, :func:`open_encoder`.

Its engines answer one interface (:class:`~tokenmap.encoders.base.Encoder`): OpenVINO
(:mod:`~tokenmap.encoders.openvino`), the fork in process (:class:`~tokenmap.encoders.base.CTranslate2Encoder`)
and stock CTranslate2 in its worker (:class:`~tokenmap.encoders.base.StockEncoder`).
:mod:`~tokenmap.encoders.choice` decides which of them encodes each window length on this CPU and
names the engines (:data:`ENCODERS`); :mod:`~tokenmap.encoders.report` is ``tokenmap doctor``'s line.
"""

from __future__ import annotations

import logging

from tokenmap.encoders.base import CTranslate2Encoder, Encoder, Output, RoutedEncoder, StockEncoder
from tokenmap.encoders.choice import ENCODERS, choose, plan_summary
from tokenmap.encoders.openvino import OpenVINOEncoder

__all__ = ["ENCODERS", "Encoder", "Output", "open_encoder"]

logger = logging.getLogger("tokenmap")


def open_encoder(requested: str, model_dir, compute_type: str, threads: int, fork, worker=None) -> Encoder:
    """The :class:`Encoder` this CPU should use for ``requested`` (one of :data:`ENCODERS`): ``fork``, the fork's
    model loaded at ``compute_type``, encodes off the CPU and where it is chosen or the worker fails;
    ``worker`` (a started :class:`~tokenmap.runtime.stock_worker.StockWorker`, or None) where ``"stock"`` is."""
    if getattr(fork, "device", "cpu") != "cpu":
        return CTranslate2Encoder(fork, compute_type)
    stock = StockEncoder(worker=worker, fallback=fork) if worker is not None else None
    plan = choose(requested, model_dir, compute_type, threads)
    logger.info("encoder: %s", plan_summary(plan))
    made: dict[tuple[str, str], Encoder] = {}
    routes = []
    for choice in plan.choices:
        key = (choice.engine, choice.precision)
        if key not in made:
            if choice.engine == "openvino":
                made[key] = OpenVINOEncoder(model_dir, choice.precision, threads)
            elif choice.engine == "stock" and stock is not None:
                made[key] = stock
            else:
                made[key] = CTranslate2Encoder(fork, compute_type)
        routes.append((choice.max_frames, made[key]))
    return routes[0][1] if len(routes) == 1 else RoutedEncoder(routes)
