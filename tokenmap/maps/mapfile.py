"""The token-map file format and the :class:`TokenMap` lookup.

Layout (all integers little-endian)::

    offset 0   8 bytes   MAGIC  b"\\x93TOKMAP\\x1a"
    offset 8   uint32    format version: 3 a suffix map (what `tokenmap build` writes),
                         2 a map set of n-gram sections, 4 one n-gram map
                         (`--balance --layout merged`), 5 an audio recall index
                         (:mod:`tokenmap.recall`); 1, the n-gram map of
                         earlier releases, is refused with a message to rebuild
    offset 12  uint32    header length H in bytes (<= MAX_HEADER)
    offset 16  H bytes   UTF-8 JSON header (fingerprint, family, order, build
                         parameters, counts, corpus sha256s, created, and
                         "arrays": [{name, dtype, shape, offset}, ...])
    ...        arrays    each starting at a 64-byte aligned offset, C order
    end - 32   32 bytes  sha256 of every byte before it

Arrays (K keys, C candidates, T candidate tokens, N = max order; :data:`LAYOUT`
declares them and what they may hold, checked on load)::

    key_hash        uint64 [K]     hash of the key tokens, sorted within each order block
    key_tokens      uint32 [K, N]  the key tokens (left-aligned, padded with PAD)
    key_count       uint32 [K]     corpus count of the key
    order_offsets   int64  [N + 1] keys of order n are rows order_offsets[n-1]:order_offsets[n]
    cand_offsets    int64  [K + 1] candidates of key k are cand_offsets[k]:cand_offsets[k+1], best first
    cand_tok_offsets int64 [C + 1] tokens of candidate c are cand_tokens[cand_tok_offsets[c]:...[c+1]]
    cand_tokens     uint32 [T]
    cand_expected   float32 [C]    expected accepted tokens per verify pass
    cand_saving     float32 [C]    expected saving in ms per verify pass (cost model)

Loading checks everything a lookup relies on: magic, version, checksum,
header, the array table (names, dtypes, shapes, aligned offsets inside the
data, no overlaps) and every array by its role in :data:`LAYOUT`
(:mod:`tokenmap.maps.schema`): token ids within the vocabulary of the tokenizer
the map is loaded for (``vocab_size``, else the one the header records),
offsets and lengths within the arrays they index.  A file that fails any
check raises :class:`MapFormatError`.

A **map set** (``tokenmap build --balance``) holds one map per task in one
file: format version ``SET_VERSION``, a header list ``"sections"`` (each
section's ``task``, ``order`` and budget) and the arrays of section ``i``
named ``"<i>.<name>"``.  :func:`load_maps` returns its sections as a list
of :class:`TokenMap` (a one-map file gives a one-element list).

Example::

    >>> tm = TokenMap.load("maint.tmap")                               # doctest: +SKIP
    >>> tm.draft([TokenMap.BOS] + tok.encode("Hydraulic pump"))        # doctest: +SKIP
    [805, 1028, 10729, 11, 3321]
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from tokenmap.maps.checks import fail, load_sections, load_single, load_suffix, open_map
from tokenmap.maps.schema import (ALIGN, BOS, HASH_MULT, MAGIC, MASK, NGRAM_VERSION, PREFIX, RECALL_VERSION,
                                  SET_VERSION, SUFFIX_SCHEMA, SUFFIX_VERSION, base_name, schema_of)

log = logging.getLogger("tokenmap")


def key_hash(tokens: Sequence[int]) -> int:
    """64-bit hash of a key: ``h = h * HASH_MULT + t + 1`` (mod 2**64) from ``h = len``."""
    h = len(tokens)
    for t in tokens:
        h = (h * HASH_MULT + t + 1) & MASK
    return h


def key_hash_rows(rows: np.ndarray) -> np.ndarray:
    """Vectorised :func:`key_hash` of an ``uint32 [K, n]`` array -> ``uint64 [K]``."""
    rows = np.asarray(rows, dtype=np.uint64)
    h = np.full(rows.shape[0], rows.shape[1], dtype=np.uint64)
    mult = np.uint64(HASH_MULT)
    with np.errstate(over="ignore"):
        for j in range(rows.shape[1]):
            h = h * mult + rows[:, j] + np.uint64(1)
    return h


def _pad(n: int) -> int:
    return (-n) % ALIGN


def write_map(path: str | os.PathLike, header: Mapping, arrays: Mapping[str, np.ndarray],
              version: int | None = None) -> int:
    """Write a token map atomically (``path.tmp`` then rename); returns its size in bytes."""
    path = Path(path)
    if version is None:  # the layout the arrays have
        version = SUFFIX_VERSION if set(arrays) == set(SUFFIX_SCHEMA) else NGRAM_VERSION
    schema = schema_of(version)
    arrays = {k: np.ascontiguousarray(v, dtype=np.dtype(schema[base_name(k)][0])) for k, v in arrays.items()}
    specs, offset = [], 0
    for name in sorted(arrays):
        arr = arrays[name]
        specs.append({"name": name, "dtype": schema[base_name(name)][0], "shape": list(arr.shape), "offset": offset})
        offset += arr.nbytes + _pad(arr.nbytes)
    meta = dict(header)
    meta["arrays"] = specs
    # offsets above are relative to the data start, which depends on the header length
    blob = json.dumps(meta, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    data_start = PREFIX.size + len(blob)
    data_start += _pad(data_start)
    meta["data_start"] = data_start
    blob = json.dumps(meta, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    while PREFIX.size + len(blob) > data_start:  # the extra field may cross an alignment boundary
        data_start += ALIGN
        meta["data_start"] = data_start
        blob = json.dumps(meta, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    digest = hashlib.sha256()
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            def put(b: bytes) -> None:
                f.write(b)
                digest.update(b)
            put(PREFIX.pack(MAGIC, version, len(blob)) + blob)
            put(b"\x00" * (data_start - PREFIX.size - len(blob)))
            for spec in specs:
                raw = arrays[spec["name"]].tobytes()
                put(raw + b"\x00" * _pad(len(raw)))
            f.write(digest.digest())
        os.replace(tmp, path)
    except BaseException:  # also Ctrl-C: no partial file stays behind, an old map stays untouched
        tmp.unlink(missing_ok=True)
        raise
    return path.stat().st_size


def write_map_set(path: str | os.PathLike, header: Mapping,
                  sections: Sequence[tuple[Mapping, Mapping[str, np.ndarray]]]) -> int:
    """Write a map set: ``header`` for the file, ``(section header, arrays)`` per task.

    Every section header needs ``task`` (unique) and ``order``; returns the size in bytes.
    """
    tasks = [str(h.get("task", "")) for h, _ in sections]
    if not sections or "" in tasks or len(set(tasks)) != len(tasks):
        raise ValueError("a map set needs at least one section, each with its own task name")
    arrays = {f"{i}.{name}": arr for i, (_, arrs) in enumerate(sections) for name, arr in arrs.items()}
    meta = {**header, "sections": [dict(h) for h, _ in sections]}
    return write_map(path, meta, arrays, version=SET_VERSION)


def _open_token_map(path: Path, verify: bool):
    """:func:`open_map`, refusing a recall index (same container) with a one-line error."""
    buf, header = open_map(path, verify)
    if header["format_version"] == RECALL_VERSION:
        raise fail(path, "a recall index (`tokenmap recall`), not a token map: give it with --recall (recall=)")
    return buf, header


def load_maps(path: str | os.PathLike, fingerprint: str | None = None, *, verify: bool = True,
              model_hint: str = "", vocab_size: int | None = None) -> list["TokenMap"]:
    """Every map in a file: the sections of a map set, or ``[the map]`` (checks as :meth:`TokenMap.load`)."""
    path = Path(path)
    buf, header = _open_token_map(path, verify)
    if header["format_version"] == SUFFIX_VERSION:
        return [load_suffix(buf, header, path, fingerprint, model_hint, vocab_size)]
    if header.get("sections") is None:
        return [load_single(TokenMap, buf, header, path, fingerprint, model_hint, vocab_size)]
    return load_sections(TokenMap, buf, header, path, fingerprint, model_hint, vocab_size)


class TokenMap:
    """A loaded token map: n-gram contexts -> ranked draft continuations.

    ``BOS`` marks the start of an utterance: ``draft([BOS])`` gives the draft
    for the first tokens, ``draft([BOS, t1])`` uses the 2-token key.
    """

    BOS = BOS

    def __init__(self, header: dict, arrays: dict[str, np.ndarray], path: Path | None = None, buf=None):
        self.header = header
        self.path = path
        self._buf = buf
        self.order = int(header["order"])
        a = arrays
        self.arrays = a
        oo = a["order_offsets"].tolist()
        self._blocks = [(oo[n - 1], a["key_hash"][oo[n - 1]:oo[n]]) for n in range(1, self.order + 1)]
        self._key_tokens = a["key_tokens"]
        self._cand_offsets = a["cand_offsets"]
        self._tok_offsets = a["cand_tok_offsets"]
        self._tokens = a["cand_tokens"]

    # -- loading ---------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike, fingerprint: str | None = None, *, verify: bool = True,
             model_hint: str = "", section: int | str | None = None, vocab_size: int | None = None) -> "TokenMap":
        """Memory-map a token map; check magic, version, checksum, tokenizer and every array.

        ``fingerprint`` is the sha256 of the tokenizer's vocabulary that will
        use this map (see :class:`tokenmap.textok.TextTokenizer`); ``None``
        skips that check.  ``vocab_size`` is that tokenizer's vocabulary size:
        the header's must equal it, and every token id must lie below it
        (``None``: below the header's).  A map set needs ``section`` (its index
        or task name), or :func:`load_maps` for all of them.  Raises
        :class:`MapFormatError` with a one-line message.
        """
        path = Path(path)
        buf, header = _open_token_map(path, verify)
        if header["format_version"] == SUFFIX_VERSION:
            return load_suffix(buf, header, path, fingerprint, model_hint, vocab_size)
        sections = header.get("sections")
        if sections is None:
            return load_single(cls, buf, header, path, fingerprint, model_hint, vocab_size)
        if section is None:
            tasks = ", ".join(str(h.get("task")) for h in sections)
            raise fail(path, f"a map set of {len(sections)} task sections ({tasks}): "
                              "load it with tokenmap.maps.mapfile.load_maps, or name a section")
        maps = load_sections(cls, buf, header, path, fingerprint, model_hint, vocab_size)
        index = {str(m.task): i for i, m in enumerate(maps)}
        i = index.get(str(section), section if isinstance(section, int) else -1)
        if not 0 <= i < len(maps):
            raise fail(path, f"no section {section!r} (sections: {', '.join(index)})")
        return maps[i]

    @property
    def task(self) -> str | None:
        """The task (``domain/lang``) of a map set's section, else None."""
        return self.header.get("task")

    # -- lookup ----------------------------------------------------------
    def _find(self, context: Sequence[int], n: int) -> int:
        """Row of the key ``context[-n:]``, or -1."""
        start, block = self._blocks[n - 1]
        if not len(block):
            return -1
        key = context[len(context) - n:]
        h = np.uint64(key_hash(key))
        i = int(block.searchsorted(h))
        if i < len(block) and block[i] == h:
            row = start + i
            if self._key_tokens[row, :n].tolist() == list(key):
                return row
        return -1

    def _candidate(self, c: int) -> list[int]:
        return self._tokens[self._tok_offsets[c]:self._tok_offsets[c + 1]].tolist()

    def lookup(self, context: Sequence[int]) -> int:
        """Row of the longest stored suffix of ``context`` (back-off), or -1."""
        for n in range(min(self.order, len(context)), 0, -1):
            row = self._find(context, n)
            if row >= 0:
                return row
        return -1

    def draft(self, context_ids: Sequence[int]) -> list[int]:
        """Best draft after ``context_ids`` (longest-suffix back-off), or ``[]``."""
        row = self.lookup(context_ids)
        if row < 0:
            return []
        c = int(self._cand_offsets[row])
        return self._candidate(c) if c < int(self._cand_offsets[row + 1]) else []

    def candidates(self, context_ids: Sequence[int]) -> list[tuple[list[int], float, float]]:
        """All ranked candidates ``(tokens, expected_accepted, saving_ms)`` for the longest key."""
        row = self.lookup(context_ids)
        if row < 0:
            return []
        lo, hi = int(self._cand_offsets[row]), int(self._cand_offsets[row + 1])
        exp, sav = self.arrays["cand_expected"], self.arrays["cand_saving"]
        return [(self._candidate(c), float(exp[c]), float(sav[c])) for c in range(lo, hi)]

    # -- summary ---------------------------------------------------------
    @property
    def num_keys(self) -> int:
        """Number of keys (all orders)."""
        return int(self.arrays["key_hash"].shape[0])

    @property
    def num_candidates(self) -> int:
        """Number of stored candidates."""
        return int(self.arrays["cand_expected"].shape[0])

    def keys_per_order(self) -> list[int]:
        """Number of keys of each order 1..N."""
        return np.diff(self.arrays["order_offsets"]).astype(int).tolist()

    def candidates_per_key(self) -> dict[int, int]:
        """Histogram {number of candidates: number of keys}."""
        counts = np.diff(self.arrays["cand_offsets"])
        values, freq = np.unique(counts, return_counts=True)
        return {int(v): int(f) for v, f in zip(values, freq)}

    def close(self) -> None:
        """Release the memory map (views become invalid)."""
        self.arrays = {}
        self._blocks = []
        if isinstance(self._buf, mmap.mmap):
            try:
                self._buf.close()
            except BufferError:  # numpy views still alive: the GC will close it
                pass
