"""Stock CTranslate2's encoder in a worker process, features and output through shared memory.

The engine fork (4.7.1) encodes more slowly than stock CTranslate2 4.8.5 on
the CPUs measured (docs/BENCHMARKS.md), and the two cannot be loaded into one
process. :class:`StockEncoder` starts :mod:`tokenmap.stock_encoder_child` with
a private copy of stock CTranslate2 first on ``PYTHONPATH`` (installed by
``make stock-encoder`` into :func:`stock_dir`; never fetched at run time) and
exposes ``encode(features) -> StorageView`` like ``ctranslate2.models.Whisper``,
so :class:`tokenmap.precision.SplitEngine` can pair it with the fork's decoder.

Example::

    >>> enc = StockEncoder(model_dir, "int8", threads=2)          # doctest: +SKIP
    >>> out = enc.encode(features)   # StorageView [1, 1500, 512]  # doctest: +SKIP
    >>> enc.close()                                                # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from multiprocessing import shared_memory
from pathlib import Path

import numpy as np

from tokenmap.memory import child_environment
from tokenmap.threads import without_policy

logger = logging.getLogger("tokenmap")

CHILD = Path(__file__).with_name("stock_encoder_child.py")
STOCK_VERSION = "4.8.5"
MAX_D_MODEL = 1280  # Whisper large; the output block is sized for it


class StockEncoderError(RuntimeError):
    """The stock-encoder worker is not installed, did not start, or failed."""


def stock_dir() -> Path:
    """``$TOKENMAP_STOCK_CT2`` or ``$XDG_CACHE_HOME/tokenmap/stock-ct2`` (``make stock-encoder``)."""
    if os.environ.get("TOKENMAP_STOCK_CT2"):
        return Path(os.environ["TOKENMAP_STOCK_CT2"])
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(root) / "tokenmap" / "stock-ct2"


def stock_installed(directory: Path | None = None) -> bool:
    """True when ``directory`` (default :func:`stock_dir`) holds a stock ``ctranslate2`` package."""
    return ((directory or stock_dir()) / "ctranslate2" / "__init__.py").is_file()


class StockEncoder:
    """``encode`` by stock CTranslate2 in a worker process (one request at a time).

    The worker loads its model while the caller goes on (the first ``encode``
    waits for it). ``fallback`` (optional, e.g. the fork's model): if the worker
    fails, one warning is logged and every later ``encode`` runs on it.
    """

    def __init__(self, model_dir, compute_type: str = "int8", threads: int = 2, directory: Path | None = None,
                 fallback=None):
        directory = Path(directory or stock_dir())
        if not stock_installed(directory):
            raise StockEncoderError(f"no stock CTranslate2 in {directory}; run `make stock-encoder`")
        # the encoder's long parallel regions gain nothing from spinning threads: OpenMP defaults there;
        # its 72 MB attention buffers gain from the heap policy (tokenmap.memory), which glibc reads at start
        env = dict(child_environment(without_policy()),
                   PYTHONPATH=os.pathsep.join([str(directory), os.environ.get("PYTHONPATH", "")]))
        self._proc = subprocess.Popen(
            [sys.executable, str(CHILD), str(model_dir), compute_type, str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, bufsize=1,
        )
        self._lock = threading.Lock()
        self._blocks: dict[str, shared_memory.SharedMemory] = {}
        self.fallback = fallback
        self.failed: str | None = None  # why the worker was given up, once it was
        self.version: str | None = None  # stock CTranslate2's version, once the worker is ready

    def wait_ready(self) -> str:
        """Wait until the worker has loaded its model; its CTranslate2 version."""
        if self.version is None:
            hello = self._read()
            if not hello.get("ready"):
                raise StockEncoderError(f"stock encoder worker did not start: {hello.get('error', hello)}")
            self.version = hello["version"]
            logger.info("encoder: stock CTranslate2 %s in worker process %d", self.version, self._proc.pid)
        return self.version

    def _read(self) -> dict:
        line = self._proc.stdout.readline()
        if not line:
            code = self._proc.poll()
            raise StockEncoderError(f"stock encoder worker exited (status {code}); see its stderr above")
        return json.loads(line)

    def _block(self, kind: str, size: int) -> shared_memory.SharedMemory:
        block = self._blocks.get(kind)
        if block is None or block.size < size:
            if block is not None:
                block.close()
                block.unlink()
            block = self._blocks[kind] = shared_memory.SharedMemory(create=True, size=size)
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
        with self._lock:
            self.wait_ready()
            src = self._block("in", array.nbytes)
            np.ndarray(array.shape, dtype=np.float32, buffer=src.buf)[...] = array
            dst = self._block("out", array.shape[0] * (array.shape[2] // 2 + 1) * MAX_D_MODEL * 4)
            self._proc.stdin.write(json.dumps({"in": src.name, "out": dst.name, "shape": list(array.shape)}) + "\n")
            self._proc.stdin.flush()
            answer = self._read()
            if "error" in answer:
                raise StockEncoderError(f"stock encoder failed: {answer['error']}")
            out = np.ndarray(tuple(answer["shape"]), dtype=np.float32, buffer=dst.buf).copy()
        return ctranslate2.StorageView.from_array(out)

    def close(self) -> None:
        """Stop the worker and free the shared memory (also at garbage collection)."""
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        for block in getattr(self, "_blocks", {}).values():
            block.close()
            block.unlink()
        self._blocks = {}

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
