"""Several encoders behind one ``encode``: :class:`RoutedEncoder` sends each call to the engine of its length.

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

import numpy as np

from tokenmap.encoders.base import Encoder, Output


class RoutedEncoder(Encoder):
    """Each ``encode`` on the first of ``routes`` (``(max_frames, encoder)``, ascending) its frames fit."""

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
