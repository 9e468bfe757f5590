"""The stock-encoder worker: stock CTranslate2 encodes features passed through shared memory.

Standalone on purpose: it imports only ``ctranslate2`` (stock, from the
directory the parent puts first on ``PYTHONPATH``) and numpy, because stock
CTranslate2 and the fork cannot share one process. The parent
(:mod:`tokenmap.stock_encoder`) starts it by path::

    python tokenmap/stock_encoder_child.py MODEL_DIR COMPUTE_TYPE THREADS

and talks one JSON line per request: ``{"in": NAME, "out": NAME, "shape": [b, mels, frames]}``
(both shared-memory blocks created by the parent) is answered by
``{"shape": [...]}`` once the encoder output is in ``out``, or ``{"error": "..."}``.
The first line it writes is ``{"ready": true, "version": "4.8.5"}``.
"""

import json
import os
import sys
from multiprocessing import resource_tracker, shared_memory

import numpy as np


def _attach(name, cache):
    if name not in cache:
        # the parent owns every block; keep the resource tracker from unlinking it at exit
        block = shared_memory.SharedMemory(name=name, track=False) if sys.version_info >= (3, 13) \
            else _untracked(name)
        cache[name] = block
    return cache[name]


def _untracked(name):
    block = shared_memory.SharedMemory(name=name)
    try:
        resource_tracker.unregister(block._name, "shared_memory")  # noqa: SLF001 (no public switch before 3.13)
    except Exception:  # pragma: no cover - tracker absent
        pass
    return block


def serve(model_dir, compute_type, threads, stdin, out):
    import ctranslate2

    model = ctranslate2.models.Whisper(model_dir, device="cpu", compute_type=compute_type,
                                       intra_threads=int(threads))
    out.write(json.dumps({"ready": True, "version": ctranslate2.__version__}) + "\n")
    out.flush()
    blocks = {}
    for line in stdin:
        try:
            req = json.loads(line)
            shape = tuple(req["shape"])
            src = np.ndarray(shape, dtype=np.float32, buffer=_attach(req["in"], blocks).buf)
            enc = np.asarray(model.encode(ctranslate2.StorageView.from_array(src)))
            dst_block = _attach(req["out"], blocks)
            if enc.nbytes > dst_block.size:
                raise ValueError(f"output of {enc.nbytes} bytes does not fit the {dst_block.size}-byte block")
            np.ndarray(enc.shape, dtype=np.float32, buffer=dst_block.buf)[...] = enc
            answer = {"shape": list(enc.shape)}
        except Exception as exc:  # one line back, the worker stays up
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()
    for block in blocks.values():
        block.close()


if __name__ == "__main__":
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # library output goes to stderr, never into the protocol
    serve(*sys.argv[1:4], sys.stdin, protocol)
