"""What each array of a token map may hold, declared per array and checked on load.

A layout maps each array name to an :class:`ArraySpec`: its dtype, shape (as dimension names) and *role*:

* :class:`TokenIds` - token ids, each below the vocabulary size of the tokenizer the map is loaded for;
* :class:`Offsets` - offsets into another array: first 0, non-decreasing, last equal to that array's length;
* :class:`Values` - plain values (``finite``: no NaN or infinity).

A dimension name is bound by the first array that uses it and must agree in every other: ``"K"`` is a length,
``"K+1"`` that length plus one, and names given by the caller (such as the map's order) are fixed in advance.
:func:`check_arrays` checks shapes, then every role, with whole-array numpy operations, and returns the first
problem as one line (or None), so that lookups in an accepted map can neither index out of range nor hand the
decoder an id outside its vocabulary.

>>> layout = {"offsets": ArraySpec("<i8", ("N+1",), Offsets("tokens")),
...           "tokens": ArraySpec("<u4", ("T",), TokenIds())}
>>> arrays = {"offsets": np.array([0, 2, 3]), "tokens": np.array([5, 6, 7], dtype=np.uint32)}
>>> check_arrays(arrays, layout, {}, vocab_size=10) is None
True
>>> check_arrays(arrays, layout, {}, vocab_size=7)
"array 'tokens': token id 7 outside the vocabulary of 7 tokens"
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Union

import numpy as np

from tokenmap.maps.suffixmap import ARRAYS


@dataclass(frozen=True)
class TokenIds:
    """Token ids: each < the vocabulary size."""


@dataclass(frozen=True)
class Offsets:
    """Offsets into array ``into``: first 0, non-decreasing, last == ``len(into)``."""

    into: str


@dataclass(frozen=True)
class Values:
    """Plain values; with ``finite``, no NaN or infinity."""

    finite: bool = False


Role = Union[TokenIds, Offsets, Values]


@dataclass(frozen=True)
class ArraySpec:
    """One array of a layout: numpy ``dtype``, ``shape`` as dimension names, ``role``."""

    dtype: str
    shape: tuple[str, ...]
    role: Role = Values()


def check_arrays(arrays: Mapping[str, np.ndarray], layout: Mapping[str, ArraySpec], dims: Mapping[str, int],
                 vocab_size: int) -> str | None:
    """The first problem of ``arrays`` against ``layout`` as one line, or None when they are consistent.

    ``arrays`` holds every array of ``layout`` (dtype and number of dimensions
    already checked); ``dims`` fixes dimension names in advance (e.g. ``order``).
    """
    bound = dict(dims)
    for name, spec in layout.items():
        for axis, (symbol, size) in enumerate(zip(spec.shape, arrays[name].shape)):
            base, _, plus = symbol.partition("+")
            extra = int(plus or 0)
            if base not in bound and size >= extra:
                bound[base] = size - extra
            elif base not in bound or bound[base] + extra != size:
                return f"array {name!r} has {size} entries along axis {axis}, which does not fit the other arrays"
    for name, spec in layout.items():
        problem = _role_problem(arrays[name], spec.role, arrays, vocab_size)
        if problem:
            return f"array {name!r}: {problem}"
    return None


def _role_problem(a: np.ndarray, role: Role, arrays: Mapping[str, np.ndarray], vocab_size: int) -> str | None:
    flat = a.reshape(-1)
    if isinstance(role, TokenIds):
        if flat.size and not (flat.min() >= 0 and flat.max() < vocab_size):
            bad = (flat < 0) | (flat >= vocab_size)
            return f"token id {int(flat[bad.argmax()])} outside the vocabulary of {vocab_size} tokens"
        return None
    if isinstance(role, Offsets):
        n = arrays[role.into].shape[0]
        if not flat.size or flat[0] != 0 or flat[-1] != n:
            return f"offsets into {role.into!r} must run from 0 to its length {n}"
        if (flat[1:] < flat[:-1]).any():
            return f"offsets into {role.into!r} decrease"
        return None
    if role.finite and flat.dtype.kind == "f" and not np.isfinite(flat).all():
        return "NaN or infinite values"
    return None


# -- the file format ------------------------------------------------------------
MAGIC = b"\x93TOKMAP\x1a"
MAP_VERSION = 3  # one token map (tokenmap.maps.suffixmap), what `tokenmap build` writes
RECALL_VERSION = 5  # an audio recall index (tokenmap.maps.recallindex), not a token map
SET_VERSION = 6  # a map set: one token map per task (`tokenmap build --balance`)
#: versions the loader refuses with a message to rebuild, and what each held
RETIRED_VERSIONS = {1: "an n-gram token map", 2: "a map set of n-gram sections", 4: "an n-gram token map"}
MAX_HEADER = 16 << 20
ALIGN = 64
PREFIX = struct.Struct("<8sII")
CHECKSUM = 32
#: The arrays of a token map (:mod:`tokenmap.maps.suffixmap`) and what each may hold; the trie's
#: structure is checked by :func:`tokenmap.maps.mapfile.check_trie`, token ids here (the trie's
#: ``BOS`` and ``SEP`` are the vocabulary size and the vocabulary size + 1)
LAYOUT = {
    "edge_key": ArraySpec(ARRAYS["edge_key"], ("E",)),
    "node_count": ArraySpec(ARRAYS["node_count"], ("N",)),
    "node_link": ArraySpec(ARRAYS["node_link"], ("N",)),
    "node_best": ArraySpec(ARRAYS["node_best"], ("N",)),
    "node_depth": ArraySpec(ARRAYS["node_depth"], ("N",)),
}
#: ``{name: (dtype, number of dimensions)}`` of :data:`LAYOUT`
SCHEMA = {name: (spec.dtype, len(spec.shape)) for name, spec in LAYOUT.items()}
#: the arrays of a format-5 recall index (:mod:`tokenmap.maps.recallindex`)
RECALL_LAYOUT = {
    "vectors": ArraySpec("<f2", ("R", "D"), Values(finite=True)),
    "mel": ArraySpec("<f2", ("R", "MEL"), Values(finite=True)),
    "offsets": ArraySpec("<i8", ("R+1",), Offsets("tokens")),
    "tokens": ArraySpec("<u4", ("M",), TokenIds()),
}
RECALL_SCHEMA = {name: (spec.dtype, len(spec.shape)) for name, spec in RECALL_LAYOUT.items()}


class MapFormatError(ValueError):
    """A file is not a usable token map (one-line message)."""


def schema_of(version: int) -> dict:
    """``{name: (dtype, dimensions)}`` of the arrays of a file of format ``version`` (a map set's
    sections are token maps)."""
    return RECALL_SCHEMA if version == RECALL_VERSION else SCHEMA


def base_name(name: str) -> str:
    """``"edge_key"`` of ``"edge_key"`` and of a set's ``"3.edge_key"``."""
    return name.rpartition(".")[2]


def stream_markers(vocab_size: int) -> tuple[int, int]:
    """``(BOS, SEP)`` of a build's token stream and of a token map's trie: the first two ids past the
    vocabulary, so that no text token can be mistaken for them."""
    return vocab_size, vocab_size + 1


def vocab_fingerprint(tokenizer) -> str:
    """The sha256 of a ``tokenizers.Tokenizer``'s vocabulary (ids and pieces, added tokens included): what a
    map or a recall index records of the tokenizer it was built for."""
    items = sorted((i, t) for t, i in tokenizer.get_vocab(with_added_tokens=True).items())
    return hashlib.sha256(json.dumps(items, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()
