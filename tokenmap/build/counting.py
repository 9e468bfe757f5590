"""Counting frequent n-grams of a token stream in bounded memory (the builder's count step).

Counting is level by level (apriori): level m holds the m-grams whose count
reaches ``min_count``; only their positions are extended to m + 1.  Keys are
exact: an m-gram is ``(row of its (m-1)-gram prefix, last token)`` packed in
a ``uint64``, so no hash collision can merge two n-grams.

Counting streams: each level is one pass over the token stream in chunks of
:data:`CHUNK_TOKENS`; a chunk's keys are counted with one sort and merged
into the level's distinct counts, and the chunk's active positions are
spilled to a temporary file for the next level.  Memory is the distinct
n-grams of one level plus the frequent ones kept, not the corpus.  Beyond
the ``full_len`` levels a candidate walk can reach only the ``branches``
most frequent children (then the most frequent one), so only those are
extended.  The stream can be split by first token into independent
partitions (:func:`count_partition`), one per core.

Example::

    >>> tok = np.array([9, 1, 2, 3, 10, 9, 1, 2, 4, 10], dtype=np.uint32)   # BOS=9, SEP=10
    >>> levels = count_levels(tok, sep=10, min_count=2, max_len=4)
    >>> [len(lv.token) for lv in levels]        # 1-grams 9,1,2; 2-grams (9 1),(1 2); 3-gram (9 1 2)
    [3, 2, 1]
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np


#: tokens per chunk of a counting pass (a counting process holds ~40 bytes per chunk token)
CHUNK_TOKENS = 1 << 21
PARALLEL_MIN_TOKENS = 1_000_000
_U64 = np.uint64


@dataclass(frozen=True)
class Level:
    """Frequent m-grams of one length m, sorted by (parent, token).

    ``parent`` int64 [S] row in level m-1 (-1 for m = 1), ``token`` uint32 [S],
    ``count`` int64 [S] corpus occurrences.
    """

    parent: np.ndarray
    token: np.ndarray
    count: np.ndarray


@dataclass(frozen=True)
class TokenFile:
    """A spooled ``uint32`` token stream read chunk by chunk (never mapped whole).

    >>> TokenFile("tokens.u32", 10).read(2, 5)   # doctest: +SKIP
    array([17, 4, 9], dtype=uint32)
    """

    path: str
    length: int

    def __len__(self) -> int:
        return self.length

    def read(self, start: int, stop: int) -> np.ndarray:
        """Tokens ``[start, min(stop, length))``."""
        count = min(stop, self.length) - start
        if count <= 0:
            return np.zeros(0, np.uint32)
        return np.fromfile(self.path, dtype=np.uint32, count=count, offset=4 * start)


def _read(tok, start: int, stop: int) -> np.ndarray:
    return tok.read(start, stop) if isinstance(tok, TokenFile) else np.asarray(tok[start:stop])


@dataclass(frozen=True)
class CountPlan:
    """What to count: m-grams up to ``max_len`` without ``sep``, kept from ``min_count``.

    Rows of levels ``m <= full_len`` are all extended to m + 1; at level
    ``full_len + 1`` only each parent's ``branches`` most frequent children,
    deeper only the most frequent child (ties: smaller token).
    """

    sep: int
    min_count: int
    max_len: int
    full_len: int
    branches: int
    chunk: int


# -- 3. count ----------------------------------------------------------------
def count_levels(tok, sep: int, min_count: int, max_len: int, jobs: int = 1, *, full_len: int | None = None,
                 branches: int = 1, chunk_tokens: int | None = None) -> list[Level]:
    """Frequent m-grams (m = 1..max_len) of a ``BOS ... SEP`` stream (apriori, chunked).

    ``tok`` uint32 [T] array or :class:`TokenFile`; m-grams never contain
    ``sep``.  Level 0 of the result holds the unigrams (``token`` = the id
    itself), level m-1 the m-grams.  ``full_len`` (default ``max_len``) and
    ``branches``: see :class:`CountPlan`.  With ``jobs > 1`` the start
    positions are split by first token into ``jobs`` partitions counted in
    forked processes; the result does not depend on ``jobs`` or the chunk size.
    """
    plan = CountPlan(sep, min_count, max_len, max_len if full_len is None else full_len, max(1, branches),
                     max(1, chunk_tokens or CHUNK_TOKENS))
    counts = np.zeros(sep + 1, dtype=np.int64)
    for a in range(0, len(tok), plan.chunk):
        part = np.bincount(_read(tok, a, a + plan.chunk), minlength=sep + 1)
        if len(part) > len(counts):
            counts = np.r_[counts, np.zeros(len(part) - len(counts), np.int64)]
        counts[:len(part)] += part
    counts[sep] = 0
    uni_tokens = np.flatnonzero(counts >= min_count).astype(np.uint32)
    lut = np.full(len(counts), -1, dtype=np.int32)
    lut[uni_tokens] = np.arange(len(uni_tokens))
    levels = [Level(np.full(len(uni_tokens), -1, dtype=np.int64), uni_tokens, counts[uni_tokens].astype(np.int64))]
    jobs = max(1, min(jobs, len(uni_tokens)))
    with tempfile.TemporaryDirectory(prefix="tokenmap-count-") as work:
        if jobs == 1 or len(tok) < PARALLEL_MIN_TOKENS:
            parts = [count_partition(tok, lut, np.ones(len(uni_tokens), dtype=bool), plan, work)]
        else:
            parts = _count_parallel(tok, lut, levels[0].count, plan, jobs, work)
        return levels + _merge_partitions(parts)


def count_partition(tok, lut: np.ndarray, member: np.ndarray, plan: CountPlan, work: str,
                    name: str = "p") -> list[Level]:
    """Levels 2..max_len for the positions whose first token's unigram row is in ``member``.

    ``lut`` maps a token id to its unigram row (-1 = rare); parents of the
    2-grams are unigram rows, deeper parents are rows local to this partition.
    Per level: one pass over the chunks of ``tok``; a chunk's active positions
    come from the spill file of the previous level (``work/name-m``).
    """
    tbits = int(plan.sep).bit_length()
    out: list[Level] = []
    spill, ext = None, None
    for m in range(2, plan.max_len + 1):
        acc = _Counts()
        writer = _Spill(os.path.join(work, f"{name}-{m}")) if m < plan.max_len else None
        for c, a in enumerate(range(0, len(tok), plan.chunk)):
            toks = _read(tok, a, a + plan.chunk + plan.max_len)
            if spill is None:  # 2-grams: positions of frequent first tokens of this partition
                ids = lut[toks[:plan.chunk]]
                sel = ids >= 0
                sel[sel] = member[ids[sel]]
                pos = np.flatnonzero(sel).astype(np.int32)
                ids = ids[pos]
            else:
                pos, inv, prev_keys = spill.read(c)
                ids = _lookup(ext, prev_keys)[inv]
                pos, ids = pos[ids >= 0], ids[ids >= 0]
            nxt_pos = pos + (m - 1)
            ok = nxt_pos < len(toks)
            pos, ids, nxt = pos[ok], ids[ok], toks[nxt_pos[ok]]
            ok = nxt != plan.sep
            keys, cnt, inv = _unique_inverse((ids[ok].astype(_U64) << _U64(tbits)) | nxt[ok].astype(_U64))
            if writer is not None:
                writer.write(pos[ok], inv, keys)
            acc.add(keys, cnt)
        if spill is not None:
            spill.close()
        spill = writer.rewind() if writer is not None else None
        keys, cnt = acc.result()
        survive = cnt >= plan.min_count
        if not survive.any():
            break
        kept = keys[survive]
        level = Level((kept >> _U64(tbits)).astype(np.int64), (kept & _U64((1 << tbits) - 1)).astype(np.uint32),
                      cnt[survive])
        out.append(level)
        ext = _extendable(level, kept, m, plan)
    if spill is not None:
        spill.close()
    return out


def _extendable(level: Level, kept: np.ndarray, m: int, plan: CountPlan) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted keys, rows)`` of the m-grams to extend to m + 1 (see :class:`CountPlan`)."""
    if m <= plan.full_len:
        return kept, np.arange(len(kept), dtype=np.int32)
    rows = np.flatnonzero(child_rank(level) < (plan.branches if m == plan.full_len + 1 else 1))
    return kept[rows], rows.astype(np.int32)


def _lookup(ext: tuple[np.ndarray, np.ndarray], keys: np.ndarray) -> np.ndarray:
    """int32 row of each of ``keys`` among the extendable ``ext``, -1 where absent."""
    table, rows = ext
    if not len(table) or not len(keys):
        return np.full(len(keys), -1, dtype=np.int32)
    j = np.minimum(np.searchsorted(table, keys), len(table) - 1)
    return np.where(table[j] == keys, rows[j], -1).astype(np.int32)


def _unique_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sorted distinct keys, counts int64, inverse int32)`` of uint64 ``keys``.

    Sorts one packed ``uint64`` (key | row) when it fits in 64 bits (3x
    faster than ``argsort``).
    """
    n = len(keys)
    if n == 0:
        return keys, np.zeros(0, np.int64), np.zeros(0, np.int32)
    ibits = max(1, (n - 1).bit_length())
    if int(keys.max()).bit_length() + ibits <= 64:
        packed = (keys << _U64(ibits)) | np.arange(n, dtype=_U64)
        packed.sort()
        perm = (packed & _U64((1 << ibits) - 1)).astype(np.intp)
        packed >>= _U64(ibits)
        sk = packed
    else:  # pragma: no cover - needs > 2**40 distinct prefixes
        perm = np.argsort(keys, kind="stable")
        sk = keys[perm]
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(sk[1:], sk[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    inv = np.empty(n, dtype=np.int32)
    inv[perm] = np.cumsum(first, dtype=np.int32) - 1
    return sk[starts], np.diff(np.append(starts, n)), inv


class _Counts:
    """Distinct uint64 keys with summed counts, merged chunk by chunk (sorted)."""

    def __init__(self) -> None:
        self.keys = np.zeros(0, _U64)
        self.cnt = np.zeros(0, np.int64)

    def add(self, keys: np.ndarray, cnt: np.ndarray) -> None:
        if not len(self.keys):
            self.keys, self.cnt = keys, cnt
            return
        k = np.concatenate([self.keys, keys])
        order = np.argsort(k, kind="stable")  # timsort: merges the two sorted runs
        k, c = k[order], np.concatenate([self.cnt, cnt])[order]
        first = np.empty(len(k), dtype=bool)
        first[0] = True
        np.not_equal(k[1:], k[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        self.keys, self.cnt = k[starts], np.add.reduceat(c, starts)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        return self.keys, self.cnt


class _Spill:
    """Per-chunk ``(positions, inverse, distinct keys)`` of one level in a temporary file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.f = open(path, "wb")
        self.sizes: list[tuple[int, int]] = []

    def write(self, pos: np.ndarray, inv: np.ndarray, keys: np.ndarray) -> None:
        pos.astype(np.int32).tofile(self.f)
        inv.tofile(self.f)
        keys.tofile(self.f)
        self.sizes.append((len(pos), len(keys)))

    def rewind(self) -> "_Spill":
        self.f.close()
        self.f = open(self.path, "rb")
        return self

    def read(self, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Chunk ``c``'s arrays (chunks are read in order)."""
        n, u = self.sizes[c]
        return np.fromfile(self.f, np.int32, n), np.fromfile(self.f, np.int32, n), np.fromfile(self.f, _U64, u)

    def close(self) -> None:
        self.f.close()
        os.remove(self.path)


_SHARED: dict = {}


def _partition_worker(k: int) -> list[str]:
    """Count partition ``k`` and save its levels next to the spill files (returns their stems)."""
    s = _SHARED
    levels = count_partition(s["tok"], s["lut"], s["parts"] == k, s["plan"], s["work"], f"p{k}")
    stems = []
    for j, lv in enumerate(levels):
        stem = os.path.join(s["work"], f"level-p{k}-{j}")
        for name in ("parent", "token", "count"):
            np.save(f"{stem}.{name}.npy", getattr(lv, name))
        stems.append(stem)
    return stems


def _load_level(item) -> Level:
    if isinstance(item, Level):
        return item
    arrays = {}
    for name in ("parent", "token", "count"):
        arrays[name] = np.load(f"{item}.{name}.npy")
        os.remove(f"{item}.{name}.npy")
    return Level(**arrays)


def _count_parallel(tok, lut, uni_counts, plan: CountPlan, jobs: int, work: str) -> list[list[str]]:
    """Balance unigrams over ``jobs`` partitions by count and count them in forked workers."""
    parts = np.zeros(len(uni_counts), dtype=np.int64)
    load = [0] * jobs
    for row in np.argsort(-uni_counts, kind="stable").tolist():  # heaviest first, to the lightest part
        k = load.index(min(load))
        parts[row] = k
        load[k] += int(uni_counts[row])
    _SHARED.update(tok=tok, lut=lut, parts=parts, plan=plan, work=work)
    try:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_partition_worker, range(jobs)))
    finally:
        _SHARED.clear()


def _merge_partitions(parts: list[list]) -> list[Level]:
    """Concatenate per-partition levels (``Level`` or saved stems), shifting parent rows
    (partition-local from level 3); loads one level at a time."""
    if len(parts) == 1:
        return [_load_level(x) for x in parts[0]]
    merged: list[Level] = []
    depth = max((len(p) for p in parts), default=0)
    prev_sizes = None
    for j in range(depth):
        chunks = [_load_level(p[j]) if j < len(p) else None for p in parts]
        sizes = [len(c.token) if c is not None else 0 for c in chunks]
        parents = [c.parent + (0 if j == 0 else sum(prev_sizes[:k])) for k, c in enumerate(chunks) if c is not None]
        present = [c for c in chunks if c is not None]
        merged.append(Level(np.concatenate(parents), np.concatenate([c.token for c in present]),
                            np.concatenate([c.count for c in present])))
        prev_sizes = sizes
    return merged


def child_rank(level: Level) -> np.ndarray:
    """int64 [S]: rank of each row among its siblings, most frequent first (ties: smaller token)."""
    n = len(level.parent)
    order = np.lexsort((-level.count, level.parent))
    parents = level.parent[order]
    starts = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]]) if n else np.zeros(0, np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    return rank
