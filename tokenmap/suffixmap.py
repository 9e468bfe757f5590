"""The suffix map: every context of the corpus, of any length, with its continuation counts.

A token map of format version 3 is a *suffix trie* of the corpus's token
stream (``BOS t1 ... tn SEP`` per utterance): one node per distinct token
sequence of at most ``depth`` tokens that occurs in it, with

* ``node_count``  how often the sequence occurs (so ``count(child) / count(node)``
  is the relative frequency of a continuation after exactly that context);
* ``node_link``   the node of the same sequence without its first token (the
  next-shorter context, for longest-match back-off in O(1));
* ``node_best``   the most frequent child (the draft walks it);
* ``edge_key``    ``parent << 32 | token`` of node ``i + 1``, sorted, so a child
  is found by one binary search.

Nodes are numbered level by level and, within a level, in the lexicographic
order of their sequences; the root is node 0.  Because a sequence's parent
comes earlier in that order, ``edge_key`` is sorted by construction.

Example (a corpus of two utterances, ``BOS=9``, ``SEP=10``)::

    >>> stream = np.array([9, 1, 2, 3, 10, 9, 1, 2, 4, 10], dtype=np.uint32)
    >>> sm = SuffixMap.from_stream(stream, bos=9, sep=10, depth=4)
    >>> node = sm.walk([9, 1])                  # the context "BOS 1"
    >>> sm.count(node), sm.token(sm.best(node)), sm.count(sm.best(node))
    (2, 2, 2)
    >>> sm.count(sm.walk([1, 2, 3]))            # "1 2 3" occurs once
    1
    >>> sm.walk([5]) == 0                        # unseen: back to the root
    True
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

log = logging.getLogger("tokenmap")

PAD = np.uint32(0xFFFFFFFF)
_LOW = (1 << 32) - 1
#: array name -> dtype of a suffix map (format version 3)
ARRAYS = {"edge_key": "<u8", "node_count": "<u4", "node_link": "<u4", "node_best": "<i4", "node_depth": "<u1"}


def _windows(stream: np.ndarray, sep: int, depth: int, start: int, stop: int) -> np.ndarray:
    """uint32 [stop - start, depth]: the ``depth`` tokens from each position, PAD after the utterance's SEP."""
    n = len(stream)
    pos = np.arange(start, stop, dtype=np.int64)
    seps = np.flatnonzero(stream == sep)
    nxt = seps[np.minimum(np.searchsorted(seps, pos), len(seps) - 1)] if len(seps) else np.full(len(pos), n - 1)
    nxt = np.where(nxt >= pos, nxt, n - 1)
    length = np.minimum(depth, nxt - pos + 1)
    cols = np.arange(depth, dtype=np.int64)
    idx = np.minimum(pos[:, None] + cols[None, :], n - 1)
    return np.where(cols[None, :] < length[:, None], stream[idx], PAD).astype(np.uint32)


def build_arrays(stream: np.ndarray, sep: int, depth: int, min_count: int = 1) -> dict[str, np.ndarray]:
    """The suffix-trie arrays (see the module docstring) of a ``BOS ... SEP`` token stream.

    Every position starts a window of ``depth`` tokens that ends after its
    utterance's SEP; sorting the windows makes each trie node a run of rows
    sharing a prefix.  A node is kept when it occurs ``min_count`` times or
    more (its link then exists too: a shorter context occurs at least as often).
    """
    stream = np.ascontiguousarray(stream, dtype=np.uint32)
    m = len(stream)
    if m == 0:
        raise ValueError("empty token stream")
    win = _windows(stream, sep, depth, 0, m)
    order = np.lexsort(win.T[::-1])
    rows = win[order]
    del win
    row_of_pos = np.empty(m, dtype=np.int64)
    row_of_pos[order] = np.arange(m)
    boundary = np.zeros(m, dtype=bool)
    boundary[0] = True
    level_nodes, level_first, group_of_row, counts, tokens, parents = [], [], [], [], [], []
    next_id = 1
    prev_node_of_group = None
    for j in range(depth):
        col = rows[:, j]
        boundary[1:] |= col[1:] != col[:-1]
        gid = np.cumsum(boundary) - 1
        first = np.flatnonzero(boundary)
        size = np.diff(np.append(first, m))
        keep = (rows[first, j] != PAD) & (size >= min_count)
        node_of_group = np.full(len(first), -1, dtype=np.int64)
        node_of_group[keep] = next_id + np.arange(int(keep.sum()))
        if j == 0:
            par = np.zeros(int(keep.sum()), dtype=np.int64)
        else:
            par = prev_node_of_group[group_of_row[-1][first[keep]]]
        counts.append(size[keep])
        tokens.append(rows[first[keep], j])
        parents.append(par)
        group_of_row.append(gid)
        level_nodes.append(node_of_group)
        level_first.append(first)
        next_id += int(keep.sum())
        prev_node_of_group = node_of_group
        if not keep.any():
            break
    n_nodes = next_id
    node_count = np.empty(n_nodes, dtype=np.uint32)
    node_count[0] = min(m, _LOW)
    node_count[1:] = np.concatenate(counts)
    token = np.concatenate(tokens).astype(np.uint64)
    parent = np.concatenate(parents).astype(np.uint64)
    edge_key = (parent << np.uint64(32)) | token
    node_depth = np.zeros(n_nodes, dtype=np.uint8)
    node_link = np.zeros(n_nodes, dtype=np.uint32)
    for j, (node_of_group, first) in enumerate(zip(level_nodes, level_first)):
        keep = node_of_group >= 0
        ids = node_of_group[keep]
        node_depth[ids] = j + 1
        if j == 0:
            continue  # a one-token sequence backs off to the root
        pos = order[first[keep]] + 1  # the same window one token later: the sequence without its first token
        node_link[ids] = level_nodes[j - 1][group_of_row[j - 1][row_of_pos[pos]]]
    return {"edge_key": edge_key, "node_count": node_count, "node_link": node_link,
            "node_best": _best_children(parent.astype(np.int64), node_count[1:], n_nodes),
            "node_depth": node_depth}


def _best_children(parent: np.ndarray, count: np.ndarray, n_nodes: int) -> np.ndarray:
    """int32 [n_nodes]: each node's most frequent child (the smaller token on ties), or -1."""
    best = np.full(n_nodes, -1, dtype=np.int32)
    if not len(parent):
        return best
    child = np.arange(1, len(parent) + 1)
    order = np.lexsort((child, -count.astype(np.int64), parent))  # children are in token order already
    p = parent[order]
    first = np.ones(len(p), dtype=bool)
    first[1:] = p[1:] != p[:-1]
    best[p[first]] = child[order][first]
    return best


class SuffixMap:
    """Longest-match lookups and greedy walks over the arrays of :func:`build_arrays`.

    ``header`` carries ``depth``, ``bos`` and ``sep`` (the ids that mark an
    utterance's start and end in the trie).
    """

    def __init__(self, header: dict, arrays: dict[str, np.ndarray], path=None, buf=None):
        self.header = header
        self.path = path
        self._buf = buf
        self.arrays = arrays
        self.depth = int(header["depth"])
        self.bos = int(header["bos"])
        self.sep = int(header["sep"])
        self._edges = arrays["edge_key"]
        self._count = arrays["node_count"]
        self._link = arrays["node_link"]
        self._best = arrays["node_best"]
        self._depth = arrays["node_depth"]
        self.bos_node = self.child(0, self.bos)

    @classmethod
    def from_stream(cls, stream: np.ndarray, bos: int, sep: int, depth: int = 24, min_count: int = 1) -> "SuffixMap":
        """Build in memory (tests, the session's own text)."""
        arrays = build_arrays(np.asarray(stream, dtype=np.uint32), sep, depth, min_count)
        return cls({"depth": depth, "bos": bos, "sep": sep}, arrays)

    @property
    def task(self) -> str | None:
        return self.header.get("task")

    @property
    def num_nodes(self) -> int:
        return int(self._count.shape[0])

    def count(self, node: int) -> int:
        return int(self._count[node])

    def token(self, node: int) -> int:
        """The last token of ``node``'s sequence (``node`` > 0)."""
        return int(self._edges[node - 1]) & _LOW

    def best(self, node: int) -> int:
        """The most frequent child of ``node``, or -1."""
        return int(self._best[node])

    def child(self, node: int, token: int) -> int:
        """The child of ``node`` for ``token``, or -1."""
        if token < 0 or token > _LOW:
            return -1
        key = np.uint64((node << 32) | token)
        i = int(self._edges.searchsorted(key))
        return i + 1 if i < len(self._edges) and self._edges[i] == key else -1

    def advance(self, node: int, token: int) -> int:
        """The longest suffix of ``node``'s sequence + ``token`` that the trie holds (root if none)."""
        while True:
            if self._depth[node] < self.depth:
                c = self.child(node, token)
                if c > 0:
                    return c
            if node == 0:
                return 0
            node = int(self._link[node])

    def walk(self, tokens: Sequence[int], node: int = 0) -> int:
        """:meth:`advance` over ``tokens`` from ``node``."""
        for t in tokens:
            node = self.advance(node, int(t))
        return node

    def next_choice(self, node: int) -> tuple[int, int, float]:
        """``(context node, child, share)`` of the most frequent continuation after ``node``.

        A node at full depth has no children: the context backs off to its
        suffix first.  ``child`` is -1 when nothing follows.
        """
        while self._depth[node] >= self.depth or self._best[node] < 0:
            if node == 0:
                return 0, -1, 0.0
            node = int(self._link[node])
        c = int(self._best[node])
        return node, c, float(self._count[c]) / float(self._count[node])

    def close(self) -> None:
        """Release the memory map (views become invalid)."""
        self.arrays = {}
        if hasattr(self._buf, "close"):
            try:
                self._buf.close()
            except BufferError:
                pass
