"""tokenmap's native row reductions (``libtokenmap_rowmath.so``) against numpy's."""

import os
import shutil

import numpy as np
import pytest

from tokenmap.decode import ct2math
from tokenmap.decode.rules import DISABLED
from tokenmap.runtime import nativelib

LIB = nativelib.row_math()
needs_lib = pytest.mark.skipif(LIB is None, reason="libtokenmap_rowmath.so not built")


def test_built_where_a_compiler_is():
    """`make setup` builds the library wherever a C compiler (make's default ``cc``) is on the path."""
    if shutil.which(os.environ.get("CC", "cc")):
        assert nativelib.row_math_status() == "on", nativelib.describe()


def _rows(rng, t, n, scale):
    x = (rng.standard_normal((t, n)) * scale).astype(np.float32)
    if n > 100:
        x[:, rng.integers(0, n, 60)] = DISABLED  # what the rules write
    return x


@needs_lib
@pytest.mark.parametrize("lanes", [1, 4, 8, 16])
def test_lane_sums_equal_numpy_bit_for_bit(lanes, monkeypatch):
    monkeypatch.setattr(ct2math, "LANES", lanes)
    rng = np.random.default_rng(lanes)
    for n in (1, 7, 8, 9, 16, 17, 1501, 51865):
        e = np.exp(_rows(rng, 3, n, 5.0))
        assert np.array_equal(nativelib.lane_sums(e, lanes), ct2math._sum_rows_numpy(e)), n
    wide = np.exp(_rows(rng, 2, 64, 1.0))[:, :50]  # rows further apart than their length
    assert np.array_equal(nativelib.lane_sums(wide, lanes), ct2math._sum_rows_numpy(np.ascontiguousarray(wide)))


@needs_lib
def test_log_softmax_shifts_match_numpy_within_a_few_ulp():
    rng = np.random.default_rng(0)
    for n in (1, 2, 9, 1501, 51864, 51865):
        for scale in (0.1, 3.0, 30.0):
            x = _rows(rng, 4, n, scale)
            shifts = nativelib.log_softmax_shifts(x, 8)
            exp = x - x.max(axis=1, keepdims=True)
            ref = (-x.max(axis=1)).astype(np.float32) - np.log(ct2math._sum_rows_numpy(np.exp(exp))).astype(np.float32)
            ulp = np.spacing(np.abs(ref)).astype(np.float64)
            assert np.all(np.abs(shifts.astype(np.float64) - ref) <= 8 * ulp + 1e-30), (n, scale)


@needs_lib
def test_portable_code_gives_the_avx2_bits():
    rng = np.random.default_rng(1)
    x = _rows(rng, 5, 51865, 8.0)
    fast = nativelib.log_softmax_shifts(x, 8)
    try:
        LIB.tokenmap_row_math_portable(1)
        portable = nativelib.log_softmax_shifts(x, 8)
    finally:
        LIB.tokenmap_row_math_portable(0)
    assert np.array_equal(fast, portable)


def test_rows_and_single_log_softmax_agree():
    """Whichever computes it (C or numpy), a verify pass's rows get the single row's log-probs."""
    rng = np.random.default_rng(2)
    x = _rows(rng, 3, 51865, 4.0)
    rows = ct2math.log_softmax_rows(x)
    for j in range(3):
        assert np.array_equal(rows[j], ct2math.log_softmax(x[j]))
    assert float(ct2math.logsumexp(rows[0])) == pytest.approx(0.0, abs=1e-5)


def test_unsuitable_arrays_fall_back_to_numpy():
    x = np.ones((2, 10), dtype=np.float64)
    assert nativelib.lane_sums(x, 8) is None
    assert nativelib.log_softmax_shifts(np.ones((2, 0), np.float32), 8) is None
    assert nativelib.lane_sums(np.ones((3, 10), np.float32)[:, ::2], 8) is None


def test_opt_out(monkeypatch):
    monkeypatch.setenv(nativelib.OPT_OUT, "0")
    nativelib.row_math.cache_clear()
    try:
        assert nativelib.row_math() is None
        assert nativelib.row_math_status() == "off"
        assert nativelib.describe().startswith("off")
        x = np.arange(20, dtype=np.float32).reshape(2, 10)
        assert np.array_equal(ct2math._sum_rows(x), ct2math._sum_rows_numpy(x))
    finally:
        monkeypatch.delenv(nativelib.OPT_OUT)
        nativelib.row_math.cache_clear()
    assert (nativelib.row_math() is None) == (LIB is None)  # back as it was


def _exact_decision(row, timestamps, check):
    """The numpy path of :meth:`RuleSet.choose_rows` for one masked row: the token and the row after it."""
    if check and timestamps.likely(row):
        row[: timestamps.timestamp_begin] = DISABLED
    return ct2math.argmax_of_log_softmax(row), row


@needs_lib
def test_decide_row_takes_the_numpy_decisions():
    """Greedy decisions in C equal numpy's on rows built to sit near every boundary: timestamps that
    barely win or lose against the best text token, maxima tied within rounding, disabled ranges."""
    from tokenmap.decode.rules import TimestampRules

    rng = np.random.default_rng(3)
    n, ts0, ts_end = 51865, 50364, 51864
    stamps = TimestampRules(eot=50257, no_timestamps=50363, timestamp_begin=ts0, timestamp_end=ts_end,
                            max_initial_timestamp_id=ts0 + 50)
    decided = fell_back = 0
    for trial in range(400):
        row = (rng.standard_normal(n) * rng.uniform(0.5, 6)).astype(np.float32)
        kind = trial % 4
        if kind == 1:  # the timestamps' mass near the best text token's
            row[ts0:] += np.float32(row[:ts0].max() - np.log(np.exp(row[ts0:].astype(np.float64)).sum())
                                    + rng.normal(0, 1e-3))
        elif kind == 2:  # two maxima a rounding step apart
            i, j = sorted(rng.choice(ts0, 2, replace=False))
            row[j] = np.float32(20.0)
            row[i] = np.nextafter(np.float32(20.0), np.float32(0)) if trial % 8 == 2 else np.float32(20.0)
        elif kind == 3:
            row[: rng.integers(0, ts0)] = DISABLED
        check = kind != 0 or trial % 3 == 0
        shift = np.zeros(1, np.float32)
        mine = row.copy()
        token = nativelib.decide_row(mine, ts0, ts_end, check, ct2math.TIE_TOLERANCE, 8, DISABLED, shift)
        want, after = _exact_decision(row.copy(), stamps, check)
        if token is None:
            fell_back += 1
            continue
        decided += 1
        assert token == want, trial
        assert np.array_equal(mine, after), trial
        assert shift[0] == ct2math.log_softmax_shift_rows(after[None])[0]
    assert decided > 250 and fell_back > 10  # both paths were taken


@needs_lib
def test_choose_rows_is_the_same_with_and_without_the_library(monkeypatch):
    from tokenmap.decode import rules as rules_module
    from tokenmap.decode.rules import RuleSet
    from tokenmap.decode.special import SpecialTokens

    special = SpecialTokens(sot=50258, eot=50257, no_timestamps=50363, no_speech=50362, vocab_size=51865,
                            suppress_ids=(1, 2, 7, 50359), suppress_ids_begin=(220, 50257))
    rules = RuleSet.from_generate_kwargs(special, [50258, 50259, 50359])
    rng = np.random.default_rng(4)
    for history in ([], [50364], [50364, 1012, 2014], [50364, 1012, 50400], [50364, 1012, 50400, 50400]):
        rows = (rng.standard_normal((4, 51865)) * 3).astype(np.float32)
        rows[:, 50364:50380] += 4  # timestamps in play
        fast = rules.choose_rows(rows.copy(), history, [], every_row=True)
        monkeypatch.setattr(rules_module, "_decide_native", lambda *a: None)
        slow = rules.choose_rows(rows.copy(), history, [], every_row=True)
        monkeypatch.undo()
        assert np.array_equal(fast[0], slow[0]), history
        np.testing.assert_allclose(fast[1], slow[1], rtol=0, atol=2e-6)
