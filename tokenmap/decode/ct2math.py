"""CTranslate2's float32 reductions on the CPU, reproduced for the decoding loop.

Whisper's greedy decisions and scores in :mod:`tokenmap.decode.rules` go through a log-softmax; to
decide as CTranslate2 does (near-ties included), the sums run in its order: ``LANES`` running lane sums,
a tree over the lanes, then the tail one by one, for every row of a verify pass at once. Where
tokenmap's native library is built (:mod:`tokenmap.runtime.nativelib`), they run there, bit for bit, and
a log-softmax's shift with CTranslate2's AVX2 exponential (a few ulp from numpy's).

Example::

    >>> x = np.array([[0.0, 1.0, 2.0], [3.0, 3.0, 3.0]], dtype=np.float32)
    >>> np.array_equal(log_softmax_rows(x), np.stack([log_softmax(r) for r in x]))
    True
"""

from __future__ import annotations

import os

import numpy as np

from tokenmap.runtime.nativelib import lane_sums, log_softmax_shifts


def _lane_width() -> int:
    """SIMD width (floats) of CT2's CPU reductions: AVX2 (8) unless forced otherwise."""
    isa = os.environ.get("CT2_FORCE_CPU_ISA", "").upper()
    return {"AVX512": 16, "GENERIC": 1, "NEON": 4}.get(isa, 8)


LANES = _lane_width()
#: logit gaps below this (relative to the values' size) are decided on exact float32
#: log-probs; above it float32 rounding (about 1e-7 relative) cannot change a decision
TIE_TOLERANCE = 1e-4


def _sum_rows(e: np.ndarray) -> np.ndarray:
    """float32 sum of every row of a [T, n] array in CT2's order, in the native library when it is built.
    The order matters: adding ~50k tiny probabilities to a lane that holds ~1 drops them, so CT2's softmax
    sum is biased low by up to ~1e-4 relative compared with an exact sum."""
    native = lane_sums(e, LANES)
    return native if native is not None else _sum_rows_numpy(e)


def _sum_rows_numpy(e: np.ndarray) -> np.ndarray:
    """:func:`_sum_rows` in numpy. The lane sums run over the outer axis of a [n / LANES, T, LANES] copy,
    so numpy adds one whole [T, LANES] block at a time, in order."""
    t, n = e.shape
    main = 0 if LANES == 1 or n <= LANES else n - n % LANES
    acc = np.zeros(t, dtype=np.float32)
    if main:
        blocks = np.ascontiguousarray(e[:, :main].reshape(t, -1, LANES).transpose(1, 0, 2))
        lanes = blocks.sum(axis=0, dtype=np.float32)
        while lanes.shape[1] > 1:  # 128/64/32-bit shuffles: pairs (i, i + half)
            half = lanes.shape[1] // 2
            lanes = lanes[:, :half] + lanes[:, half:]
            if lanes.shape[1] == 4:  # AVX2: (l0+l4)+(l2+l6) + (l1+l5)+(l3+l7)
                lanes = np.stack([lanes[:, 0] + lanes[:, 2], lanes[:, 1] + lanes[:, 3]], axis=1)
        acc = lanes[:, 0].astype(np.float32)
    for k in range(main, n):
        acc = acc + e[:, k]
    return acc


def log_softmax(x: np.ndarray) -> np.ndarray:
    """log_softmax of a [V] float32 vector as CT2's CPU kernel computes it:
    ``y = x + (-max - log(sum(exp(x - max))))`` in float32, CT2's summation order."""
    return log_softmax_rows(np.asarray(x, dtype=np.float32).reshape(1, -1))[0]


def softmax(x: np.ndarray) -> np.ndarray:
    """softmax of a [V] float32 vector: ``exp(x - max) * (1 / sum)`` in float32."""
    x = np.asarray(x, dtype=np.float32)
    e = np.exp(x - x.max())
    return e * (np.float32(1.0) / _sum_rows(e.reshape(1, -1))[0])


def logsumexp(x: np.ndarray) -> np.float32:
    """``log(sum(exp(x - max))) + max`` in float32 (CT2 ``reduce_logsumexp``)."""
    x_max = x.max()
    return np.float32(np.float32(np.log(_sum_rows(np.exp(x - x_max).reshape(1, -1))[0])) + x_max)


def log_softmax_shift_rows(x: np.ndarray) -> np.ndarray:
    """The float32 shift of every row's log-softmax: ``log_softmax_rows(x) == x + shift[:, None]``."""
    native = log_softmax_shifts(x, LANES)
    if native is not None:
        return native
    x_max = x.max(axis=1, keepdims=True)
    e = x - x_max
    exp_sum = _sum_rows(np.exp(e, out=e))
    return (-x_max[:, 0]).astype(np.float32) - np.log(exp_sum).astype(np.float32)


def log_softmax_rows(x: np.ndarray) -> np.ndarray:
    """:func:`log_softmax` of every row of a [T, V] float32 array."""
    return x + log_softmax_shift_rows(x)[:, None]


def argmax_of_log_softmax(row: np.ndarray) -> int:
    """``argmax(log_softmax(row))``, first index on ties, mostly without the log-softmax.

    Adding the row's shift and rounding to float32 keeps the order of values but
    can merge two that are less than a rounding step apart; only then (a lower
    index within :data:`TIE_TOLERANCE` of the maximum) are the log-probs computed.

    >>> row = np.array([1.0, np.nextafter(np.float32(1.5), np.float32(0)), 1.5], dtype=np.float32)
    >>> int(np.argmax(row)), argmax_of_log_softmax(row) == int(np.argmax(log_softmax(row)))
    (2, True)
    """
    best = int(np.argmax(row))
    top = float(row[best])
    if best and bool((row[:best] >= top - TIE_TOLERANCE * (1.0 + abs(top))).any()):
        return int(np.argmax(log_softmax(row)))
    return best
