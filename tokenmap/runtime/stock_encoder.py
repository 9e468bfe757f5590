"""Stock CTranslate2's encoder in a worker process, features and output through shared memory.

Stock CTranslate2's encoder is the one stock faster-whisper runs, and stock
CTranslate2 and the engine fork cannot be loaded into one process.
:class:`StockEncoder` starts :mod:`tokenmap.runtime.stock_encoder_child` with
a private copy of stock CTranslate2 first on ``PYTHONPATH`` (installed by
``make stock-encoder`` into :func:`stock_dir`; never fetched at run time) and
exposes ``encode(features) -> StorageView`` like ``ctranslate2.models.Whisper``,
so :class:`tokenmap.runtime.precision.SplitModel` can pair it with the fork's decoder.

What happens when things go wrong:

* The worker dies (killed by the OOM killer, crashed) after it had started:
  the request is sent again to a new worker, once; a second death in the
  same call gives up (see ``fallback``).
* The worker does not answer within ``timeout`` seconds a window (default
  :data:`DEFAULT_TIMEOUT`, or ``$TOKENMAP_ENCODER_TIMEOUT``; loading the model
  has the same limit): it is killed and the call gives up.
* Giving up: with a ``fallback`` (the fork's model), one warning is logged and
  every later ``encode`` runs on it; without, :class:`StockEncoderError` (one line).
* The process owning the encoder dies: the worker sees its stdin close (or its
  parent change), removes the shared-memory blocks and exits.
* ``os.fork()``: the child lets go of the parent's worker and blocks without
  touching them and starts a worker of its own at its first ``encode``.

The shared-memory blocks are created and removed without
``multiprocessing``'s resource tracker: the owner removes them in
:meth:`StockEncoder.close`, the worker when its owner is gone. A tracker that
was killed with the worker would otherwise be restarted empty and print a
``KeyError`` traceback for every block removed later.

Example::

    >>> enc = StockEncoder(model_dir, "int8", threads=2)          # doctest: +SKIP
    >>> out = enc.encode(features)   # StorageView [1, 1500, 512]  # doctest: +SKIP
    >>> enc.close()                                                # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import math
import mmap
import os
import secrets
import select
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import numpy as np

from tokenmap.runtime.memory import worker_environment
from tokenmap.runtime.threads import without_policy

logger = logging.getLogger("tokenmap")

CHILD = Path(__file__).with_name("stock_encoder_child.py")
MAX_D_MODEL = 1280  # Whisper large; the output block is sized for it
DEFAULT_TIMEOUT = 120.0  # seconds a 30 s window may take (about 1 s for base on two cores)
TIMEOUT_ENV = "TOKENMAP_ENCODER_TIMEOUT"


class StockEncoderError(RuntimeError):
    """The stock-encoder worker is not installed, did not start, or failed."""


class WorkerDied(StockEncoderError):
    """The worker exited or closed its pipe."""


class WorkerHung(StockEncoderError):
    """The worker did not answer in time (it has been killed)."""


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
    """Seconds the worker may take per window: ``seconds``, else ``$TOKENMAP_ENCODER_TIMEOUT``, else the default.

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


class SharedBlock:
    """A POSIX shared-memory block (``/dev/shm/psm_…`` on Linux) that no resource tracker knows of.

    ``name`` is what the worker attaches (without the leading slash), ``buf``
    the mapped bytes; :meth:`close` unmaps them, :meth:`unlink` removes the
    block (a block already removed is no error).
    """

    def __init__(self, size: int):
        import _posixshmem  # what multiprocessing.shared_memory itself uses

        while True:
            name = f"/psm_{secrets.token_hex(4)}"
            try:
                fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
                break
            except FileExistsError:
                continue
        try:
            os.ftruncate(fd, size)
            self._mmap = mmap.mmap(fd, size)
        except BaseException:
            _posixshmem.shm_unlink(name)
            raise
        finally:
            os.close(fd)
        self._name, self.size = name, size
        self.buf = memoryview(self._mmap)

    @property
    def name(self) -> str:
        return self._name.lstrip("/")

    def close(self) -> None:
        if self.buf is not None:
            self.buf.release()
            self.buf = None
            self._mmap.close()

    def unlink(self) -> None:
        import _posixshmem

        try:
            _posixshmem.shm_unlink(self._name)
        except FileNotFoundError:
            pass


class _Worker:
    """One worker process: a JSON line to its stdin, a JSON line back from its stdout, read with a time limit.

    Both pipes are unbuffered, so a child made by ``os.fork`` can close its
    copies without writing anything the parent had not sent.
    """

    def __init__(self, argv: list[str], env: dict):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0)
        self.pid = self.proc.pid
        self.version: str | None = None  # set once the worker said it is ready
        self._pending = b""

    def send(self, message: dict) -> None:
        data = (json.dumps(message) + "\n").encode()
        try:
            while data:
                data = data[os.write(self.proc.stdin.fileno(), data):]
        except (OSError, ValueError):  # broken pipe, or closed
            raise WorkerDied(self._death()) from None

    def receive(self, timeout: float) -> dict:
        """The next line from the worker as a dict; :class:`WorkerHung` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerHung(f"stock encoder worker {self.pid} did not answer within {timeout:g} s "
                                 f"(killed it; {TIMEOUT_ENV} sets the limit a window)")
            if not poller.poll(math.ceil(left * 1000)):
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerDied(self._death())
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise StockEncoderError(f"stock encoder worker {self.pid} answered {line[:80]!r}, not a JSON object")
        return answer

    def _death(self) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"status {code}"
        return f"stock encoder worker {self.pid} exited ({how}); see its stderr above"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, wait: float = 10.0) -> None:
        """Close its stdin (it removes the blocks and exits), killing it after ``wait`` seconds."""
        self.proc.stdin.close()
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc.stdout.close()

    def abandon(self) -> None:
        """In a forked child: close the copies of the pipes, leave the process to its owner."""
        self.proc.stdin.close()
        self.proc.stdout.close()
        _ABANDONED.append(self.proc)  # never waited for here: it is not this process's child


_ABANDONED: list = []
_LIVE: "weakref.WeakSet[StockEncoder]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for encoder in list(_LIVE):
        encoder._forget_inherited()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class StockEncoder:
    """``encode`` by stock CTranslate2 in a worker process (one request at a time; thread-safe).

    The worker loads its model while the caller goes on (the first ``encode``
    waits for it). ``fallback`` (optional, e.g. the fork's model): if the worker
    fails, one warning is logged and every later ``encode`` runs on it.
    ``timeout``: seconds a window may take (:func:`encoder_timeout`).
    """

    def __init__(self, model_dir, compute_type: str = "int8", threads: int = 2, directory: Path | None = None,
                 fallback=None, timeout: float | None = None):
        directory = Path(directory or stock_dir())
        if not stock_installed(directory):
            raise StockEncoderError(f"no stock CTranslate2 in {directory}; run `make stock-encoder`")
        self.timeout = encoder_timeout(timeout)
        # the encoder's long parallel regions gain nothing from spinning threads: OpenMP defaults there;
        # its 72 MB attention buffers gain from the heap policy (tokenmap.runtime.memory), which glibc reads at start
        self._env = dict(worker_environment(without_policy()),
                         PYTHONPATH=os.pathsep.join([str(directory), os.environ.get("PYTHONPATH", "")]))
        self._argv = [sys.executable, str(CHILD), str(model_dir), compute_type, str(threads)]
        self._lock = threading.Lock()
        self._blocks: dict[str, SharedBlock] = {}
        self._closed = False
        self.fallback = fallback
        self.failed: str | None = None  # why the worker was given up, once it was
        self.version: str | None = None  # stock CTranslate2's version, once the worker is ready
        self._worker: _Worker | None = _Worker(self._argv, self._env)
        _LIVE.add(self)

    @property
    def _proc(self):
        """The current worker's ``Popen`` (None before a forked child's first ``encode``)."""
        return self._worker.proc if self._worker is not None else None

    def wait_ready(self) -> str:
        """Wait until the worker has loaded its model; its CTranslate2 version."""
        with self._lock:
            return self._ready()

    def _ready(self) -> str:
        if self._closed:
            raise StockEncoderError("the stock encoder is closed")
        if self._worker is None:
            self._worker = _Worker(self._argv, self._env)
        worker = self._worker
        if worker.version is None:
            hello = worker.receive(self.timeout)
            if not hello.get("ready"):
                raise StockEncoderError(f"stock encoder worker did not start: {hello.get('error', hello)}")
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

    def encode(self, features, to_cpu: bool = False):
        """Encoder output of ``features`` (StorageView or array, [batch, n_mels, frames]) as a StorageView."""
        if self.failed is None:
            try:
                return self._encode(features)
            except (StockEncoderError, OSError, ValueError) as exc:
                if self.fallback is None:
                    raise
                self.failed = str(exc)
                logger.warning("the stock encoder worker failed (%s); encoding with the fork from now on", exc)
                self.close()
        return self.fallback.encode(features, to_cpu=to_cpu)

    def _encode(self, features):
        import ctranslate2

        array = np.ascontiguousarray(np.asarray(features), dtype=np.float32)
        if array.ndim == 2:
            array = array[None]
        if array.ndim != 3 or not array.size:
            raise ValueError(f"features of shape {array.shape}, not [batch, n_mels, frames]")
        with self._lock:
            out = self._request(array)
        return ctranslate2.StorageView.from_array(out)

    def _request(self, array: np.ndarray) -> np.ndarray:
        """Send ``array`` to the worker and copy its answer out; a worker that had started and died is
        replaced once."""
        self._ready()
        src = self._block("in", array.nbytes)
        np.ndarray(array.shape, dtype=np.float32, buffer=src.buf)[...] = array
        dst = self._block("out", array.shape[0] * (array.shape[2] // 2 + 1) * MAX_D_MODEL * 4)
        message = {"in": src.name, "out": dst.name, "shape": list(array.shape)}
        for attempt in (1, 2):
            try:
                self._worker.send(message)
                answer = self._worker.receive(self.timeout * array.shape[0])
                break
            except WorkerDied as exc:
                if attempt == 2:
                    raise
                logger.warning("%s; starting a new one", str(exc).replace("; see its stderr above", ""))
                self._worker = _Worker(self._argv, self._env)
                self._ready()
        if "error" in answer:
            raise StockEncoderError(f"stock encoder failed: {answer['error']}")
        shape = answer.get("shape")
        if not (isinstance(shape, list) and len(shape) == 3 and all(type(s) is int and s > 0 for s in shape)
                and shape[0] == array.shape[0] and math.prod(shape) * 4 <= dst.size):
            raise StockEncoderError(f"stock encoder worker answered a bad shape: {shape!r}")
        return np.ndarray(tuple(shape), dtype=np.float32, buffer=dst.buf).copy()

    def _forget_inherited(self) -> None:
        """In a child made by ``os.fork``: let go of the parent's worker and blocks without stopping or
        removing them (the parent still uses them); the next ``encode`` starts a worker here."""
        self._lock = threading.Lock()  # another thread may have held it at the fork
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
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
