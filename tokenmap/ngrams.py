"""Counting frequent n-grams and choosing draft candidates (the core of the builder).

Counting is level by level (apriori): level m holds the m-grams whose count
reaches ``min_count``; only their positions are extended to m + 1.  Keys are
exact: an m-gram is ``(row of its (m-1)-gram prefix, last token)`` packed in
a ``uint64``, so no hash collision can merge two n-grams.  The stream can be
split by first token into independent partitions (:func:`count_partition`),
one per core.

Example::

    >>> tok = np.array([9, 1, 2, 3, 10, 9, 1, 2, 4, 10], dtype=np.uint32)   # BOS=9, SEP=10
    >>> levels = count_levels(tok, sep=10, min_count=2, max_len=4)
    >>> [len(lv.token) for lv in levels]        # 1-grams 9,1,2; 2-grams (9 1),(1 2); 3-gram (9 1 2)
    [3, 2, 1]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenmap import mapfile
from tokenmap.cost import CostModel


@dataclass(frozen=True)
class Level:
    """Frequent m-grams of one length m, sorted by (parent, token).

    ``parent`` int64 [S] row in level m-1 (-1 for m = 1), ``token`` uint32 [S],
    ``count`` int64 [S] corpus occurrences.
    """

    parent: np.ndarray
    token: np.ndarray
    count: np.ndarray


# -- 3. count ----------------------------------------------------------------
def count_levels(tok: np.ndarray, sep: int, min_count: int, max_len: int, jobs: int = 1) -> list[Level]:
    """Frequent m-grams (m = 1..max_len) of a ``BOS ... SEP`` stream (apriori).

    ``tok`` uint32 [T]; m-grams never contain ``sep``.  Level 0 of the result
    holds the unigrams (``token`` = the id itself), level m-1 the m-grams.
    With ``jobs > 1`` the start positions are split by first token into
    ``jobs`` partitions counted in forked processes; the result is identical.
    """
    counts = np.bincount(tok, minlength=sep + 1)
    counts[sep] = 0
    uni_tokens = np.flatnonzero(counts >= min_count).astype(np.uint32)
    lut = np.full(len(counts), -1, dtype=np.int64)
    lut[uni_tokens] = np.arange(len(uni_tokens))
    levels = [Level(np.full(len(uni_tokens), -1, dtype=np.int64), uni_tokens, counts[uni_tokens].astype(np.int64))]
    jobs = max(1, min(jobs, len(uni_tokens)))
    if jobs == 1 or len(tok) < PARALLEL_MIN_TOKENS:
        parts = [count_partition(tok, lut, np.ones(len(uni_tokens), dtype=bool), sep, min_count, max_len)]
    else:
        parts = _count_parallel(tok, lut, levels[0].count, sep, min_count, max_len, jobs)
    return levels + _merge_partitions(parts)


def count_partition(tok: np.ndarray, lut: np.ndarray, member: np.ndarray, sep: int, min_count: int,
                    max_len: int) -> list[Level]:
    """Levels 2..max_len for the positions whose first token's unigram row is in ``member``.

    ``lut`` maps a token id to its unigram row (-1 = rare); parents of the
    2-grams are unigram rows, deeper parents are rows local to this partition.
    """
    idx = np.int32 if len(tok) < 2**31 - 64 else np.int64  # halves memory on corpora < 2**31 tokens
    ids = lut.astype(np.int32)[tok]
    sel = ids >= 0
    sel[sel] = member[ids[sel]]
    act = np.flatnonzero(sel).astype(idx)
    del sel
    ids = ids[act]
    tbits = int(sep).bit_length()
    out: list[Level] = []
    for m in range(2, max_len + 1):
        nxt_pos = act + (m - 1)
        ok = nxt_pos < len(tok)
        act, ids, nxt_pos = act[ok], ids[ok], nxt_pos[ok]
        nxt = tok[nxt_pos]
        ok = nxt != sep
        act, ids, nxt = act[ok], ids[ok], nxt[ok]
        if not len(act):
            break
        level, act, ids = _extend(act, ids, nxt, min_count, tbits)
        if level is None:
            break
        out.append(level)
    return out


_SHARED: dict = {}
PARALLEL_MIN_TOKENS = 1_000_000


def _partition_worker(k: int) -> list[Level]:
    s = _SHARED
    return count_partition(s["tok"], s["lut"], s["parts"] == k, s["sep"], s["min_count"], s["max_len"])


def _count_parallel(tok, lut, uni_counts, sep, min_count, max_len, jobs) -> list[list[Level]]:
    """Balance unigrams over ``jobs`` partitions by count and count them in forked workers."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    parts = np.zeros(len(uni_counts), dtype=np.int64)
    load = [0] * jobs
    for row in np.argsort(-uni_counts, kind="stable").tolist():  # heaviest first, to the lightest part
        k = load.index(min(load))
        parts[row] = k
        load[k] += int(uni_counts[row])
    _SHARED.update(tok=tok, lut=lut, parts=parts, sep=sep, min_count=min_count, max_len=max_len)
    try:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_partition_worker, range(jobs)))
    finally:
        _SHARED.clear()


def _merge_partitions(parts: list[list[Level]]) -> list[Level]:
    """Concatenate per-partition levels, shifting parent rows (partition-local from level 3)."""
    merged: list[Level] = []
    depth = max((len(p) for p in parts), default=0)
    prev_sizes = None
    for j in range(depth):
        chunks = [p[j] for p in parts if j < len(p)]
        sizes = [len(p[j].token) if j < len(p) else 0 for p in parts]
        parents = []
        for k, p in enumerate(parts):
            if j < len(p):
                shift = 0 if j == 0 else sum(prev_sizes[:k])
                parents.append(p[j].parent + shift)
        merged.append(Level(np.concatenate(parents), np.concatenate([c.token for c in chunks]),
                            np.concatenate([c.count for c in chunks])))
        prev_sizes = sizes
    return merged


def _extend(act: np.ndarray, ids: np.ndarray, nxt: np.ndarray, min_count: int, tbits: int):
    """Count the keys ``(ids, nxt)`` of the active positions; keep the frequent ones.

    Sorts one packed ``uint64`` (parent id | token | row) when it fits in 64
    bits (3x faster than ``argsort``).  Returns ``(Level | None, act, ids)``.
    """
    n = len(act)
    pbits = max(1, int(ids.max()).bit_length())
    ibits = max(1, (n - 1).bit_length())
    u64 = np.uint64
    if pbits + tbits + ibits <= 64:
        packed = (ids.astype(u64) << u64(tbits + ibits)) | (nxt.astype(u64) << u64(ibits))
        packed |= np.arange(n, dtype=u64)
        packed.sort()
        perm = (packed & u64((1 << ibits) - 1)).astype(np.int32 if ibits < 31 else np.int64)
        packed >>= u64(ibits)
        keys = packed
    else:  # pragma: no cover - needs > 2**40 positions or ids
        keys = (ids.astype(u64) << u64(tbits)) | nxt.astype(u64)
        perm = np.argsort(keys, kind="stable")
        keys = keys[perm]
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    cnt = np.diff(np.append(starts, n))
    survive = cnt >= min_count
    if not survive.any():
        return None, act[:0], ids[:0]
    group = np.cumsum(first, dtype=np.int64) - 1
    pos_keep = survive[group]
    new_id = (np.cumsum(survive) - 1).astype(np.int32 if len(survive) < 2**31 else np.int64)
    kept = keys[starts[survive]]
    level = Level((kept >> u64(tbits)).astype(np.int64), (kept & u64((1 << tbits) - 1)).astype(np.uint32),
                  cnt[survive].astype(np.int64))
    return level, act[perm[pos_keep]], new_id[group[pos_keep]]


def ranked_children(parent_level_size: int, child: Level, ranks: int) -> np.ndarray:
    """int64 [ranks, P]: row of the r-th most frequent child of each parent, or -1.

    Ties go to the smaller token id (children are sorted by token within a parent).
    """
    out = np.full((ranks, parent_level_size), -1, dtype=np.int64)
    if not len(child.parent):
        return out
    order = np.lexsort((-child.count, child.parent))
    parents = child.parent[order]
    starts = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]])
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(parents)]))
    rank = np.arange(len(parents)) - group_start
    for r in range(ranks):
        sel = rank == r
        out[r, parents[sel]] = order[sel]
    return out


def key_tokens(levels: list[Level], n: int) -> np.ndarray:
    """uint32 [S, n]: the tokens of every n-gram of level n."""
    rows = levels[0].token[:, None]
    for m in range(1, n):
        lv = levels[m]
        rows = np.concatenate([rows[lv.parent], lv.token[:, None]], axis=1)
    return rows


# -- 4. prune ----------------------------------------------------------------
def _walk(levels: list[Level], best: list[np.ndarray], n: int, first: np.ndarray, key_count: np.ndarray,
          cost: CostModel, max_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Greedy continuation from ``first`` (rows of level n+1, -1 = none) for keys of order n.

    Returns ``tokens`` uint32 [K, D], ``length`` int64 [K], ``expected`` float64 [K]
    (accepted tokens per pass) and ``saving`` float64 [K] (ms per pass; -inf = none).
    """
    k = len(first)
    depth = max(0, min(max_len, len(levels) - n))
    tokens = np.full((k, max(depth, 1)), mapfile.PAD, dtype=np.uint32)
    shares = np.zeros((k, max(depth, 1)), dtype=np.float64)
    cur = first.copy()
    for i in range(depth):
        lv = levels[n + i]
        valid = cur >= 0
        rows = cur[valid]
        tokens[valid, i] = lv.token[rows]
        shares[valid, i] = lv.count[rows] / key_count[valid]
        nxt = np.full(k, -1, dtype=np.int64)
        if n + i + 1 < len(levels):
            nxt[valid] = best[n + i][rows]
        cur = nxt
    expected = np.cumsum(shares, axis=1)
    lengths = np.arange(1, tokens.shape[1] + 1)
    verify = np.array([cost.batch(L + 1) - cost.step_ms for L in lengths])
    saving = expected * cost.step_ms - verify[None, :]
    saving[shares == 0] = -np.inf
    pick = np.argmax(saving, axis=1)
    rows = np.arange(k)
    return tokens, pick + 1, expected[rows, pick], saving[rows, pick]


def select_candidates(levels: list[Level], options, cost: CostModel, bos: int) -> dict[str, np.ndarray]:
    """Keys (orders 1..N) and their ranked, pruned candidates as map arrays.

    A key is stored when it has a candidate, or (order >= 2) when its
    (n-1)-token suffix has one: then ``draft`` returns ``[]`` there instead of
    backing off to a shorter, misleading context.
    """
    n_max = min(options.max_order, len(levels))
    ranks = options.max_candidates
    children = [ranked_children(len(levels[m].token), levels[m + 1], ranks) for m in range(len(levels) - 1)]
    best = [c[0] for c in children]
    blocks, has_cand_prev, hashes_prev = [], None, None
    for n in range(1, n_max + 1):
        lv = levels[n - 1]
        ktok = key_tokens(levels, n)
        ktok[ktok == bos] = mapfile.TokenMap.BOS
        kcount = lv.count
        cands = []
        for r in range(ranks):
            first = children[n - 1][r] if n - 1 < len(children) else np.full(len(kcount), -1, dtype=np.int64)
            cands.append(_walk(levels, best, n, first, kcount, cost, options.max_draft_len))
        savings = np.stack([c[3] for c in cands], axis=1)  # [K, ranks]
        has_cand = savings.max(axis=1) > 0
        hashes = mapfile.key_hash_rows(ktok)
        store = has_cand.copy()
        if n >= 2 and len(hashes_prev):
            suffix = mapfile.key_hash_rows(ktok[:, 1:])
            pos = np.searchsorted(hashes_prev, suffix)
            pos = np.minimum(pos, len(hashes_prev) - 1)
            store |= has_cand_prev[pos] & (hashes_prev[pos] == suffix)
        order = np.argsort(hashes, kind="stable")
        hashes_prev, has_cand_prev = hashes[order], has_cand[order]
        rows = order[store[order]]
        blocks.append((n, rows, hashes[rows], ktok[rows], kcount[rows], cands, savings[rows]))
    return _assemble(blocks, n_max, options)


def _assemble(blocks: list, n_max: int, options) -> dict[str, np.ndarray]:
    """Flatten per-order key blocks into the arrays of :data:`tokenmap.mapfile.SCHEMA`."""
    key_hash, key_tok, key_cnt, n_cands = [], [], [], []
    cand_tok_chunks, cand_len, cand_exp, cand_sav = [], [], [], []
    for n, rows, hashes, ktok, kcount, cands, savings in blocks:
        key_hash.append(hashes)
        padded = np.full((len(rows), options.max_order), mapfile.PAD, dtype=np.uint32)
        padded[:, :n] = ktok
        key_tok.append(padded)
        key_cnt.append(kcount)
        rank_order = np.argsort(-savings, axis=1, kind="stable")  # best saving first
        sorted_sav = np.take_along_axis(savings, rank_order, axis=1)
        valid = sorted_sav > 0
        n_cands.append(valid.sum(axis=1))
        key_idx, slot = np.nonzero(valid)  # row-major: keys in order, candidates best first
        r = rank_order[key_idx, slot]
        src = rows[key_idx]
        tokens = np.stack([c[0] for c in cands])  # [ranks, K, D]
        lengths = np.stack([c[1] for c in cands])
        cand_len.append(lengths[r, src])
        cand_exp.append(np.stack([c[2] for c in cands])[r, src])
        cand_sav.append(np.stack([c[3] for c in cands])[r, src])
        sel = tokens[r, src]  # [C_n, D]
        mask = np.arange(sel.shape[1])[None, :] < cand_len[-1][:, None]
        cand_tok_chunks.append(sel[mask])
    counts = np.concatenate(n_cands) if n_cands else np.zeros(0, np.int64)
    lens = np.concatenate(cand_len) if cand_len else np.zeros(0, np.int64)
    order_sizes = [len(b[1]) for b in blocks] + [0] * (n_max - len(blocks))
    return {
        "key_hash": np.concatenate(key_hash).astype(np.uint64),
        "key_tokens": np.concatenate(key_tok).reshape(-1, options.max_order),
        "key_count": np.minimum(np.concatenate(key_cnt), 0xFFFFFFFF).astype(np.uint32),
        "order_offsets": np.r_[0, np.cumsum(order_sizes + [0] * (options.max_order - n_max))].astype(np.int64),
        "cand_offsets": np.r_[0, np.cumsum(counts)].astype(np.int64),
        "cand_tok_offsets": np.r_[0, np.cumsum(lens)].astype(np.int64),
        "cand_tokens": np.concatenate(cand_tok_chunks).astype(np.uint32),
        "cand_expected": np.concatenate(cand_exp).astype(np.float32),
        "cand_saving": np.concatenate(cand_sav).astype(np.float32),
    }
