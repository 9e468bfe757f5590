"""The token map: every context of the corpus, of any length, with its continuation counts.

A token map is a *suffix trie* of the corpus's token stream (``BOS t1 ... tn SEP`` per utterance): one node
per distinct token sequence of at most ``depth`` tokens that occurs in it, with

* ``node_count``  how often the sequence occurs (so ``count(child) / count(node)`` is the relative frequency
  of a continuation after exactly that context);
* ``node_link``   the node of the same sequence without its first token (the next-shorter context, for
  longest-match back-off in O(1));
* ``node_best``   the most frequent child (the draft walks it);
* ``edge_key``    ``parent << 32 | token`` of node ``i + 1``, sorted, so a child is found by one binary search.

Nodes are numbered level by level and, within a level, in the lexicographic order of their sequences; the
root is node 0. A sequence's parent comes earlier in that order, so ``edge_key`` is sorted by construction.

Example (a corpus of two utterances, ``BOS=9``, ``SEP=10``)::

    >>> stream = np.array([9, 1, 2, 3, 10, 9, 1, 2, 4, 10], dtype=np.uint32)
    >>> sm = TokenMap.from_stream(stream, bos=9, sep=10, depth=4)
    >>> node = sm.walk([9, 1])                  # the context "BOS 1"
    >>> sm.count(node), sm.token(sm.best(node)), sm.count(sm.best(node))
    (2, 2, 2)
    >>> sm.count(sm.walk([1, 2, 3]))            # "1 2 3" occurs once
    1
    >>> sm.walk([5]) == 0                        # unseen: back to the root
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PAD = np.uint32(0xFFFFFFFF)
_LOW = (1 << 32) - 1
#: array name -> dtype of a token map
ARRAYS = {"edge_key": "<u8", "node_count": "<u4", "node_link": "<u4", "node_best": "<i4", "node_depth": "<u1"}


#: positions sorted at once; the stream is cut by first token into chunks of about this many
CHUNK_POSITIONS = 2_000_000


def _windows(stream: np.ndarray, sep: int, depth: int, pos: np.ndarray) -> np.ndarray:
    """uint32 [len(pos), depth]: the ``depth`` tokens from each position, PAD after the utterance's SEP."""
    n = len(stream)
    seps = np.flatnonzero(stream == sep)
    nxt = seps[np.minimum(np.searchsorted(seps, pos), len(seps) - 1)] if len(seps) else np.full(len(pos), n - 1)
    nxt = np.where(nxt >= pos, nxt, n - 1)
    length = np.minimum(depth, nxt - pos + 1)
    cols = np.arange(depth, dtype=np.int64)
    idx = np.minimum(pos[:, None] + cols[None, :], n - 1)
    return np.where(cols[None, :] < length[:, None], stream[idx], PAD).astype(np.uint32)


def _chunk_levels(rows: np.ndarray, depth: int, min_count: int) -> list[tuple[np.ndarray, ...]]:
    """Per level of one chunk of sorted windows: ``(token, count, parent index in the level above)``."""
    m = len(rows)
    boundary = np.zeros(m, dtype=bool)
    boundary[0] = True
    levels, prev_node_of_row = [], None
    for j in range(depth):
        col = rows[:, j]
        boundary[1:] |= col[1:] != col[:-1]
        first = np.flatnonzero(boundary)
        size = np.diff(np.append(first, m))
        keep = (rows[first, j] != PAD) & (size >= min_count)
        if not keep.any():
            break
        kept_first = first[keep]
        parent = np.zeros(len(kept_first), dtype=np.int64) if j == 0 else prev_node_of_row[kept_first]
        levels.append((rows[kept_first, j], size[keep], parent))
        node_of_group = np.full(len(first), -1, dtype=np.int64)
        node_of_group[keep] = np.arange(len(kept_first))
        prev_node_of_row = node_of_group[np.cumsum(boundary) - 1]
    return levels


def build_arrays(stream: np.ndarray, sep: int, depth: int, min_count: int = 1,
                 chunk_positions: int = CHUNK_POSITIONS) -> dict[str, np.ndarray]:
    """The suffix-trie arrays (see the module docstring) of a ``BOS ... SEP`` token stream.

    Every position starts a window of ``depth`` tokens that ends after its
    utterance's SEP; sorting the windows makes each trie node a run of rows
    sharing a prefix.  Windows are sorted in chunks of whole first tokens
    (about ``chunk_positions`` rows each), which bounds memory; each level's
    nodes are the chunks' nodes in first-token order, so the numbering is the
    same as one global sort.  A node is kept when it occurs ``min_count`` times
    or more (its suffix then occurs as often: its link exists too).
    """
    stream = np.ascontiguousarray(stream, dtype=np.uint32)
    if len(stream) == 0:
        raise ValueError("empty token stream")
    by_first = np.argsort(stream, kind="stable")
    firsts = stream[by_first]
    cuts = [0]
    while cuts[-1] < len(by_first):  # cut only between different first tokens
        end = min(len(by_first), cuts[-1] + chunk_positions)
        if end < len(by_first):
            end = int(np.searchsorted(firsts, firsts[end - 1], side="right"))
        cuts.append(end)
    chunks = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        win = _windows(stream, sep, depth, np.sort(by_first[lo:hi]))
        chunks.append(_chunk_levels(win[np.lexsort(win.T[::-1])], depth, min_count))
        del win
    return _assemble(chunks, depth, len(stream))


def _assemble(chunks: list, depth: int, total: int) -> dict[str, np.ndarray]:
    """Global arrays from per-chunk levels: level by level, chunk after chunk (``total``: positions)."""
    tokens, counts, parents = [], [], []
    level_start, base = [], 1
    prev_offsets = None
    for j in range(depth):
        sizes = [len(c[j][0]) if len(c) > j else 0 for c in chunks]
        if not sum(sizes):
            break
        offsets = np.concatenate([[0], np.cumsum(sizes)])[:-1]
        level_start.append(base)
        for ci, c in enumerate(chunks):
            if len(c) <= j:
                continue
            tok, cnt, par = c[j]
            tokens.append(tok)
            counts.append(cnt)
            parents.append(np.zeros(len(tok), np.int64) if j == 0 else level_start[j - 1] + prev_offsets[ci] + par)
        base += sum(sizes)
        prev_offsets = offsets
    n_nodes = base
    token = np.concatenate(tokens).astype(np.uint64) if tokens else np.zeros(0, np.uint64)
    parent = np.concatenate(parents).astype(np.uint64) if parents else np.zeros(0, np.uint64)
    edge_key = (parent << np.uint64(32)) | token
    node_count = np.empty(n_nodes, dtype=np.uint32)
    node_count[0] = min(total, _LOW)
    node_count[1:] = np.minimum(np.concatenate(counts), _LOW) if counts else 0
    node_depth = np.zeros(n_nodes, dtype=np.uint8)
    node_link = np.zeros(n_nodes, dtype=np.uint32)
    bounds = level_start + [n_nodes]
    for j in range(len(level_start)):
        lo, hi = bounds[j], bounds[j + 1]
        node_depth[lo:hi] = j + 1
        if j:  # the sequence without its first token: the link's child for the same last token
            key = (node_link[parent[lo - 1:hi - 1].astype(np.int64)].astype(np.uint64) << np.uint64(32)) \
                | token[lo - 1:hi - 1]
            node_link[lo:hi] = np.searchsorted(edge_key, key) + 1
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


class TokenMap:
    """Longest-match lookups and greedy walks over the arrays of :func:`build_arrays`.

    ``header`` carries ``depth``, ``bos`` and ``sep`` (the ids that mark an
    utterance's start and end in the trie).
    """

    def __init__(self, header: dict, arrays: dict[str, np.ndarray], path=None):
        self.header = header
        self.path = path
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
        self._held: dict[frozenset, tuple[int, ...]] = {}  # :meth:`held`'s answers

    @classmethod
    def from_stream(cls, stream: np.ndarray, bos: int, sep: int, depth: int = 24, min_count: int = 1) -> TokenMap:
        """Build in memory from a ``BOS ... SEP`` token stream (tests, scoring a map before it is written)."""
        arrays = build_arrays(np.asarray(stream, dtype=np.uint32), sep, depth, min_count)
        return cls({"depth": depth, "bos": bos, "sep": sep}, arrays)

    @property
    def task(self) -> str | None:
        """The task (``domain/lang``) of a map set's section, else None."""
        return self.header.get("task")

    @property
    def languages(self) -> frozenset[str] | None:
        """The languages of the text the map was built from (its header's ``languages``), or None
        when that is not known for all of it (a line of no known language, or no record).

        >>> m = TokenMap.from_stream(np.array([0, 5, 6, 1]), bos=0, sep=1)
        >>> m.languages is None                     # built without a record of its text's languages
        True
        >>> m.header["languages"] = {"en": 9, "fr": 2}; sorted(m.languages)
        ['en', 'fr']
        >>> m.header["languages"] = {"": 3, "en": 9}; m.languages is None   # 3 lines of no known language
        True
        """
        counts = self.header.get("languages")
        if not isinstance(counts, dict) or not counts or not all(isinstance(k, str) and k for k in counts):
            return None
        return frozenset(counts)

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

    def children(self, node: int) -> tuple[int, np.ndarray]:
        """The nodes that continue ``node`` by one token: ``(first, tokens)``, the children being the nodes
        ``first, first + 1, ...`` in the order of their ``tokens`` (int64)."""
        lo = int(self._edges.searchsorted(np.uint64(node << 32)))
        hi = int(self._edges.searchsorted(np.uint64((node + 1) << 32)))
        return lo + 1, (self._edges[lo:hi] & np.uint64(_LOW)).astype(np.int64)

    def suffix(self, node: int) -> int:
        """The node of ``node``'s sequence without its first token (0 for the root)."""
        return int(self._link[node]) if node > 0 else 0

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

    def held(self, tokens: frozenset) -> tuple[int, ...]:
        """The ``tokens`` the map holds anywhere (children of the root), sorted; remembered per set."""
        if tokens not in self._held:
            self._held[tokens] = tuple(sorted(t for t in tokens if self.child(0, t) > 0))
        return self._held[tokens]

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
