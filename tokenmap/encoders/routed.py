"""The encoders an :class:`~tokenmap.encoders.choice.EncoderPlan` asks for, behind one ``encode``.

A plan may give short windows to one engine and 30 s windows to another (whichever measured faster at
each length); :class:`RoutedEncoder` sends each call to the engine of its frame count.

Example::

    >>> from tokenmap.encoders.base import Encoder
    >>> class Named(Encoder):
    ...     def __init__(self, name): self.engine, self.precision = name, "f32"
    ...     def encode(self, features, to_cpu=False): return self.engine
    ...     def describe(self): return self.engine
    >>> import numpy as np
    >>> routed = RoutedEncoder([(2000, Named("short")), (3000, Named("long"))])
    >>> routed.encode(np.zeros((1, 80, 800))), routed.encode(np.zeros((1, 80, 3000)))
    ('short', 'long')
"""

from __future__ import annotations

import logging

import numpy as np

from tokenmap.encoders.base import CTranslate2Encoder, Encoder
from tokenmap.encoders.choice import EncoderPlan

logger = logging.getLogger("tokenmap")


class RoutedEncoder(Encoder):
    """Each ``encode`` on the first of ``routes`` (``(max_frames, encoder)``, ascending) its frames fit."""

    def __init__(self, routes):
        self.routes = list(routes)
        self.engine = "+".join(dict.fromkeys(e.engine for _, e in self.routes))
        self.precision = "+".join(dict.fromkeys(e.precision for _, e in self.routes))

    def for_frames(self, frames: int) -> Encoder:
        return next((enc for limit, enc in self.routes if frames <= limit), self.routes[-1][1])

    def encode(self, features, to_cpu: bool = False):
        frames = int(features.shape[-1]) if hasattr(features, "shape") else int(np.asarray(features).shape[-1])
        return self.for_frames(frames).encode(features, to_cpu=to_cpu)

    def describe(self) -> str:
        return "; ".join(f"up to {limit // 100} s: {enc.describe()}" for limit, enc in self.routes)

    def close(self) -> None:
        for _, enc in self.routes:
            enc.close()


def make_encoder(plan: EncoderPlan, model_dir, compute_type: str, threads: int, fork, stock=None) -> Encoder:
    """The :class:`Encoder` of ``plan``: ``fork`` (the ``ctranslate2.models.Whisper`` already loaded) for
    ``"fork"``, ``stock`` (a started :class:`~tokenmap.runtime.stock_worker.StockEncoder`) for ``"stock"``,
    an :class:`~tokenmap.encoders.openvino.OpenVINOEncoder` for ``"openvino"``."""
    from tokenmap.encoders.openvino import OpenVINOEncoder

    made: dict[tuple[str, str], Encoder] = {}
    routes = []
    for choice in plan.choices:
        key = (choice.engine, choice.precision)
        if key not in made:
            if choice.engine == "openvino":
                made[key] = OpenVINOEncoder(model_dir, choice.precision, threads)
            elif choice.engine == "stock":
                made[key] = stock
            else:
                made[key] = CTranslate2Encoder(fork, compute_type)
        routes.append((choice.max_frames, made[key]))
    return routes[0][1] if len(routes) == 1 else RoutedEncoder(routes)
