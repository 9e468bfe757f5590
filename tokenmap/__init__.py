"""tokenmap: token-map speculative decoding for Whisper on CPU.

The package is laid out by what each part does:

* :mod:`tokenmap.runtime` runs the model on this machine: the engine (the CTranslate2 fork), the decoder's
  precision, stock CTranslate2's worker process and the process-wide thread and malloc policies;
* :mod:`tokenmap.encoders` is the encoder room: it decides what encodes, runs stock CTranslate2's worker and names both;
* :mod:`tokenmap.decode` is the decoder: Whisper's logit rules, the verify loop, the drafters and their
  control, plain decoding and the guard;
* :mod:`tokenmap.assembly` composes a model from an encoder, a decoder and drafters (or none), as one
  ``ModelOptions`` says; :mod:`tokenmap.windows` is where a window is encoded; :mod:`tokenmap.whisper` is the
  faster-whisper drop-in, and :mod:`tokenmap.hooks` the steps of faster-whisper it replaces for its own calls;
* :mod:`tokenmap.maps` is the token-map file format; :mod:`tokenmap.build` turns a corpus into a map, and
  :mod:`tokenmap.balance` builds a map set, one map per task;
* :mod:`tokenmap.stream` is the live transcriber.

CTranslate2 and faster-whisper are imported lazily, so ``import tokenmap`` stays cheap. Importing the
package sets the engine threads' wait policy (:mod:`tokenmap.runtime.threads`) and packed GEMM for the
decoder (:mod:`tokenmap.runtime.packing`), which must happen before CTranslate2 loads; the malloc policy
(:mod:`tokenmap.runtime.memory`) only when ``TOKENMAP_MALLOC=tokenmap`` asks.
"""

import importlib
import logging

from tokenmap.runtime import memory as _memory
from tokenmap.runtime import packing as _packing
from tokenmap.runtime import threads as _threads

_threads.install()
_memory.install_if_asked()
_packing.install()

__version__ = "0.1.0"

logging.getLogger("tokenmap").addHandler(logging.NullHandler())

_LAZY = {
    "WhisperModel": "tokenmap.whisper",
    "BatchedInferencePipeline": "tokenmap.batched",
    "TokenMap": "tokenmap.maps.suffixmap",
    "load_maps": "tokenmap.maps.mapfile",
    "build_map": "tokenmap.build.builder",
    "Drafter": "tokenmap.decode.drafters",
    "open_model": "tokenmap.assembly",
    "EngineError": "tokenmap.runtime.engine",
    "resolve_model": "tokenmap.models",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tokenmap' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = sorted(_LAZY) + ["__version__"]
