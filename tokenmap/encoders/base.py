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
    >>> import numpy as np
    >>> Zeros().encode(np.zeros((1, 80, 3000)))
    (1, 80, 3000)
"""

from __future__ import annotations

import abc
from typing import NamedTuple

import numpy as np

from tokenmap.runtime.stock_worker import StockWorker, StockWorkerError


class Output(NamedTuple):
    """Encoder output: ``view``, ``[batch, frames / 2, d_model]`` as a float32 ``ctranslate2.StorageView``, and
    ``held``, the engine's handle on a copy of it that the engine holds (stock CTranslate2's worker decodes
    from that copy: :meth:`tokenmap.runtime.stock_worker.StockWorker.encode_held`), or None."""

    view: object
    held: int | None = None


class Choice(NamedTuple):
    """Engine (``"openvino"``, ``"stock"`` or ``"fork"``) and precision for windows up to ``max_frames``."""

    engine: str
    precision: str
    max_frames: int = 3000


def describe(choices) -> str:
    """The one name of what encodes (doctor, the CLI, the log): each :class:`Choice`, limited where several are.

    >>> describe([Choice("stock", "int8", 2000), Choice("openvino", "f32")])
    'ctranslate2 stock int8 up to 20 s, openvino f32 up to 30 s'
    """
    several = len(choices) > 1
    return ", ".join(("ctranslate2 " if c.engine in ("fork", "stock") else "") + f"{c.engine} {c.precision}"
                     + (f" up to {c.max_frames // 100} s" if several else "") for c in choices)


class Encoder(abc.ABC):
    """An encoder engine: ``engine`` names the runtime, ``precision`` the arithmetic it encodes in."""

    engine: str
    precision: str

    def choices(self) -> tuple[Choice, ...]:
        """What encodes which window lengths: this engine all of them (:func:`describe` names them)."""
        return (Choice(self.engine, self.precision),)

    @abc.abstractmethod
    def encode(self, features, to_cpu: bool = False):
        """Encoder output of ``features`` (``[batch, n_mels, frames]``) as a ``ctranslate2.StorageView``."""

    def encode_held(self, features) -> Output:
        """:meth:`encode`'s output with the engine's handle on the copy it holds (none here)."""
        return Output(self.encode(features))

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


class StockEncoder(Encoder):
    """``encode`` by stock CTranslate2 in ``worker`` (default: a worker started here from ``model_dir``,
    ``compute_type``, ``threads`` and ``options``). ``fallback`` (optional, e.g. the fork's model): if the
    worker fails, it is given up (:meth:`~tokenmap.runtime.stock_worker.StockWorker.give_up`) and every later
    ``encode`` runs on the fallback."""

    engine = "stock"

    def __init__(self, model_dir=None, compute_type: str = "int8", threads: int = 2, *,
                 worker: StockWorker | None = None, fallback=None, **options):
        self.worker = worker if worker is not None else StockWorker(model_dir, compute_type, threads, **options)
        self.precision = self.worker.compute_type
        self.fallback = fallback

    def encode(self, features, to_cpu: bool = False):
        return self.encode_held(features).view

    def encode_held(self, features) -> Output:
        """The worker's output and its handle on the copy it holds; the fallback's (no handle) once it failed."""
        if self.worker.healthy or self.fallback is None:
            try:
                return Output(*self.worker.encode_held(features))
            except (StockWorkerError, OSError, ValueError) as exc:
                if self.fallback is None:
                    raise
                self.worker.give_up(str(exc))
        return Output(self.fallback.encode(features))

    def close(self) -> None:
        self.worker.close()


class RoutedEncoder(Encoder):
    """Each ``encode`` on the first of ``routes`` (``(max_frames, encoder)``, ascending) its frames fit.

    >>> class Named(Encoder):
    ...     def __init__(self, name): self.engine, self.precision = name, "f32"
    ...     def encode(self, features, to_cpu=False): return self.engine
    >>> routed = RoutedEncoder([(2000, Named("short")), (3000, Named("long"))])
    >>> routed.encode(np.zeros((1, 80, 800))), routed.encode(np.zeros((1, 80, 3000)))
    ('short', 'long')
    """

    def __init__(self, routes):
        self.routes = list(routes)
        self.engine = "+".join(dict.fromkeys(e.engine for _, e in self.routes))
        self.precision = "+".join(dict.fromkeys(e.precision for _, e in self.routes))

    def choices(self) -> tuple[Choice, ...]:
        return tuple(Choice(enc.engine, enc.precision, limit) for limit, enc in self.routes)

    def _route(self, features) -> Encoder:
        frames = np.shape(features)[-1]
        return next((enc for limit, enc in self.routes if frames <= limit), self.routes[-1][1])

    def encode(self, features, to_cpu: bool = False):
        return self._route(features).encode(features, to_cpu=to_cpu)

    def encode_held(self, features) -> Output:
        return self._route(features).encode_held(features)

    def close(self) -> None:
        for _, enc in self.routes:
            enc.close()
