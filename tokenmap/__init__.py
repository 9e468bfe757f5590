"""tokenmap: token-map speculative decoding for Whisper on CPU.

The heavy pieces (CTranslate2, faster-whisper) are imported lazily, so that
``import tokenmap`` stays cheap and the map builder works without the engine.
"""

import logging

__version__ = "0.1.0"

logging.getLogger("tokenmap").addHandler(logging.NullHandler())

_LAZY = {
    "WhisperModel": "tokenmap.whisper",
    "TokenMap": "tokenmap.maps.mapfile",
    "EngineError": "tokenmap.engine",
    "resolve_model": "tokenmap.models",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tokenmap' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = sorted(_LAZY) + ["__version__"]
