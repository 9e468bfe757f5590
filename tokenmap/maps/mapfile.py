"""The token-map file: writing maps and map sets, and loading them with every check.

Layout (all integers little-endian)::

    offset 0   8 bytes   MAGIC  b"\\x93TOKMAP\\x1a"
    offset 8   uint32    format version: 3 one token map (what `tokenmap build` writes),
                         6 a map set (`tokenmap build --balance`), 5 an audio recall
                         index (:mod:`tokenmap.maps.recallindex`); 1, 2 and 4, the n-gram maps of
                         earlier releases, are refused with a message to rebuild
    offset 12  uint32    header length H in bytes (<= MAX_HEADER)
    offset 16  H bytes   UTF-8 JSON header (fingerprint, family, depth, bos, sep,
                         build parameters, counts, corpus sha256s, created, and
                         "arrays": [{name, dtype, shape, offset}, ...])
    ...        arrays    each starting at a 64-byte aligned offset, C order
    end - 32   32 bytes  sha256 of every byte before it

The arrays are the suffix trie of :class:`tokenmap.maps.suffixmap.TokenMap`
(:data:`tokenmap.maps.schema.LAYOUT` declares them and what they may hold).
Loading checks everything a lookup relies on: magic, version, checksum,
header, the array table (names, dtypes, shapes, aligned offsets inside the
data, no overlaps), every array by its role and the trie's invariants
(:mod:`tokenmap.maps.checks`): token ids within the vocabulary of the
tokenizer the map is loaded for (``vocab_size``, else the one the header
records), links and children inside the trie.  A file that fails any check
raises :class:`MapFormatError`.

A **map set** (``tokenmap build --balance``) holds one token map per task in
one file: format version ``SET_VERSION``, a header list ``"sections"`` (each
section's ``task`` and budget) and the arrays of section ``i`` named
``"<i>.<name>"``.  :func:`load_maps` returns its sections as a list of
:class:`TokenMap` (a one-map file gives a one-element list).

Example::

    >>> (tm,) = load_maps("maint.tmap")                                 # doctest: +SKIP
    >>> tm.count(tm.walk([tm.bos] + tok.encode("Hydraulic pump")))      # doctest: +SKIP
    212
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from tokenmap.maps.checks import fail, load_sections, load_single, open_map
from tokenmap.maps.schema import (
    ALIGN,
    MAGIC,
    MAP_VERSION,
    PREFIX,
    RECALL_VERSION,
    SET_VERSION,
    base_name,
    schema_of,
)
from tokenmap.maps.suffixmap import TokenMap

log = logging.getLogger("tokenmap")


def _pad(n: int) -> int:
    return (-n) % ALIGN


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

    Every section header needs ``task`` (unique); returns the size in bytes.
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
              model_hint: str = "", vocab_size: int | None = None) -> list[TokenMap]:
    """Every map in a file: the sections of a map set, or ``[the map]``.

    Memory-maps the file and checks magic, version, checksum (``verify``),
    tokenizer and every array.  ``fingerprint`` is the sha256 of the
    vocabulary of the tokenizer that will use the maps (see
    :class:`tokenmap.textok.TextTokenizer`); ``None`` skips that check.
    ``vocab_size`` is that tokenizer's vocabulary size: the header's must equal
    it, and every token id must lie below it (``None``: below the header's).
    ``model_hint`` names the model in a rebuild hint.  Raises
    :class:`MapFormatError` with a one-line message.
    """
    path = Path(path)
    buf, header = _open_token_map(path, verify)
    if header.get("sections") is None:
        return [load_single(buf, header, path, fingerprint, model_hint, vocab_size)]
    return load_sections(buf, header, path, fingerprint, model_hint, vocab_size)


def load_map(path: str | os.PathLike, fingerprint: str | None = None, *, section: int | str | None = None,
             **kwargs) -> TokenMap:
    """The map of a one-map file, or the ``section`` (index or task name) of a map set
    (checks and ``kwargs`` as :func:`load_maps`)."""
    maps = load_maps(path, fingerprint, **kwargs)
    if maps[0].task is None:
        return maps[0]
    if section is None:
        tasks = ", ".join(str(m.task) for m in maps)
        raise fail(Path(path), f"a map set of {len(maps)} task sections ({tasks}): "
                               "load it with tokenmap.maps.mapfile.load_maps, or name a section")
    index = {str(m.task): i for i, m in enumerate(maps)}
    i = index.get(str(section), section if isinstance(section, int) else -1)
    if not 0 <= i < len(maps):
        raise fail(Path(path), f"no section {section!r} (sections: {', '.join(index)})")
    return maps[i]


