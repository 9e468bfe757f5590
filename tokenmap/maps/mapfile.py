"""The token-map file format and the :class:`TokenMap` lookup.

Layout (all integers little-endian)::

    offset 0   8 bytes   MAGIC  b"\\x93TOKMAP\\x1a"
    offset 8   uint32    format version: 3 a suffix map (what `tokenmap build` writes),
                         2 a map set of n-gram sections, 4 one n-gram map
                         (`--balance --layout merged`); 1, the n-gram map of
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
import struct
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from tokenmap.maps.schema import ArraySpec, Offsets, TokenIds, Values, check_arrays
from tokenmap.maps.suffixmap import ARRAYS, SuffixMap

log = logging.getLogger("tokenmap")

MAGIC = b"\x93TOKMAP\x1a"
LEGACY_VERSION = 1  # the 3-token n-gram map of earlier `tokenmap build`s: refused, rebuild it
SET_VERSION = 2  # a map set of n-gram sections (`tokenmap build --balance`)
SUFFIX_VERSION = 3  # one suffix map (tokenmap.maps.suffixmap), what `tokenmap build` writes
NGRAM_VERSION = 4  # one n-gram map with this release's checks (`tokenmap build --balance --layout merged`)
FORMAT_VERSION = SUFFIX_VERSION
MAX_HEADER = 16 << 20
ALIGN = 64
PAD = 0xFFFFFFFE
BOS = 0xFFFFFFFF
_PREFIX = struct.Struct("<8sII")
_CHECKSUM = 32
_MASK = (1 << 64) - 1
HASH_MULT = 0x9E3779B97F4A7C15
#: The arrays of a map, what each may hold (:mod:`tokenmap.maps.schema`); ``order`` is the header's.
LAYOUT = {
    "key_hash": ArraySpec("<u8", ("K",)),
    "key_tokens": ArraySpec("<u4", ("K", "order"), TokenIds(sentinels=(BOS, PAD))),
    "key_count": ArraySpec("<u4", ("K",)),
    "order_offsets": ArraySpec("<i8", ("order+1",), Offsets("key_hash")),
    "cand_offsets": ArraySpec("<i8", ("K+1",), Offsets("cand_expected")),
    "cand_tok_offsets": ArraySpec("<i8", ("C+1",), Offsets("cand_tokens")),
    "cand_tokens": ArraySpec("<u4", ("T",), TokenIds()),
    "cand_expected": ArraySpec("<f4", ("C",), Values(finite=True)),
    "cand_saving": ArraySpec("<f4", ("C",), Values(finite=True)),
}
#: ``{name: (dtype, number of dimensions)}`` of :data:`LAYOUT`
SCHEMA = {name: (spec.dtype, len(spec.shape)) for name, spec in LAYOUT.items()}
#: the arrays of a format-3 suffix map (:mod:`tokenmap.maps.suffixmap`): the trie's structure is
#: checked by :func:`_suffix`, token ids here (``BOS`` and ``SEP`` of the trie are vocab and vocab + 1)
SUFFIX_LAYOUT = {
    "edge_key": ArraySpec(ARRAYS["edge_key"], ("E",)),
    "node_count": ArraySpec(ARRAYS["node_count"], ("N",)),
    "node_link": ArraySpec(ARRAYS["node_link"], ("N",)),
    "node_best": ArraySpec(ARRAYS["node_best"], ("N",)),
    "node_depth": ArraySpec(ARRAYS["node_depth"], ("N",)),
}
SUFFIX_SCHEMA = {name: (spec.dtype, len(spec.shape)) for name, spec in SUFFIX_LAYOUT.items()}


class MapFormatError(ValueError):
    """A file is not a usable token map (one-line message)."""


def key_hash(tokens: Sequence[int]) -> int:
    """64-bit hash of a key: ``h = h * HASH_MULT + t + 1`` (mod 2**64) from ``h = len``."""
    h = len(tokens)
    for t in tokens:
        h = (h * HASH_MULT + t + 1) & _MASK
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


def _schema(version: int) -> dict:
    return SUFFIX_SCHEMA if version == SUFFIX_VERSION else SCHEMA


def _pad(n: int) -> int:
    return (-n) % ALIGN


def _base(name: str) -> str:
    """``"key_hash"`` of ``"key_hash"`` and of a set's ``"3.key_hash"``."""
    return name.rpartition(".")[2]


def write_map(path: str | os.PathLike, header: Mapping, arrays: Mapping[str, np.ndarray],
              version: int | None = None) -> int:
    """Write a token map atomically (``path.tmp`` then rename); returns its size in bytes."""
    path = Path(path)
    if version is None:  # the layout the arrays have
        version = SUFFIX_VERSION if set(arrays) == set(SUFFIX_SCHEMA) else NGRAM_VERSION
    schema = _schema(version)
    arrays = {k: np.ascontiguousarray(v, dtype=np.dtype(schema[_base(k)][0])) for k, v in arrays.items()}
    specs, offset = [], 0
    for name in sorted(arrays):
        arr = arrays[name]
        specs.append({"name": name, "dtype": schema[_base(name)][0], "shape": list(arr.shape), "offset": offset})
        offset += arr.nbytes + _pad(arr.nbytes)
    meta = dict(header)
    meta["arrays"] = specs
    # offsets above are relative to the data start, which depends on the header length
    blob = json.dumps(meta, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    data_start = _PREFIX.size + len(blob)
    data_start += _pad(data_start)
    meta["data_start"] = data_start
    blob = json.dumps(meta, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    while _PREFIX.size + len(blob) > data_start:  # the extra field may cross an alignment boundary
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
            put(_PREFIX.pack(MAGIC, version, len(blob)) + blob)
            put(b"\x00" * (data_start - _PREFIX.size - len(blob)))
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


def _fail(path: Path, what: str) -> MapFormatError:
    return MapFormatError(f"{path}: {what}")


def read_header(buf, path: Path) -> dict:
    """Parse and validate the prefix and JSON header of a mapped file."""
    size = len(buf)
    if size < _PREFIX.size:
        if MAGIC.startswith(bytes(buf[:8])[: size]) and size:
            raise _fail(path, "token map is truncated")
        raise _fail(path, "not a token map (bad magic)")
    magic, version, hlen = _PREFIX.unpack_from(buf, 0)
    if magic != MAGIC:
        raise _fail(path, "not a token map (bad magic)")
    if version == LEGACY_VERSION:
        raise _fail(path, "a token map of format 1 (3-token contexts), which this tokenmap no longer reads: "
                          "rebuild it with `tokenmap build`")
    if version not in (SET_VERSION, SUFFIX_VERSION, NGRAM_VERSION):
        raise _fail(path, f"unsupported token map format version {version} "
                          f"(this tokenmap reads {SET_VERSION}, {SUFFIX_VERSION} and {NGRAM_VERSION})")
    if hlen > MAX_HEADER:
        raise _fail(path, "corrupt token map (header too large)")
    if _PREFIX.size + hlen + _CHECKSUM > size:
        raise _fail(path, "token map is truncated")
    try:
        header = json.loads(bytes(buf[_PREFIX.size:_PREFIX.size + hlen]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _fail(path, "corrupt token map (bad header)") from None
    if not isinstance(header, dict):
        raise _fail(path, "corrupt token map (bad header)")
    header["format_version"] = version
    sections = header.get("sections")
    if (version == SET_VERSION) != isinstance(sections, list) or (
            sections is not None and (not sections or not all(isinstance(h, dict) for h in sections))):
        raise _fail(path, "corrupt token map (bad section table)")
    return header


def _array_views(buf, header: dict, path: Path) -> dict[str, np.ndarray]:
    """Validated zero-copy views of the arrays listed in the header (a set's names keep their prefix)."""
    size = len(buf) - _CHECKSUM
    start = header.get("data_start")
    specs = header.get("arrays")
    if not isinstance(start, int) or not isinstance(specs, list) or not 0 < start <= size or start % ALIGN:
        raise _fail(path, "corrupt token map (bad array table)")
    schema = _schema(header.get("format_version"))
    views, extents = {}, []
    for spec in specs:
        try:
            name, dtype, shape, off = spec["name"], spec["dtype"], spec["shape"], spec["offset"]
        except (KeyError, TypeError):
            raise _fail(path, "corrupt token map (bad array table)") from None
        base = _base(name) if isinstance(name, str) else ""
        if not _known_name(name, header, schema) or schema[base][0] != dtype or name in views \
                or not isinstance(shape, list) or len(shape) != schema[base][1] \
                or not all(type(s) is int and 0 <= s < 1 << 40 for s in shape) \
                or type(off) is not int or off < 0 or off % ALIGN:
            raise _fail(path, f"corrupt token map (bad entry for array {name!r})")
        count = 1
        for s in shape:
            count *= s
        nbytes = count * np.dtype(dtype).itemsize
        if start + off + nbytes > size:
            raise _fail(path, "token map is truncated")
        extents.append((off, off + nbytes, name))
        views[name] = np.frombuffer(buf, dtype=dtype, count=count, offset=start + off).reshape(shape)
    extents.sort()
    for (_, end, first), (begin, _, second) in zip(extents, extents[1:]):
        if begin < end:
            raise _fail(path, f"corrupt token map (arrays {first!r} and {second!r} overlap)")
    prefixes = [f"{i}." for i in range(len(header["sections"]))] if "sections" in header else [""]
    missing = {p + n for p in prefixes for n in schema} - set(views)
    if missing:
        raise _fail(path, f"corrupt token map (missing arrays: {', '.join(sorted(missing))})")
    return views


def _known_name(name, header: dict, schema: dict) -> bool:
    """An array name of this file's layout: ``key_hash``, or ``<i>.key_hash`` in a set of more than i sections."""
    if not isinstance(name, str):
        return False
    prefix, _, base = name.rpartition(".")
    if base not in schema:
        return False
    if "sections" not in header:
        return prefix == "" and "." not in name
    return prefix.isdigit() and str(int(prefix)) == prefix and int(prefix) < len(header["sections"])


def _check_structure(a: dict[str, np.ndarray], header: dict, vocab_size: int, path: Path,
                     label: str = "") -> None:
    """Every array by its role in :data:`LAYOUT`, so that lookups can never index out of range
    nor draft an id outside the vocabulary."""
    problem = check_arrays(a, LAYOUT, {"order": header["order"]}, vocab_size)
    if problem:
        raise _fail(path, f"corrupt token map ({label}{problem})")


def _vocab_size(header: dict, vocab_size: int | None, path: Path) -> int:
    """The vocabulary size ids are checked against: the header's, which must match the tokenizer's."""
    recorded = header.get("vocab_size")
    if type(recorded) is not int or not 0 < recorded < 1 << 31:
        raise _fail(path, "corrupt token map (bad header field vocab_size)")
    if vocab_size is not None and recorded != vocab_size:
        raise _fail(path, f"made for a vocabulary of {recorded} tokens, the tokenizer has {vocab_size}: "
                          "rebuild it with `tokenmap build`")
    return recorded


def _open(path: Path, verify: bool):
    """``(buffer, header)`` of a memory-mapped file, checksum checked when ``verify``."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except OSError as exc:
        raise MapFormatError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    header = read_header(buf, path)
    if verify and hashlib.sha256(buf[:len(buf) - _CHECKSUM]).digest() != bytes(buf[len(buf) - _CHECKSUM:]):
        raise _fail(path, "checksum mismatch (the file is corrupt or truncated)")
    if not isinstance(header.get("fingerprint"), str):
        raise _fail(path, "corrupt token map (bad header fields)")
    return buf, header


def _check_order(header: dict, path: Path) -> None:
    order = header.get("order")
    if not isinstance(order, int) or not 1 <= order <= 64:
        raise _fail(path, "corrupt token map (bad header fields)")


def _check_fingerprint(header: dict, fingerprint: str | None, model_hint: str, path: Path) -> None:
    if fingerprint is not None and header["fingerprint"] != fingerprint:
        model = model_hint or header.get("model") or "MODEL"
        raise _fail(path, f"made for another tokenizer (fingerprint {header['fingerprint'][:12]}… ≠ "
                          f"{fingerprint[:12]}…): rebuild it with `tokenmap build --model {model} …`")


def _single(cls, buf, header: dict, path: Path, fingerprint: str | None, model_hint: str,
            vocab_size: int | None):
    """The map of a one-map file."""
    arrays = _array_views(buf, header, path)
    _check_order(header, path)
    _check_fingerprint(header, fingerprint, model_hint, path)
    _check_structure(arrays, header, _vocab_size(header, vocab_size, path), path)
    return cls(header, arrays, path, buf)


def _sections(cls, buf, header: dict, path: Path, fingerprint: str | None, model_hint: str,
              vocab_size: int | None) -> list:
    """Every section of a map set as a map; each header is the file's plus the section's."""
    _check_fingerprint(header, fingerprint, model_hint, path)
    views = _array_views(buf, header, path)
    top = {k: v for k, v in header.items() if k not in ("sections", "arrays")}
    maps, tasks = [], set()
    for i, sec in enumerate(header["sections"]):
        merged = {**top, **sec}
        _check_order(merged, path)
        if not isinstance(sec.get("task"), str) or sec["task"] in tasks:
            raise _fail(path, "corrupt token map (bad section table)")
        tasks.add(sec["task"])
        arrays = {name: views[f"{i}.{name}"] for name in SCHEMA}
        _check_structure(arrays, merged, _vocab_size(merged, vocab_size, path), path, f"section {i}: ")
        maps.append(cls(merged, arrays, path, buf))
    return maps


def _suffix(buf, header: dict, path: Path, fingerprint: str | None, model_hint: str,
            vocab_size: int | None) -> SuffixMap:
    """The map of a format-3 file, its arrays checked so that no walk can leave them and no draft
    can leave the vocabulary (the trie's own BOS and SEP are ``vocab`` and ``vocab + 1``)."""
    arrays = _array_views(buf, header, path)
    _check_fingerprint(header, fingerprint, model_hint, path)
    vocab = _vocab_size(header, vocab_size, path)
    depth = header.get("depth")
    if type(depth) is not int or not 1 <= depth <= 255 or header.get("bos") != vocab or header.get("sep") != vocab + 1:
        raise _fail(path, "corrupt token map (bad header fields)")
    problem = check_arrays(arrays, SUFFIX_LAYOUT, {}, vocab + 2)
    tokens = arrays["edge_key"] & np.uint64(0xFFFFFFFF)
    if problem is None and tokens.size and int(tokens.max()) > vocab + 1:
        problem = (f"array 'edge_key': token id {int(tokens.max())} outside the vocabulary of {vocab} tokens")
    n = arrays["node_count"].shape[0]
    keys, best = arrays["edge_key"], arrays["node_best"].astype(np.int64)
    ok = (problem is None and n >= 1 and keys.shape[0] == n - 1
          and bool(np.all(keys[1:] > keys[:-1])) and bool(np.all((keys >> np.uint64(32)) < np.arange(1, n)))
          and bool(np.all((keys & np.uint64(0xFFFFFFFF)) <= vocab + 1))
          and bool(np.all(arrays["node_link"] < np.maximum(np.arange(n), 1)))
          and bool(np.all((best == -1) | ((best > 0) & (best < n))))
          and bool(np.all(arrays["node_depth"][1:] >= 1)) and int(arrays["node_depth"].max(initial=0)) <= depth)
    if ok:  # every count positive and no larger than its parent's; a best child is a child
        count, parent = arrays["node_count"], (keys >> np.uint64(32)).astype(np.int64)
        has = best > 0
        ok = (bool(np.all(count >= 1)) and bool(np.all(count[1:] <= count[parent]))
              and bool(np.all(parent[best[has] - 1] == np.flatnonzero(has))))
    if not ok:
        raise _fail(path, f"corrupt token map ({problem or 'inconsistent arrays'})")
    return SuffixMap(header, arrays, path, buf)


def load_maps(path: str | os.PathLike, fingerprint: str | None = None, *, verify: bool = True,
              model_hint: str = "", vocab_size: int | None = None) -> list["TokenMap"]:
    """Every map in a file: the sections of a map set, or ``[the map]`` (checks as :meth:`TokenMap.load`)."""
    path = Path(path)
    buf, header = _open(path, verify)
    if header["format_version"] == SUFFIX_VERSION:
        return [_suffix(buf, header, path, fingerprint, model_hint, vocab_size)]
    if header.get("sections") is None:
        return [_single(TokenMap, buf, header, path, fingerprint, model_hint, vocab_size)]
    return _sections(TokenMap, buf, header, path, fingerprint, model_hint, vocab_size)


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
        buf, header = _open(path, verify)
        if header["format_version"] == SUFFIX_VERSION:
            return _suffix(buf, header, path, fingerprint, model_hint, vocab_size)
        sections = header.get("sections")
        if sections is None:
            return _single(cls, buf, header, path, fingerprint, model_hint, vocab_size)
        if section is None:
            tasks = ", ".join(str(h.get("task")) for h in sections)
            raise _fail(path, f"a map set of {len(sections)} task sections ({tasks}): "
                              "load it with tokenmap.maps.mapfile.load_maps, or name a section")
        maps = _sections(cls, buf, header, path, fingerprint, model_hint, vocab_size)
        index = {str(m.task): i for i, m in enumerate(maps)}
        i = index.get(str(section), section if isinstance(section, int) else -1)
        if not 0 <= i < len(maps):
            raise _fail(path, f"no section {section!r} (sections: {', '.join(index)})")
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
