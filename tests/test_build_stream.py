"""Builder: chunked (streaming) counting, pruned deep levels, near-duplicate merging, bounded memory."""

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tokenmap.build import counting

from tokenmap.build import ngrams
from tokenmap.build.builder import BuildOptions, build_map, encode_texts
from tokenmap.decode.cost import DEFAULT
from tokenmap.maps.mapfile import TokenMap
from tokenmap.build.style import StyleOptions


@pytest.fixture(scope="module")
def corpus(make_corpus):
    return make_corpus(2000, 5)


@pytest.fixture(scope="module")
def stream(tok, corpus):
    """``(tokens, sep, bos)`` of the corpus as the builder spools it."""
    texts = corpus.read_text(encoding="utf-8").splitlines()
    raw = encode_texts(texts, tok, StyleOptions(), False)
    return np.frombuffer(raw, dtype=np.uint32), tok.vocab_size + 1, tok.vocab_size


def _same_levels(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert np.array_equal(x.parent, y.parent) and np.array_equal(x.token, y.token)
        assert np.array_equal(x.count, y.count)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 1 << 20])
def test_count_levels_chunk_sizes_agree(chunk):
    t = np.array([9, 1, 2, 3, 10, 9, 1, 2, 4, 10, 9, 1, 2, 3, 10], dtype=np.uint32)
    _same_levels(counting.count_levels(t, sep=10, min_count=2, max_len=5, chunk_tokens=chunk),
                 counting.count_levels(t, sep=10, min_count=2, max_len=5, chunk_tokens=1 << 20))


def test_chunked_parallel_and_token_file_agree(stream, tmp_path, monkeypatch):
    t, sep, _ = stream
    whole = counting.count_levels(t, sep, 2, 19, chunk_tokens=len(t) + 1)
    _same_levels(whole, counting.count_levels(t, sep, 2, 19, chunk_tokens=997))
    spool = tmp_path / "tok.u32"
    t.tofile(spool)
    tf = counting.TokenFile(str(spool), len(t))
    assert np.array_equal(tf.read(5, 12), t[5:12]) and len(tf.read(len(t) - 3, len(t) + 9)) == 3
    monkeypatch.setattr(counting, "PARALLEL_MIN_TOKENS", 0)
    par = counting.count_levels(tf, sep, 2, 19, jobs=2, chunk_tokens=1009)
    ser = counting.count_levels(tf, sep, 2, 19, jobs=1, chunk_tokens=1009)
    assert [len(lv.token) for lv in par] == [len(lv.token) for lv in ser]  # rows are partition-ordered
    assert sum(int(lv.count.sum()) for lv in par) == sum(int(lv.count.sum()) for lv in ser)


def test_pruned_deep_levels_select_the_same_map(stream):
    """Counting only the branches a candidate walk can follow changes no map array."""
    t, sep, bos = stream
    for opts in (BuildOptions(jobs=1), BuildOptions(jobs=1, max_candidates=2, merge_near_duplicates=False),
                 BuildOptions(jobs=1, max_order=2, max_draft_len=8)):
        max_len = opts.max_order + opts.max_draft_len
        full = counting.count_levels(t, sep, opts.min_count, max_len)
        pruned = counting.count_levels(t, sep, opts.min_count, max_len, full_len=opts.max_order,
                                       branches=ngrams.branches_needed(opts), chunk_tokens=1000)
        assert sum(len(lv.token) for lv in pruned) < sum(len(lv.token) for lv in full)
        a = ngrams.select_candidates(full, opts, DEFAULT, bos)
        b = ngrams.select_candidates(pruned, opts, DEFAULT, bos)
        assert sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a), opts


def test_tiny_chunks_build_a_byte_identical_map(tmp_path, corpus, tok, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    opts = BuildOptions(jobs=1)
    a = build_map([corpus], tmp_path / "a.tmap", tokenizer=tok, options=opts)
    monkeypatch.setattr(counting, "CHUNK_TOKENS", 257)
    b = build_map([corpus], tmp_path / "b.tmap", tokenizer=tok, options=opts)
    monkeypatch.setattr(counting, "PARALLEL_MIN_TOKENS", 0)
    c = build_map([corpus], tmp_path / "c.tmap", tokenizer=tok, options=BuildOptions(jobs=2))
    assert Path(a.path).read_bytes() == Path(b.path).read_bytes() == Path(c.path).read_bytes()


def test_counting_memory_does_not_grow_with_a_repeated_corpus(stream, tmp_path):
    """The same sentences 1x and 12x: same distinct n-grams, so about the same peak (not 12x)."""
    t, sep, _ = stream
    peaks = []
    for times in (1, 12):
        spool = tmp_path / f"tok{times}.u32"
        np.tile(t, times).tofile(spool)
        tf = counting.TokenFile(str(spool), len(t) * times)
        tracemalloc.start()
        counting.count_levels(tf, sep, 2, 19, full_len=3, branches=4, chunk_tokens=1 << 14)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.5 * peaks[0], peaks


# -- near-duplicate candidates -------------------------------------------------
def _nd(rows, lengths, savings, keep):
    width = max(len(r) for r in rows)
    tokens = np.array([[r + [0] * (width - len(r))] for r in rows], dtype=np.uint32)  # [R, 1, D]
    sav, merged = ngrams.near_duplicates(tokens, np.array(lengths)[:, None], np.array(savings, float)[:, None], keep)
    return sav[:, 0].tolist(), merged


def test_near_duplicates_rules():
    inf = float("-inf")
    # same tail -> the lower saving one is merged, the extra branch (r >= keep) takes its slot
    assert _nd([[5, 7, 8], [6, 7, 8], [4, 1, 2]], [3, 3, 3], [9, 4, 2], keep=2) == ([9, inf, 2], 1)
    # prefix with one substitution: [6, 7] is [5, 7, 8] but for the first token
    assert _nd([[5, 7, 8], [6, 7], [4, 1, 2]], [3, 2, 3], [3, 5, 2], keep=2) == ([inf, 5, 2], 1)
    # different tails, or one shared token only (length 1): not near-duplicates, extra stays out
    assert _nd([[5, 7, 8], [6, 7, 9], [4, 1, 2]], [3, 3, 3], [9, 4, 2], keep=2) == ([9, 4, inf], 0)
    assert _nd([[5, 7, 8], [6], [4, 1, 2]], [3, 1, 3], [9, 4, 2], keep=2) == ([9, 4, inf], 0)
    # a candidate that does not pay is neither kept nor a merge target
    assert _nd([[5, 7, 8], [6, 7, 8], [4, 1, 2]], [3, 3, 3], [-1, 4, 2], keep=2) == ([inf, 4, inf], 0)
    # the extra branch is dropped too when it duplicates a kept one
    assert _nd([[5, 7, 8], [6, 7, 8], [4, 7, 8]], [3, 3, 3], [9, 4, 2], keep=2) == ([9, inf, inf], 1)


