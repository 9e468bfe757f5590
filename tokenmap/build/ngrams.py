"""Choosing draft candidates from counted n-grams (the core of the builder's prune step).

Counting lives in :mod:`tokenmap.build.counting` (re-exported here: :func:`count_levels`,
:class:`Level`, :class:`TokenFile`).  For every key (a frequent context of
1..N tokens) :func:`select_candidates` walks the trie of its continuations,
one branch per frequent next token, cuts each draft where its expected
saving peaks (:class:`tokenmap.decode.cost.CostModel`), merges near-duplicate
branches (:func:`near_duplicates`) and keeps the best ``max_candidates``.

Example::

    >>> from tokenmap.build.counting import count_levels
    >>> tok = np.array([9, 1, 2, 3, 10, 9, 1, 2, 4, 10], dtype=np.uint32)   # BOS=9, SEP=10
    >>> levels = count_levels(tok, sep=10, min_count=2, max_len=4)
    >>> ranked_children(len(levels[1].token), levels[2], 1)[0].tolist()   # 2-grams (1 2), (9 1): best child
    [-1, 0]
"""

from __future__ import annotations

import numpy as np

from tokenmap.maps import mapfile, schema
from tokenmap.decode.cost import CostModel
from tokenmap.build.counting import Level, child_rank


def ranked_children(parent_level_size: int, child: Level, ranks: int) -> np.ndarray:
    """int64 [ranks, P]: row of the r-th most frequent child of each parent, or -1.

    Ties go to the smaller token id (children are sorted by token within a parent).
    """
    out = np.full((ranks, parent_level_size), -1, dtype=np.int64)
    if not len(child.parent):
        return out
    rank = child_rank(child)
    for r in range(ranks):
        rows = np.flatnonzero(rank == r)
        out[r, child.parent[rows]] = rows
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
    tokens = np.full((k, max(depth, 1)), schema.PAD, dtype=np.uint32)
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


#: keys walked at a time (bounds the walk's float64 [keys, depth] temporaries)
WALK_BLOCK = 1 << 15


def _walk_branches(levels: list[Level], best: list[np.ndarray], n: int, firsts: np.ndarray, key_count: np.ndarray,
                   cost: CostModel, max_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_walk` for every branch (``firsts`` [R, K]) in blocks of :data:`WALK_BLOCK` keys.

    Returns ``tokens`` uint32 [R, K, D], ``length`` int64 [R, K], ``expected`` and ``saving`` float64 [R, K].
    """
    ranks, k = firsts.shape
    depth = max(1, min(max_len, len(levels) - n))
    tokens = np.empty((ranks, k, depth), dtype=np.uint32)
    length = np.empty((ranks, k), dtype=np.int64)
    expected, saving = np.empty((ranks, k)), np.empty((ranks, k))
    for a in range(0, k, WALK_BLOCK):
        b = min(k, a + WALK_BLOCK)
        for r in range(ranks):
            tokens[r, a:b], length[r, a:b], expected[r, a:b], saving[r, a:b] = _walk(
                levels, best, n, firsts[r, a:b], key_count[a:b], cost, max_len)
    return tokens, length, expected, saving


def near_duplicates(tokens: np.ndarray, lengths: np.ndarray, savings: np.ndarray, keep: int) -> tuple[np.ndarray, int]:
    """Merge near-duplicate candidates of each key; returns ``(savings, merged)``.

    ``tokens`` [R, K, D], ``lengths`` and ``savings`` [R, K] hold the
    candidates of K keys, branch by branch (branch r starts at the r-th most
    frequent next token, so two candidates of a key always differ in their
    first token).  Two candidates are *near-duplicates* when that is their only
    difference over the shorter one's length, at least 2 tokens (e.g. after
    "Pump" the drafts " 3 inspected." and " 4 inspected" differ only in the
    number).  Best saving first, a candidate that nearly duplicates a better
    kept one is merged into it: dropped (its saving becomes ``-inf``) and
    counted in ``merged``.  The kept one's expected saving is not raised by the
    merged one's occurrences: verification is exact, so where the merged
    branch occurs the kept draft is rejected at its first token.  The freed
    slots go to the branches ``r >= keep`` (best saving first, themselves not
    near-duplicates); without merges the result equals the first ``keep``
    branches'.

    >>> t = np.array([[[5, 7, 8]], [[6, 7, 8]], [[4, 9, 9]]], dtype=np.uint32)
    >>> sav, merged = near_duplicates(t, np.array([[3], [2], [3]]), np.array([[9.0], [4.0], [2.0]]), keep=2)
    >>> sav[:, 0].tolist(), merged        # branch 1 merged into branch 0, branch 2 takes its slot
    ([9.0, -inf, 2.0], 1)
    """
    r_all, k = savings.shape
    tail = np.arange(1, tokens.shape[2])[None, :]
    near = np.zeros((r_all, r_all, k), dtype=bool)  # branch pairs, symmetric
    for i in range(r_all):
        for j in range(i + 1, r_all):
            short = np.minimum(lengths[i], lengths[j])
            same = ((tokens[i][:, 1:] == tokens[j][:, 1:]) | (tail >= short[:, None])).all(axis=1)
            near[i, j] = near[j, i] = same & (short >= 2)
    order = np.argsort(-savings, axis=0, kind="stable")  # [R, K]: slot -> branch, best saving first
    cols = np.arange(k)
    ssav = savings[order, cols]
    alive = ssav > 0
    dup = np.zeros_like(alive)
    for s in range(1, r_all):
        for t in range(s):
            dup[s] |= alive[t] & ~dup[t] & near[order[t], order[s], cols]
    extra = order >= keep
    merged = alive & dup & ~extra
    freed = merged.sum(axis=0)
    kept = alive & ~dup
    kept &= ~extra | (np.cumsum(kept & extra, axis=0) <= freed[None, :])
    out = np.full_like(savings, -np.inf)
    out[order, cols] = np.where(kept, ssav, -np.inf)
    return out, int(merged.sum())


def select_candidates(levels: list[Level], options, cost: CostModel, bos: int,
                      report: dict | None = None) -> dict[str, np.ndarray]:
    """Keys (orders 1..N) and their ranked, pruned candidates as map arrays.

    A key is stored when it has a candidate, or (order >= 2) when its
    (n-1)-token suffix has one: then ``draft`` returns ``[]`` there instead of
    backing off to a shorter, misleading context.  With
    ``options.merge_near_duplicates`` one more branch per key is walked and
    :func:`near_duplicates` merges; ``report["merged"]`` gets their number.
    Levels deeper than N + 1 need only their most frequent children
    (``count_levels(full_len=N, branches=branches_needed(options))``).
    """
    n_max = min(options.max_order, len(levels))
    keep = options.max_candidates
    ranks = branches_needed(options)
    children = [ranked_children(len(levels[m].token), levels[m + 1], ranks if m < n_max else 1)
                for m in range(len(levels) - 1)]
    best = [c[0] for c in children]
    blocks, has_cand_prev, hashes_prev, merged = [], None, None, 0
    for n in range(1, n_max + 1):
        lv = levels[n - 1]
        ktok = key_tokens(levels, n)
        ktok[ktok == bos] = mapfile.TokenMap.BOS
        kcount = lv.count
        firsts = children[n - 1] if n - 1 < len(children) else np.full((ranks, len(kcount)), -1, dtype=np.int64)
        cands = _walk_branches(levels, best, n, firsts, kcount, cost, options.max_draft_len)
        savings = cands[3].T  # [K, ranks]
        if ranks > keep:
            sav_t, m = near_duplicates(cands[0], cands[1], cands[3], keep)
            savings, merged = sav_t.T, merged + m
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
    if report is not None:
        report["merged"] = merged
    return _assemble(blocks, n_max, options)


def branches_needed(options) -> int:
    """Branches walked per key: ``max_candidates``, plus one to refill merged slots."""
    return options.max_candidates + (1 if getattr(options, "merge_near_duplicates", False) else 0)


def _assemble(blocks: list, n_max: int, options) -> dict[str, np.ndarray]:
    """Flatten per-order key blocks into the arrays of :data:`tokenmap.maps.schema.SCHEMA`."""
    key_hash, key_tok, key_cnt, n_cands = [], [], [], []
    cand_tok_chunks, cand_len, cand_exp, cand_sav = [], [], [], []
    for n, rows, hashes, ktok, kcount, cands, savings in blocks:
        key_hash.append(hashes)
        padded = np.full((len(rows), options.max_order), schema.PAD, dtype=np.uint32)
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
        tokens, lengths, expected, saving = cands  # [ranks, K, D], [ranks, K] x 3
        cand_len.append(lengths[r, src])
        cand_exp.append(expected[r, src])
        cand_sav.append(saving[r, src])
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
