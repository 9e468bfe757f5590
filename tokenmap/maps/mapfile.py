"""The token-map file: writing maps and map sets, and loading them with every check.

Layout (all integers little-endian)::

    offset 0   8 bytes   MAGIC  b"\\x93TOKMAP\\x1a"
    offset 8   uint32    format version: 3 one token map (what `tokenmap build` writes),
                         6 a map set (`tokenmap build --balance`), 5 an audio recall
                         index (:mod:`tokenmap.maps.recallindex`); 1, 2 and 4 (n-gram maps)
                         are refused with a message to rebuild
    offset 12  uint32    header length H in bytes (<= MAX_HEADER)
    offset 16  H bytes   UTF-8 JSON header (fingerprint, family, depth, bos, sep,
                         build parameters, counts, corpus sha256s, created, and
                         "arrays": [{name, dtype, shape, offset}, ...])
    ...        arrays    each starting at a 64-byte aligned offset, C order
    end - 32   32 bytes  sha256 of every byte before it

The arrays are the suffix trie of :class:`tokenmap.maps.suffixmap.TokenMap` (:data:`tokenmap.maps.schema.LAYOUT`
declares them and what they may hold). Loading checks everything a lookup relies on: magic, version, checksum,
header, the array table (names, dtypes, shapes, aligned offsets inside the data, no overlaps), every array by
its role and the trie's invariants (:func:`check_trie`): token ids within the vocabulary of the tokenizer the
map is loaded for (``vocab_size``, else the one the header records), links and children inside the trie. A
file that fails any check raises :class:`MapFormatError`.

A **map set** holds one token map per task in one file: format version ``SET_VERSION``, a header list
``"sections"`` (each section's ``task`` and budget) and the arrays of section ``i`` named ``"<i>.<name>"``.
:func:`load_maps` returns its sections as a list of :class:`TokenMap` (a one-map file gives a one-element list).
"""

from __future__ import annotations

import hashlib
import json
import math
import mmap
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from tokenmap.maps.schema import (
    ALIGN,
    CHECKSUM,
    LAYOUT,
    MAGIC,
    MAP_VERSION,
    MAX_HEADER,
    PREFIX,
    RECALL_VERSION,
    RETIRED_VERSIONS,
    SCHEMA,
    SET_VERSION,
    MapFormatError,
    base_name,
    check_arrays,
    schema_of,
    stream_markers,
)
from tokenmap.maps.suffixmap import TokenMap


# -- reading and checking --------------------------------------------------------
def fail(path: Path, what: str) -> MapFormatError:
    return MapFormatError(f"{path}: {what}")


def read_header(buf, path: Path) -> dict:
    """Parse and validate the prefix and JSON header of a mapped file."""
    size = len(buf)
    if size < PREFIX.size:
        if MAGIC.startswith(bytes(buf[:8])[: size]) and size:
            raise fail(path, "token map is truncated")
        raise fail(path, "not a token map (bad magic)")
    magic, version, hlen = PREFIX.unpack_from(buf, 0)
    if magic != MAGIC:
        raise fail(path, "not a token map (bad magic)")
    if version in RETIRED_VERSIONS:
        raise fail(path, f"{RETIRED_VERSIONS[version]} of format {version}, which this tokenmap no longer reads: "
                          "rebuild it with `tokenmap build`" + (" --balance" if version == 2 else ""))
    if version not in (MAP_VERSION, SET_VERSION, RECALL_VERSION):
        raise fail(path, f"unsupported token map format version {version} "
                          f"(this tokenmap reads maps, {MAP_VERSION}, map sets, {SET_VERSION}, "
                          f"and recall indexes, {RECALL_VERSION})")
    if hlen > MAX_HEADER:
        raise fail(path, "corrupt token map (header too large)")
    if PREFIX.size + hlen + CHECKSUM > size:
        raise fail(path, "token map is truncated")
    try:
        header = json.loads(bytes(buf[PREFIX.size:PREFIX.size + hlen]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise fail(path, "corrupt token map (bad header)") from None
    if not isinstance(header, dict):
        raise fail(path, "corrupt token map (bad header)")
    header["format_version"] = version
    sections = header.get("sections")
    if (version == SET_VERSION) != isinstance(sections, list) or (
            sections is not None and (not sections or not all(isinstance(h, dict) for h in sections))):
        raise fail(path, "corrupt token map (bad section table)")
    return header


def array_views(buf, header: dict, path: Path) -> dict[str, np.ndarray]:
    """Validated zero-copy views of the arrays listed in the header (a set's names keep their prefix)."""
    size = len(buf) - CHECKSUM
    start = header.get("data_start")
    specs = header.get("arrays")
    if not isinstance(start, int) or not isinstance(specs, list) or not 0 < start <= size or start % ALIGN:
        raise fail(path, "corrupt token map (bad array table)")
    schema = schema_of(header.get("format_version"))
    views, extents = {}, []
    for spec in specs:
        try:
            name, dtype, shape, off = spec["name"], spec["dtype"], spec["shape"], spec["offset"]
        except (KeyError, TypeError):
            raise fail(path, "corrupt token map (bad array table)") from None
        base = base_name(name) if isinstance(name, str) else ""
        if not _known_name(name, header, schema) or schema[base][0] != dtype or name in views \
                or not isinstance(shape, list) or len(shape) != schema[base][1] \
                or not all(type(s) is int and 0 <= s < 1 << 40 for s in shape) \
                or type(off) is not int or off < 0 or off % ALIGN:
            raise fail(path, f"corrupt token map (bad entry for array {name!r})")
        count = math.prod(shape)
        nbytes = count * np.dtype(dtype).itemsize
        if start + off + nbytes > size:
            raise fail(path, "token map is truncated")
        extents.append((off, off + nbytes, name))
        views[name] = np.frombuffer(buf, dtype=dtype, count=count, offset=start + off).reshape(shape)
    extents.sort()
    for (_, end, first), (begin, _, second) in zip(extents, extents[1:]):
        if begin < end:
            raise fail(path, f"corrupt token map (arrays {first!r} and {second!r} overlap)")
    prefixes = [f"{i}." for i in range(len(header["sections"]))] if "sections" in header else [""]
    missing = {p + n for p in prefixes for n in schema} - set(views)
    if missing:
        raise fail(path, f"corrupt token map (missing arrays: {', '.join(sorted(missing))})")
    return views


def _known_name(name, header: dict, schema: dict) -> bool:
    """An array name of this file's layout: ``edge_key``, or ``<i>.edge_key`` in a set of more than i sections."""
    if not isinstance(name, str):
        return False
    prefix, _, base = name.rpartition(".")
    if base not in schema:
        return False
    if "sections" not in header:
        return prefix == "" and "." not in name
    return prefix.isdigit() and str(int(prefix)) == prefix and int(prefix) < len(header["sections"])


def vocab_size_of(header: dict, vocab_size: int | None, path: Path) -> int:
    """The vocabulary size ids are checked against: the header's, which must match the tokenizer's."""
    recorded = header.get("vocab_size")
    if type(recorded) is not int or not 0 < recorded < 1 << 31:
        raise fail(path, "corrupt token map (bad header field vocab_size)")
    if vocab_size is not None and recorded != vocab_size:
        raise fail(path, f"made for a vocabulary of {recorded} tokens, the tokenizer has {vocab_size}: "
                          "rebuild it with `tokenmap build`")
    return recorded


def open_map(path: Path, verify: bool):
    """``(buffer, header)`` of a memory-mapped file, checksum checked when ``verify``."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except OSError as exc:
        raise MapFormatError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    header = read_header(buf, path)
    if verify and hashlib.sha256(buf[:len(buf) - CHECKSUM]).digest() != bytes(buf[len(buf) - CHECKSUM:]):
        raise fail(path, "checksum mismatch (the file is corrupt or truncated)")
    if not isinstance(header.get("fingerprint"), str):
        raise fail(path, "corrupt token map (bad header fields)")
    return buf, header


def check_fingerprint(header: dict, fingerprint: str | None, model_hint: str, path: Path) -> None:
    if fingerprint is not None and header["fingerprint"] != fingerprint:
        model = model_hint or header.get("model") or "MODEL"
        raise fail(path, f"made for another tokenizer (fingerprint {header['fingerprint'][:12]}… ≠ "
                          f"{fingerprint[:12]}…): rebuild it with `tokenmap build --model {model} …`")


def check_trie(arrays: dict, header: dict, vocab: int, path: Path, label: str = "") -> None:
    """The arrays of one token map against :data:`LAYOUT` and the trie's invariants, so that no walk
    can leave them and no draft can leave the vocabulary (the trie's own BOS and SEP are ``vocab``
    and ``vocab + 1``, and the header must say so)."""
    bos, sep = stream_markers(vocab)
    depth = header.get("depth")
    if type(depth) is not int or not 1 <= depth <= 255 or header.get("bos") != bos or header.get("sep") != sep:
        raise fail(path, f"corrupt token map ({label}bad header fields)")
    problem = check_arrays(arrays, LAYOUT, {}, vocab + 2)
    tokens = arrays["edge_key"] & np.uint64(0xFFFFFFFF)
    if problem is None and tokens.size and int(tokens.max()) > sep:
        problem = (f"array 'edge_key': token id {int(tokens.max())} outside the vocabulary of {vocab} tokens")
    n = arrays["node_count"].shape[0]
    keys, best = arrays["edge_key"], arrays["node_best"].astype(np.int64)
    ok = (problem is None and n >= 1 and keys.shape[0] == n - 1
          and bool(np.all(keys[1:] > keys[:-1])) and bool(np.all((keys >> np.uint64(32)) < np.arange(1, n)))
          and bool(np.all(arrays["node_link"] < np.maximum(np.arange(n), 1)))
          and bool(np.all((best == -1) | ((best > 0) & (best < n))))
          and bool(np.all(arrays["node_depth"][1:] >= 1)) and int(arrays["node_depth"].max(initial=0)) <= depth)
    if ok:  # every count positive and no larger than its parent's; a best child is a child
        count, parent = arrays["node_count"], (keys >> np.uint64(32)).astype(np.int64)
        has = best > 0
        ok = (bool(np.all(count >= 1)) and bool(np.all(count[1:] <= count[parent]))
              and bool(np.all(parent[best[has] - 1] == np.flatnonzero(has))))
    if not ok:
        raise fail(path, f"corrupt token map ({label}{problem or 'inconsistent arrays'})")



# -- writing -------------------------------------------------------------------
def _pad(n: int) -> int:
    return (-n) % ALIGN


def _json(meta: Mapping) -> bytes:
    return json.dumps(meta, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def write_map(path: str | os.PathLike, header: Mapping, arrays: Mapping[str, np.ndarray],
              version: int | None = None) -> int:
    """Write a token map (or, with ``version``, another file of this container) atomically
    (``path.tmp`` then rename); returns its size in bytes."""
    path = Path(path)
    version = MAP_VERSION if version is None else version
    schema = schema_of(version)
    arrays = {k: np.ascontiguousarray(v, dtype=np.dtype(schema[base_name(k)][0])) for k, v in arrays.items()}
    specs, offset = [], 0
    for name in sorted(arrays):
        arr = arrays[name]
        specs.append({"name": name, "dtype": schema[base_name(name)][0], "shape": list(arr.shape), "offset": offset})
        offset += arr.nbytes + _pad(arr.nbytes)
    meta = {**header, "arrays": specs}
    # offsets above are relative to the data start, which depends on the header length
    data_start = PREFIX.size + len(_json(meta))
    data_start += _pad(data_start)
    while PREFIX.size + len(blob := _json({**meta, "data_start": data_start})) > data_start:
        data_start += ALIGN  # the extra field crossed an alignment boundary
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
    """Write a map set: ``header`` for the file, ``(section header with a unique "task", arrays)`` per task;
    returns its size in bytes."""
    tasks = [str(h.get("task", "")) for h, _ in sections]
    if not sections or "" in tasks or len(set(tasks)) != len(tasks):
        raise ValueError("a map set needs at least one section, each with its own task name")
    arrays = {f"{i}.{name}": arr for i, (_, arrs) in enumerate(sections) for name, arr in arrs.items()}
    meta = {**header, "sections": [dict(h) for h, _ in sections]}
    return write_map(path, meta, arrays, version=SET_VERSION)



def load_maps(path: str | os.PathLike, fingerprint: str | None = None, *, verify: bool = True,
              model_hint: str = "", vocab_size: int | None = None) -> list[TokenMap]:
    """Every map in a file, memory-mapped and checked (module docstring; the checksum with ``verify``):
    the sections of a map set (each header the file's plus the section's), or ``[the map]``.

    ``fingerprint``: the sha256 of the vocabulary of the tokenizer that will use the maps
    (:class:`tokenmap.textok.TextTokenizer`), None to skip that check; ``vocab_size``: that tokenizer's
    vocabulary size, which the header's must equal; ``model_hint`` names the model in a rebuild hint.
    """
    path = Path(path)
    buf, header = open_map(path, verify)
    if header["format_version"] == RECALL_VERSION:
        raise fail(path, "a recall index (`tokenmap recall`), not a token map: give it with --recall (recall=)")
    if header.get("sections") is None:
        arrays = array_views(buf, header, path)
        check_fingerprint(header, fingerprint, model_hint, path)
        check_trie(arrays, header, vocab_size_of(header, vocab_size, path), path)
        return [TokenMap(header, arrays, path)]
    check_fingerprint(header, fingerprint, model_hint, path)
    views = array_views(buf, header, path)
    top = {k: v for k, v in header.items() if k not in ("sections", "arrays")}
    maps, tasks = [], set()
    for i, sec in enumerate(header["sections"]):
        merged = {**top, **sec}
        if not isinstance(sec.get("task"), str) or sec["task"] in tasks:
            raise fail(path, "corrupt token map (bad section table)")
        tasks.add(sec["task"])
        arrays = {name: views[f"{i}.{name}"] for name in SCHEMA}
        check_trie(arrays, merged, vocab_size_of(merged, vocab_size, path), path, f"section {i}: ")
        maps.append(TokenMap(merged, arrays, path))
    return maps
