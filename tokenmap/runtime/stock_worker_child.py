"""The stock-encoder worker: stock CTranslate2 encodes and decodes on arrays passed through shared memory.

Standalone: it imports only ``ctranslate2`` (stock, first on ``PYTHONPATH``) and numpy, since stock
CTranslate2 and the fork cannot share one process. :mod:`tokenmap.runtime.stock_worker` starts it as
``python stock_worker_child.py MODEL_DIR COMPUTE_TYPE THREADS``; its first line is
``{"ready": true, "version": "4.8.5"}``, then each JSON request line gets one answer line
(``{"error": "..."}`` on failure):

* ``{"in": NAME, "out": NAME, "shape": [b, mels, frames]}`` (blocks the parent created): encode into
  ``out``, answer ``{"shape": [...]}``, and keep the output;
* ``{"op": "generate", "prompts": [[...]], "options": {...}}`` and ``{"op": "detect_language"}``: on the held
  output, or with ``"in"`` and ``"shape"`` on the array in that block; answer ``{"results": [...]}``.

When the parent is gone (stdin closes, or the parent process changes) or stops reading, the worker removes
the blocks it knows and exits. It ignores Ctrl-C, which reaches the whole process group.
"""

import ctypes
import json
import mmap
import os
import signal
import sys
import threading
import time
from contextlib import suppress

import numpy as np

PARENT_CHECK = 0.5  # seconds between checks that the parent is still there


class Block:
    """A shared-memory block the parent created, mapped here (``name`` without the leading slash)."""

    def __init__(self, name):
        import _posixshmem  # what multiprocessing.shared_memory uses, minus its resource tracker

        self.name = name
        fd = _posixshmem.shm_open("/" + name, os.O_RDWR, mode=0o600)
        try:
            self.map = mmap.mmap(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        self.size = len(self.map)

    def unlink(self):
        import _posixshmem

        with suppress(OSError):
            _posixshmem.shm_unlink("/" + self.name)


def _attach(role, name, blocks):
    """The block ``name`` for ``role`` ("in" or "out"); a block the parent replaced is let go."""
    block = blocks.get(role)
    if block is None or block.name != name:
        if block is not None:
            block.map.close()
        block = blocks[role] = Block(name)
    return block


def _answer(model, req, blocks, held):
    import ctranslate2

    if req.get("op") in ("generate", "detect_language"):
        return _decode(model, req, blocks, held)
    shape = tuple(req["shape"])
    src = np.ndarray(shape, dtype=np.float32, buffer=_attach("in", req["in"], blocks).map)
    if shape[0] == 1:
        output = model.encode(ctranslate2.StorageView.from_array(src))
        held["array"] = None
    else:  # a batch one window a call: its peak memory stays one window's (docs/ENGINE.md)
        held["array"] = np.concatenate([np.asarray(model.encode(ctranslate2.StorageView.from_array(
            np.ascontiguousarray(src[row: row + 1])))) for row in range(shape[0])])
        output = ctranslate2.StorageView.from_array(held["array"])
    held["encoded"] = output
    enc = np.asarray(output)
    dst = _attach("out", req["out"], blocks)
    if enc.nbytes > dst.size:
        raise ValueError(f"output of {enc.nbytes} bytes does not fit the {dst.size}-byte block")
    np.ndarray(enc.shape, dtype=np.float32, buffer=dst.map)[...] = enc
    return {"shape": list(enc.shape)}


def _decode(model, req, blocks, held):
    import ctranslate2

    if "in" in req:
        src = np.ndarray(tuple(req["shape"]), dtype=np.float32, buffer=_attach("in", req["in"], blocks).map)
        features = ctranslate2.StorageView.from_array(np.ascontiguousarray(src))
    elif held.get("encoded") is not None:
        features = held["encoded"]
    else:
        raise ValueError(f"{req['op']} on the last encoder output, but nothing was encoded yet")
    if req["op"] == "detect_language":
        return {"results": [[[token, prob] for token, prob in row] for row in model.detect_language(features)]}
    results = model.generate(features, req["prompts"], **req.get("options", {}))
    return {"results": [{"sequences_ids": r.sequences_ids, "scores": r.scores,
                         "no_speech_prob": getattr(r, "no_speech_prob", 0.0)} for r in results]}


def _leave(blocks):
    """Stdin closed or the parent is gone: remove the blocks (nobody else will) and exit at once."""
    for block in list(blocks.values()):
        block.unlink()
    os._exit(0)


def _watch_parent(parent, blocks):
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK)
    _leave(blocks)


def _release_free_memory() -> None:
    """Give what loading the model converted and freed back to the system (glibc ``malloc_trim``), which the
    malloc policy this process runs under would keep resident."""
    with suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL(None).malloc_trim(0)


def serve(model_dir, compute_type, threads, stdin, out):
    import ctranslate2

    blocks = {}
    held = {}  # the last encoder output, for generate
    parent = os.getppid()
    threading.Thread(target=_watch_parent, args=(parent, blocks), daemon=True).start()
    model = ctranslate2.models.Whisper(model_dir, device="cpu", compute_type=compute_type,
                                       intra_threads=int(threads))
    _release_free_memory()
    with suppress(BrokenPipeError, ConnectionError):  # the parent stopped reading: it is gone
        out.write(json.dumps({"ready": True, "version": ctranslate2.__version__}) + "\n")
        out.flush()
        for line in stdin:
            try:
                answer = _answer(model, json.loads(line), blocks, held)
            except Exception as exc:  # one line back, the worker stays up
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            out.write(json.dumps(answer) + "\n")
            out.flush()
    _leave(blocks)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # library output goes to stderr, never into the protocol
    serve(*sys.argv[1:4], sys.stdin, protocol)
