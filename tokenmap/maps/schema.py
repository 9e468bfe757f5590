"""What each array of a token map may hold, declared per array and checked on load.

A layout maps each array name to an :class:`ArraySpec`: its dtype, its shape
as dimension names, and its *role*:

* :class:`TokenIds` - token ids, each below the vocabulary size of the
  tokenizer the map is loaded for (or one of a few sentinel values);
* :class:`Offsets` - offsets into another array: first 0, non-decreasing,
  last equal to that array's length;
* :class:`Rows` - row indices into another array, each in ``[0, len)``;
* :class:`Values` - plain values (``finite``: no NaN or infinity).

A dimension name is bound by the first array that uses it and must agree in
every other: ``"K"`` is a length, ``"K+1"`` that length plus one, and names
given by the caller (such as the map's order) are fixed in advance.
:func:`check_arrays` checks shapes, then every role, with whole-array numpy
operations, and returns the first problem as one line (or None), so that
lookups in an accepted map can neither index out of range nor hand the
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

import struct
from dataclasses import dataclass
from typing import Mapping, Union

import numpy as np

from tokenmap.maps.suffixmap import ARRAYS


@dataclass(frozen=True)
class TokenIds:
    """Token ids: each < the vocabulary size, or one of ``sentinels``."""

    sentinels: tuple[int, ...] = ()


@dataclass(frozen=True)
class Offsets:
    """Offsets into array ``into``: first 0, non-decreasing, last == ``len(into)``."""

    into: str


@dataclass(frozen=True)
class Rows:
    """Row indices into array ``into``: each in ``[0, len(into))``, or one of ``sentinels``."""

    into: str
    sentinels: tuple[int, ...] = ()


@dataclass(frozen=True)
class Values:
    """Plain values; with ``finite``, no NaN or infinity."""

    finite: bool = False


Role = Union[TokenIds, Offsets, Rows, Values]


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


def _outside(a: np.ndarray, low: int, high: int, sentinels: tuple[int, ...]) -> np.ndarray:
    """Mask of the values of ``a`` outside ``[low, high)`` that are not sentinels."""
    bad = a >= high
    if low > 0 or a.dtype.kind == "i":
        bad |= a < low
    if sentinels:
        bad &= ~np.isin(a, np.array(sentinels, dtype=a.dtype))
    return bad


def _role_problem(a: np.ndarray, role: Role, arrays: Mapping[str, np.ndarray], vocab_size: int) -> str | None:
    flat = a.reshape(-1)
    if isinstance(role, TokenIds):
        if flat.size and not (flat.min() >= 0 and flat.max() < vocab_size):
            bad = _outside(flat, 0, vocab_size, role.sentinels)
            if bad.any():
                return f"token id {int(flat[bad.argmax()])} outside the vocabulary of {vocab_size} tokens"
        return None
    if isinstance(role, Offsets):
        n = arrays[role.into].shape[0]
        if not flat.size or flat[0] != 0 or flat[-1] != n:
            return f"offsets into {role.into!r} must run from 0 to its length {n}"
        if (flat[1:] < flat[:-1]).any():
            return f"offsets into {role.into!r} decrease"
        return None
    if isinstance(role, Rows):
        n = arrays[role.into].shape[0]
        bad = _outside(flat, 0, n, role.sentinels)
        if bad.any():
            return f"row {int(flat[bad.argmax()])} outside {role.into!r} ({n} rows)"
        return None
    if role.finite and flat.dtype.kind == "f" and not np.isfinite(flat).all():
        return "NaN or infinite values"
    return None


# -- the file format ------------------------------------------------------------
MAGIC = b"\x93TOKMAP\x1a"
LEGACY_VERSION = 1  # the 3-token n-gram map of earlier `tokenmap build`s: refused, rebuild it
SET_VERSION = 2  # a map set of n-gram sections (`tokenmap build --balance`)
SUFFIX_VERSION = 3  # one suffix map (tokenmap.maps.suffixmap), what `tokenmap build` writes
NGRAM_VERSION = 4  # one n-gram map with this release's checks (`tokenmap build --balance --layout merged`)
RECALL_VERSION = 5  # an audio recall index (tokenmap.recall), not a token map
FORMAT_VERSION = SUFFIX_VERSION
MAX_HEADER = 16 << 20
ALIGN = 64
PAD = 0xFFFFFFFE
BOS = 0xFFFFFFFF
PREFIX = struct.Struct("<8sII")
CHECKSUM = 32
MASK = (1 << 64) - 1
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
#: the arrays of a format-5 recall index (:mod:`tokenmap.recall`)
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
    """``{name: (dtype, dimensions)}`` of the arrays of a file of format ``version``."""
    return {SUFFIX_VERSION: SUFFIX_SCHEMA, RECALL_VERSION: RECALL_SCHEMA}.get(version, SCHEMA)


def base_name(name: str) -> str:
    """``"key_hash"`` of ``"key_hash"`` and of a set's ``"3.key_hash"``."""
    return name.rpartition(".")[2]


def stream_markers(vocab_size: int) -> tuple[int, int]:
    """``(BOS, SEP)`` of a build's token stream and of a suffix map's trie: the first two ids past the
    vocabulary, so that no text token can be mistaken for them."""
    return vocab_size, vocab_size + 1
