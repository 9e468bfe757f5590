"""The encoder room: :func:`open_worker` decides whether stock CTranslate2's worker runs, :func:`open_encoder`
builds the encoder, :func:`describe` names it. :mod:`.base`: the interface, the fork's and stock CTranslate2's
encoders, several by window length, and the one text that names them; :mod:`.openvino` (with
:mod:`.openvino_graph`, :mod:`.modelbin`, :mod:`.quantize`): OpenVINO; :mod:`.choice`: which engine encodes each
window length on this CPU (timed in a child by :mod:`.timing`); :mod:`.report`: ``tokenmap doctor``'s line.
"""

from __future__ import annotations

import logging

from tokenmap.encoders.base import CTranslate2Encoder, Encoder, Output, RoutedEncoder, StockEncoder, describe
from tokenmap.encoders.choice import ENCODERS, choose, plan_summary
from tokenmap.encoders.openvino import OpenVINOEncoder
from tokenmap.runtime.stock_worker import StockWorker, stock_installed

__all__ = ["ENCODERS", "Encoder", "Output", "describe", "open_encoder", "open_worker"]

logger = logging.getLogger("tokenmap")


def open_worker(requested: str, model_dir, compute_type: str, threads: int, fork) -> StockWorker | None:
    """Stock CTranslate2's worker, started, wherever it is installed and ``fork`` runs on the CPU, unless
    ``requested`` is ``"fork"``: it decodes the windows nobody drafts, and encodes where it is chosen to."""
    if getattr(fork, "device", "cpu") != "cpu" or requested == "fork" or not stock_installed():
        return None
    return StockWorker(model_dir, compute_type, threads)


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
