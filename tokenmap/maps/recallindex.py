"""The recall index: segments the model decoded before, stored by how they sound.

A scripted domain (IVR prompts in call recordings, a fixed command set) plays the same recordings again and
again. A *recall index* keeps, for every segment the model once decoded, two audio fingerprints
(:mod:`tokenmap.maps.audio_fingerprints`) of where the segment began and the tokens the model wrote for it;
:class:`tokenmap.decode.recall.RecallDrafter` drafts those tokens where a window sounds the same again.

File: the token-map container (:mod:`tokenmap.maps.mapfile`: magic, format
version :data:`~tokenmap.maps.schema.RECALL_VERSION`, JSON header, aligned arrays, sha256), with

    vectors   float16 [R, 5 * d_model]  one encoder fingerprint per segment
    mel       float16 [R, 560]          one mel fingerprint per segment (zeros: none)
    offsets   int64   [R + 1]           segment r's tokens are tokens[offsets[r]:offsets[r + 1]]
    tokens    uint32  [M]               text tokens, then the segment's length as a timestamp token

and header fields ``fingerprint`` (the tokenizer's), ``vocab_size``, ``encoder`` (:func:`encoder_identity` of
the model whose encoder made the vectors), ``model`` and ``created``.

Example (a 2-dimensional "encoder", ``timestamp_begin`` 100)::

    >>> frames = np.zeros((1500, 2), dtype=np.float32); frames[:50, 0] = 1.0; frames[50:100, 1] = 1.0
    >>> index = RecallIndex.empty({})
    >>> index.add_window(frames, [100, 7, 8, 150, 150, 9, 175], timestamp_begin=100)
    2
    >>> cosine, tokens = index.nearest(fingerprint(frames, 0))
    >>> round(cosine, 3), tokens          # the segment's text, then its length as a timestamp
    (1.0, [7, 8, 150])
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from tokenmap.maps.audio_fingerprints import CHUNKS, MAX_FRAMES, MEL_SIZE, as_mel, fingerprint, mel_fingerprint
from tokenmap.maps.mapfile import array_views, check_fingerprint, fail, open_map, vocab_size_of, write_map
from tokenmap.maps.schema import RECALL_LAYOUT, RECALL_VERSION, check_arrays


def segments(tokens: Sequence[int], timestamp_begin: int) -> list[tuple[int, list[int], int]]:
    """``(opening, text, closing)`` timestamp-delimited segments of a decoded window."""
    out, i = [], 0
    while i < len(tokens):
        if tokens[i] >= timestamp_begin:
            j = i + 1
            while j < len(tokens) and tokens[j] < timestamp_begin:
                j += 1
            if j > i + 1 and j < len(tokens):
                out.append((int(tokens[i]), [int(t) for t in tokens[i + 1:j]], int(tokens[j])))
            i = j + (j < len(tokens) and j > i + 1)
        else:
            i += 1
    return out


def encoder_identity(model_dir: str | os.PathLike) -> str:
    """What a fingerprint depends on: the model's ``config.json`` and the size of its weights."""
    model_dir = Path(model_dir)
    digest = hashlib.sha256((model_dir / "config.json").read_bytes())
    digest.update(str((model_dir / "model.bin").stat().st_size).encode())
    return digest.hexdigest()


class RecallIndex:
    """Fingerprints of decoded segments and what the model wrote for each."""

    def __init__(self, header: dict, vectors: np.ndarray, mel: np.ndarray, offsets: np.ndarray, tokens: np.ndarray,
                 path=None):
        self.header = header
        self.path = path
        self._vectors = np.asarray(vectors, dtype=np.float32)
        self._mel = np.asarray(mel, dtype=np.float32)
        self._offsets = offsets
        self._tokens = tokens
        self._pending: list[tuple[np.ndarray, np.ndarray, list[int]]] = []

    @classmethod
    def empty(cls, header: dict) -> "RecallIndex":
        """An index with no segments yet (``header``: the file's fields), to add windows to."""
        return cls(dict(header), np.zeros((0, 0), np.float32), np.zeros((0, MEL_SIZE), np.float32),
                   np.zeros(1, np.int64), np.zeros(0, np.uint32))

    def __len__(self) -> int:
        return int(self._offsets.shape[0]) - 1 + len(self._pending)

    def add_window(self, frames: np.ndarray, tokens: Sequence[int], timestamp_begin: int, mel=None) -> int:
        """Store every segment of one decoded window; returns how many.

        ``frames``: its encoder output [T, D]; ``mel``: its log-mel features [80, N]
        (None: the segments get no mel fingerprint and are found only where they start a window)."""
        added = 0
        mel = as_mel(mel)
        for opening, text, closing in segments(tokens, timestamp_begin):
            vector = fingerprint(frames, opening - timestamp_begin)
            if vector is not None and closing > opening:
                heard = mel_fingerprint(mel, 2 * (opening - timestamp_begin)) if mel is not None else None
                heard = np.zeros(MEL_SIZE, np.float32) if heard is None else heard
                self._pending.append((vector, heard, text + [timestamp_begin + closing - opening]))
                added += 1
        return added

    def _flush(self) -> None:
        if not self._pending:
            return
        vectors = np.stack([v for v, _, _ in self._pending]).astype(np.float32)
        if self._vectors.size and vectors.shape[1] != self._vectors.shape[1]:
            raise ValueError("fingerprints of another encoder width cannot share an index")
        lengths = np.array([len(t) for _, _, t in self._pending], dtype=np.int64)
        tokens = np.array([x for _, _, t in self._pending for x in t], dtype=np.uint32)
        self._vectors = np.concatenate([self._vectors.reshape(-1, vectors.shape[1]), vectors])
        self._mel = np.concatenate([self._mel, np.stack([m for _, m, _ in self._pending])])
        self._offsets = np.concatenate([self._offsets, self._offsets[-1] + np.cumsum(lengths)])
        self._tokens = np.concatenate([self._tokens, tokens])
        self._pending = []

    def nearest(self, vector: np.ndarray) -> tuple[float, list[int]]:
        """``(cosine, tokens)`` of the stored segment closest to ``vector`` (``(-1, [])`` when empty); ``einsum``,
        not a BLAS product, whose threads would compete with the engine's spinning threads in the decoding loop."""
        self._flush()
        if not self._vectors.size or vector.shape[0] != self._vectors.shape[1]:
            return -1.0, []
        similarity = np.einsum("rk,k->r", self._vectors, vector)
        r = int(np.argmax(similarity))
        return float(similarity[r]), self._segment(r)

    def nearest_mel(self, candidates: np.ndarray) -> tuple[float, list[int]]:
        """``(cosine, tokens)`` of the stored segment closest to any of the mel fingerprints ``candidates``."""
        self._flush()
        if not len(self._mel) or not len(candidates):
            return -1.0, []
        similarity = np.einsum("rk,ck->rc", self._mel, candidates).max(axis=1)
        r = int(np.argmax(similarity))
        return float(similarity[r]), self._segment(r)

    def _segment(self, r: int) -> list[int]:
        return self._tokens[self._offsets[r]:self._offsets[r + 1]].tolist()

    def save(self, path: str | os.PathLike, force: bool = False) -> int:
        """Write the index (atomically; an existing file only with ``force``); returns its size in bytes."""
        path = Path(path)
        if path.exists() and not force:
            raise FileExistsError(f"{path} exists (use force to overwrite it)")
        self._flush()
        header = {**self.header, "kind": "recall", "segments": len(self),
                  "created": self.header.get("created") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        arrays = {"vectors": self._vectors.astype(np.float16), "mel": self._mel.astype(np.float16),
                  "offsets": self._offsets, "tokens": self._tokens}
        return write_map(path, header, arrays, version=RECALL_VERSION)

    @classmethod
    def load(cls, path: str | os.PathLike, fingerprint: str | None = None, encoder: str | None = None,
             vocab_size: int | None = None, verify: bool = True,
             timestamp_begin: int | None = None) -> "RecallIndex":
        """Read and check an index: container, checksum, tokenizer ``fingerprint``, ``encoder`` identity, arrays.

        Any problem is one :class:`~tokenmap.maps.schema.MapFormatError` line, so that a lookup in an
        accepted index can neither fail nor draft outside the vocabulary: the arrays' shapes agree
        (``mel`` rows of :data:`MEL_SIZE`), fingerprints are finite unit vectors (or zeros for a missing
        mel one), offsets run from 0 to the token count in non-empty steps, token ids are in the
        vocabulary and, given ``timestamp_begin``, each segment is text then a timestamp."""
        path = Path(path)
        buf, header = open_map(path, verify)
        if header["format_version"] != RECALL_VERSION:
            raise fail(path, "a token map, not a recall index: give it with --map (token_map=)")
        check_fingerprint(header, fingerprint, header.get("model", ""), path)
        if encoder is not None and header.get("encoder") != encoder:
            raise fail(path, f"recorded with another model's encoder ({header.get('model')}): "
                             "record it again with `tokenmap recall` and this model")
        names = {spec.get("name") for spec in header.get("arrays") or () if isinstance(spec, dict)}
        if "vectors" in names and "mel" not in names:
            raise fail(path, "recorded by an older tokenmap (no mel fingerprints): "
                             "record it again with `tokenmap recall`")
        arrays = array_views(buf, header, path)
        problem = (check_arrays(arrays, RECALL_LAYOUT, {"MEL": MEL_SIZE}, vocab_size_of(header, vocab_size, path))
                   or _fingerprint_problem(arrays) or _segment_problem(arrays, header, timestamp_begin))
        if problem:
            raise fail(path, f"corrupt recall index ({problem})")
        return cls(header, arrays["vectors"], arrays["mel"], arrays["offsets"], arrays["tokens"], path)


def _fingerprint_problem(arrays: dict) -> str | None:
    """Why the stored fingerprints cannot be what :func:`fingerprint` and :func:`mel_fingerprint` wrote,
    or None: encoder fingerprints are unit vectors of ``CHUNKS`` chunks, mel ones unit vectors or zeros
    (none). Rows are checked a block at a time (a float32 copy of a block, not of the index)."""
    vectors, mel = arrays["vectors"], arrays["mel"]
    if len(vectors) and (not vectors.shape[1] or vectors.shape[1] % CHUNKS):
        return f"array 'vectors': rows of {vectors.shape[1]} values, not {CHUNKS} chunks of the encoder width"
    for name, rows, zero_ok in (("vectors", vectors, False), ("mel", mel, True)):
        for start in range(0, len(rows), 1024):
            block = np.asarray(rows[start:start + 1024], dtype=np.float32)
            norms = np.sqrt(np.einsum("rk,rk->r", block, block))
            bad = (np.abs(norms - 1) > 0.01) & ~((norms == 0) & zero_ok)
            if bad.any():
                return f"array {name!r}: row {start + int(bad.argmax())} is not a unit vector"
    return None


def _segment_problem(arrays: dict, header: dict, timestamp_begin: int | None) -> str | None:
    """Why the segments' tokens cannot be what :meth:`RecallIndex.add_window` stored, or None: every
    segment has tokens, and (given ``timestamp_begin``) text tokens, then its length as a timestamp."""
    offsets, tokens = arrays["offsets"], arrays["tokens"]
    if "segments" in header and header["segments"] != len(offsets) - 1:
        return f"header says {header['segments']!r} segments, the arrays hold {len(offsets) - 1}"
    if len(offsets) > 1 and not (offsets[1:] > offsets[:-1]).all():
        return f"segment {int(np.argmin(offsets[1:] > offsets[:-1]))} has no tokens"
    if timestamp_begin is None or not len(tokens):
        return None
    closing = np.zeros(len(tokens), bool)
    closing[offsets[1:] - 1] = True
    length = tokens[closing].astype(np.int64) - timestamp_begin
    if not ((length >= 1) & (length <= MAX_FRAMES)).all():
        return "a segment does not end with its length as a timestamp token"
    if (tokens[~closing] >= timestamp_begin).any():
        return "a timestamp token inside a segment's text"
    return None
