"""Stock CTranslate2 in a worker process: ``encode``, ``generate`` and ``detect_language`` through shared memory.

Stock CTranslate2 (the engine stock faster-whisper runs) and the fork cannot share one process.
:class:`StockWorker` starts :mod:`tokenmap.runtime.stock_worker_child` with a private copy of stock
CTranslate2 (``make stock-encoder`` installs it into :func:`stock_dir`) first on ``PYTHONPATH``. Its
``encode`` serves :class:`tokenmap.encoders.base.StockEncoder`; its ``generate`` and ``detect_language``
serve :class:`tokenmap.decode.plain.PlainDecoder`, on the output it keeps from its last encode
(:meth:`StockWorker.encode_held`). A worker that dies is replaced once in a call; one that does not answer
within ``timeout`` (:func:`encoder_timeout`) is killed; giving up raises :class:`StockWorkerError`, and its
users go on with the fork. A worker whose owner dies removes the shared-memory blocks and exits; after
``os.fork()`` the child starts its own. The blocks bypass ``multiprocessing``'s resource tracker (one killed
with the worker would be restarted empty and print a traceback for every block removed later).
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import weakref
from contextlib import suppress
from pathlib import Path

import numpy as np

from tokenmap.runtime.engine import GenerationResult
from tokenmap.runtime.memory import worker_environment
from tokenmap.runtime.worker import (  # noqa: F401 (the worker's errors are this module's too)
    TIMEOUT_ENV,
    SharedBlock,
    StockWorkerError,
    Worker,
    WorkerDied,
    WorkerHung,
)

logger = logging.getLogger("tokenmap")


CHILD = Path(__file__).with_name("stock_worker_child.py")
MAX_D_MODEL = 1280  # Whisper large; the output block is sized for it
DEFAULT_TIMEOUT = 120.0  # seconds a 30 s window may take (about 1 s for base on two cores)


def stock_dir() -> Path:
    """``$TOKENMAP_STOCK_CT2`` or ``$XDG_CACHE_HOME/tokenmap/stock-ct2`` (``make stock-encoder``)."""
    if os.environ.get("TOKENMAP_STOCK_CT2"):
        return Path(os.environ["TOKENMAP_STOCK_CT2"])
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(root) / "tokenmap" / "stock-ct2"


def stock_installed(directory: Path | None = None) -> bool:
    """True when ``directory`` (default :func:`stock_dir`) holds a stock ``ctranslate2`` package."""
    return ((directory or stock_dir()) / "ctranslate2" / "__init__.py").is_file()


def encoder_timeout(seconds: float | None = None) -> float:
    """Seconds the worker may take a window: ``seconds``, else ``$TOKENMAP_ENCODER_TIMEOUT``, else the default.

    >>> encoder_timeout(5), encoder_timeout(None) > 10
    (5.0, True)
    """
    if seconds is not None:
        if not (isinstance(seconds, (int, float)) and 0 < seconds < math.inf):
            raise ValueError(f"timeout must be a positive number of seconds, not {seconds!r}")
        return float(seconds)
    raw = os.environ.get(TIMEOUT_ENV)
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        logger.warning("%s=%r is not a positive number of seconds; using %g", TIMEOUT_ENV, raw, DEFAULT_TIMEOUT)
        return DEFAULT_TIMEOUT
    return value


_LIVE: "weakref.WeakSet[StockWorker]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for encoder in list(_LIVE):
        encoder._forget_inherited()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class StockWorker:
    """Stock CTranslate2 in a worker process (one request at a time; thread-safe), which loads its model while
    the caller goes on. ``timeout``: :func:`encoder_timeout`."""

    def __init__(self, model_dir, compute_type: str = "int8", threads: int = 2, directory: Path | None = None,
                 timeout: float | None = None):
        directory = Path(directory or stock_dir())
        if not stock_installed(directory):
            raise StockWorkerError(f"no stock CTranslate2 in {directory}; run `make stock-encoder`")
        self.timeout = encoder_timeout(timeout)
        # the thread wait and heap policies (tokenmap.runtime.threads, memory), read at the worker's start
        self._env = dict(worker_environment(),
                         PYTHONPATH=os.pathsep.join([str(directory), os.environ.get("PYTHONPATH", "")]))
        self.compute_type = self.precision = compute_type
        self._argv = [sys.executable, str(CHILD), str(model_dir), compute_type, str(threads)]
        self._lock = threading.Lock()
        self._blocks: dict[str, SharedBlock] = {}
        self._closed = False
        self.failed: str | None = None  # why the worker was given up, once it was
        self.version: str | None = None  # stock CTranslate2's version, once the worker is ready
        self._worker: Worker | None = Worker(self._argv, self._env)
        self._encodes = 0  # encodes so far: each one's number is its handle (encode_held)
        self._holds: int | None = None  # the handle of the output the current worker keeps
        _LIVE.add(self)

    @property
    def healthy(self) -> bool:
        """True until the worker is given up."""
        return self.failed is None

    def give_up(self, reason: str) -> None:
        """Stop the worker for good (the first ``reason`` is logged once): its users run the fork instead."""
        if self.failed is None:
            self.failed = reason
            logger.warning("the stock worker failed (%s); the fork encodes and decodes from now on", reason)
        self.close()

    @property
    def _proc(self):
        """The current worker's ``Popen`` (None before a forked child's first call)."""
        return self._worker.proc if self._worker is not None else None

    def wait_ready(self) -> str:
        """Wait until the worker has loaded its model; its CTranslate2 version."""
        with self._lock:
            return self._ready()

    def _ready(self) -> str:
        if self._closed:
            raise StockWorkerError(f"the stock worker was given up: {self.failed}" if self.failed else
                                   "the stock encoder is closed")
        if self._worker is None:
            self._new_worker()
        worker = self._worker
        if worker.version is None:
            hello = worker.receive(self.timeout)
            if not hello.get("ready"):
                raise StockWorkerError(f"stock encoder worker did not start: {hello.get('error', hello)}")
            worker.version = self.version = str(hello["version"])
            logger.info("encoder: stock CTranslate2 %s in worker process %d", self.version, worker.pid)
        return worker.version

    def _block(self, kind: str, size: int) -> SharedBlock:
        block = self._blocks.get(kind)
        if block is None or block.size < size:
            if block is not None:
                block.close()
                block.unlink()
            block = self._blocks[kind] = SharedBlock(size)
        return block

    def _new_worker(self) -> None:
        self._worker, self._holds = Worker(self._argv, self._env), None

    def encode(self, features):
        """Encoder output of ``features`` (StorageView or array, [batch, n_mels, frames]) as a StorageView."""
        return self.encode_held(features)[0]

    def encode_held(self, features) -> tuple:
        """:meth:`encode`'s output and its handle: the worker holds a copy of the output it encoded last,
        which :meth:`generate` and :meth:`detect_language` given that handle decode from."""
        import ctranslate2  # the fork, in this process; loaded when a window is first encoded

        array = np.ascontiguousarray(np.asarray(features), dtype=np.float32)
        if array.ndim == 2:
            array = array[None]
        if array.ndim != 3 or not array.size:
            raise ValueError(f"features of shape {array.shape}, not [batch, n_mels, frames]")
        with self._lock:
            view = ctranslate2.StorageView.from_array(self._request(array))
            self._encodes += 1
            self._holds = self._encodes
            return view, self._holds

    def _request(self, array: np.ndarray) -> np.ndarray:
        """Send ``array`` to the worker to encode and copy its answer out."""
        self._ready()  # a closed or given-up worker takes no new blocks
        dst = self._block("out", array.shape[0] * (array.shape[2] // 2 + 1) * MAX_D_MODEL * 4)

        def message():
            return dict(self._send_array(array), out=dst.name)

        answer = self._exchange(message, self.timeout * array.shape[0])
        shape = answer.get("shape")
        if not (isinstance(shape, list) and len(shape) == 3 and all(type(s) is int and s > 0 for s in shape)
                and shape[0] == array.shape[0] and math.prod(shape) * 4 <= dst.size):
            raise StockWorkerError(f"stock encoder worker answered a bad shape: {shape!r}")
        return np.ndarray(tuple(shape), dtype=np.float32, buffer=dst.buf).copy()

    def _send_array(self, array: np.ndarray) -> dict:
        src = self._block("in", array.nbytes)
        np.ndarray(array.shape, dtype=np.float32, buffer=src.buf)[...] = array
        return {"in": src.name, "shape": list(array.shape)}

    def _exchange(self, message, timeout: float) -> dict:
        """The worker's answer to ``message()`` (built for the current worker); a worker that had started
        and died is replaced once. Holds no lock: the caller does."""
        self._ready()
        for attempt in (1, 2):
            try:
                self._worker.send(message())
                answer = self._worker.receive(timeout)
                break
            except WorkerDied as exc:
                if attempt == 2:
                    raise
                logger.warning("%s; starting a new one", str(exc).replace("; see its stderr above", ""))
                self._new_worker()
                self._ready()
        if "error" in answer:
            raise StockWorkerError(f"stock CTranslate2 failed in its worker: {answer['error']}")
        return answer

    def generate(self, features, prompts, held: int | None = None, **options) -> list[GenerationResult]:
        """Stock CTranslate2's ``generate`` in the worker, on its own copy of the output whose handle is ``held``
        (:meth:`encode_held`) while it holds it, else on ``features`` sent through shared memory. Raises
        :class:`StockWorkerError` (one line) when the worker fails or has failed before."""
        request = {"op": "generate", "prompts": [[int(t) for t in p] for p in prompts], "options": options}
        results = self._on_worker(features, request, len(prompts), held)
        return [GenerationResult(r["sequences_ids"], r.get("scores") or [], r.get("no_speech_prob") or 0.0)
                for r in results]

    def detect_language(self, features, held: int | None = None) -> list[list[tuple[str, float]]]:
        """Stock CTranslate2's ``detect_language`` in the worker (``features`` and ``held`` as for
        :meth:`generate`): per batch row, ``(language token, probability)`` pairs, most probable first."""
        results = self._on_worker(features, {"op": "detect_language"}, int(features.shape[0]), held)
        return [[(str(token), float(prob)) for token, prob in row] for row in results]

    def _on_worker(self, features, request: dict, rows: int, held: int | None) -> list:
        """The worker's ``results`` for ``request`` on ``features`` (or its copy of ``held``)."""
        def message():
            if held is not None and held == self._holds:
                return request
            return dict(request, **self._send_array(np.ascontiguousarray(np.asarray(features), dtype=np.float32)))

        with self._lock:  # another thread's encode replaces what the worker keeps: decide under the lock
            answer = self._exchange(message, self.timeout)
        results = answer.get("results")
        if not isinstance(results, list) or len(results) != rows:
            raise StockWorkerError(f"stock worker answered {len(results or [])} results for {rows} rows")
        return results

    def _forget_inherited(self) -> None:
        """In a child made by ``os.fork``: let go of the parent's worker and blocks without stopping or
        removing them (the parent still uses them); the next ``encode`` starts a worker here."""
        self._lock = threading.Lock()  # another thread may have held it at the fork
        self._holds = None
        if self._worker is not None:
            self._worker.abandon()
            self._worker = None
        for block in self._blocks.values():
            block.close()
        self._blocks = {}

    def close(self) -> None:
        """Stop the worker and free the shared memory (also at garbage collection)."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ failed early
            return
        with lock:
            self._closed = True
            if self._worker is not None:
                self._worker.stop()
            for block in self._blocks.values():
                block.close()
                block.unlink()
            self._blocks = {}

    def __del__(self):
        with suppress(Exception):  # interpreter shutdown
            self.close()
