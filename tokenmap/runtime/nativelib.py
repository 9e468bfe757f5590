"""tokenmap's own small native libraries: where ``make`` builds them, and how they are loaded.

``make setup`` compiles the sources in ``tokenmap/runtime/native/`` into :func:`library_path`. Each one is
optional: without a compiler, or with ``TOKENMAP_NATIVE=0``, numpy computes the same decisions. Besides
packed GEMM's library (:mod:`tokenmap.runtime.packing`), ``libtokenmap_rowmath.so`` (``row_math.c``) computes
the decoding loop's row reductions (:mod:`tokenmap.decode.ct2math` uses them).

Example::

    >>> import numpy as np
    >>> x = np.ones((2, 20), dtype=np.float32)
    >>> out = lane_sums(x, lanes=8)            # None when the library is not built
    >>> out is None or out.tolist() == [20.0, 20.0]
    True
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
from pathlib import Path

import numpy as np

logger = logging.getLogger("tokenmap")

OPT_OUT = "TOKENMAP_NATIVE"
ROW_MATH = "libtokenmap_rowmath.so"
_ROWS = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]


def library_path(name: str) -> Path:
    """``$XDG_CACHE_HOME/tokenmap/native/NAME`` (default ``~/.cache``), where ``make setup`` builds it."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(root) / "tokenmap" / "native" / name


def _off() -> bool:
    return os.environ.get(OPT_OUT, "").lower() in ("0", "off", "no", "false")


@functools.lru_cache(maxsize=None)
def row_math():
    """The loaded ``libtokenmap_rowmath.so``, or None (not built, failed to load, or ``TOKENMAP_NATIVE=0``)."""
    path = library_path(ROW_MATH)
    if _off() or not path.is_file():
        return None
    try:
        lib = ctypes.CDLL(str(path))
        for name in ("tokenmap_lane_sums", "tokenmap_log_softmax_shifts"):
            getattr(lib, name).argtypes = _ROWS
            getattr(lib, name).restype = ctypes.c_int
        lib.tokenmap_decide_row.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                            ctypes.c_int64, ctypes.c_double, ctypes.c_int64, ctypes.c_float,
                                            ctypes.c_void_p]
        lib.tokenmap_decide_row.restype = ctypes.c_int64
        lib.tokenmap_row_math_portable.argtypes = [ctypes.c_int]
        lib.tokenmap_row_math_portable.restype = ctypes.c_int
    except (OSError, AttributeError) as exc:
        logger.debug("%s did not load: %s", path, exc)
        return None
    return lib


def row_math_status() -> str:
    """``on``, ``off`` (``TOKENMAP_NATIVE=0``) or ``not built`` (``make setup`` builds it with a C compiler)."""
    if row_math() is not None:
        return "on"
    return "off" if _off() else "not built"


def describe() -> str:
    """One line for ``tokenmap doctor``: whether the loop's row reductions run in C, and on which ISA."""
    status = row_math_status()
    if status == "on":
        return "on (AVX2)" if row_math().tokenmap_row_math_portable(0) else "on (portable C)"
    if status == "off":
        return f"off ({OPT_OUT}=0): numpy computes them"
    return f"not built: numpy computes them (`make rowmath` builds {library_path(ROW_MATH)} with a C compiler)"


def _rows_call(name: str, x: np.ndarray, lanes: int) -> np.ndarray | None:
    lib = row_math()
    if lib is None or x.dtype != np.float32 or x.ndim != 2 or x.shape[1] == 0 or x.strides[1] != 4 \
            or x.strides[0] % 4:
        return None
    out = np.empty(x.shape[0], dtype=np.float32)
    if getattr(lib, name)(x.ctypes.data, x.shape[0], x.shape[1], x.strides[0] // 4, lanes, out.ctypes.data):
        return None
    return out


def lane_sums(x: np.ndarray, lanes: int) -> np.ndarray | None:
    """Every row's float32 sum of a [T, n] float32 array (rows contiguous), in CTranslate2's order:
    ``lanes`` running sums, a tree over them, then the tail one by one. None without the library."""
    return _rows_call("tokenmap_lane_sums", x, lanes)


def log_softmax_shifts(x: np.ndarray, lanes: int) -> np.ndarray | None:
    """Every row's log-softmax shift ``-max - log(sum(exp(x - max)))`` of a [T, n] float32 array, the sum
    in CTranslate2's order, the exponential its AVX2 polynomial (within about 1 ulp of numpy's). None
    without the library."""
    return _rows_call("tokenmap_log_softmax_shifts", x, lanes)


def decide_row(row: np.ndarray, timestamp_begin: int, timestamp_end: int, check: bool, tolerance: float,
               lanes: int, disabled: float, shift: np.ndarray) -> int | None:
    """One greedy decision on a rule-masked [V] float32 row, as :meth:`tokenmap.decode.rules.RuleSet.choose_rows`
    makes it (with ``check``, the timestamp rule disables the text tokens): the first index of the row's
    maximum, its log-softmax shift written into ``shift[0]``. None without the library, or when a comparison
    is within ``tolerance`` of a tie (the row then holds only what the rules would have written)."""
    lib = row_math()
    if lib is None or row.dtype != np.float32 or row.ndim != 1 or row.strides[0] != 4:
        return None
    token = lib.tokenmap_decide_row(row.ctypes.data, row.shape[0], timestamp_begin, timestamp_end, int(check),
                                    tolerance, lanes, disabled, shift.ctypes.data)
    return None if token < 0 else token
