"""Audio recall: segments the model decoded before, found again by how they sound.

A scripted domain (IVR prompts in call recordings, a fixed command set)
plays the same recordings again and again. A *recall index* keeps, for
every segment the model once decoded, two fingerprints of the audio where
the segment began and the tokens the model wrote for it. While a window is
decoded, :class:`RecallDrafter` takes the same fingerprints at each segment
start, finds the nearest stored one and, when it is close enough, drafts
that whole segment: its text and its closing timestamp. The model verifies
every token, so a wrong recall costs one longer pass, never a different
transcript.

* The *encoder* fingerprint of frame ``f`` (an encoder frame is 20 ms, one
  timestamp step) is the encoder output over frames ``f .. f + 50`` (one
  second) cut in 5 chunks of 10 frames, each chunk averaged, the 5 means
  concatenated and scaled to unit length. The encoder output of a frame
  depends on the audio around it, so it finds a recording again where it
  starts a window (a prompt, a command, the first segment after
  faster-whisper moves its window on), not in the middle of one.
* The *mel* fingerprint, for segments that start inside a window (prompts
  played back to back in a call), is the window's log-mel features over one
  second: the 56 lowest of the 80 mel bands (below about 4 kHz, all that
  telephone audio carries) averaged over 10 chunks of 10 frames (10 ms each),
  its mean removed (the features' level depends on the loudest sound of the
  file) and scaled to unit length. A timestamp places a segment start to a
  few hundred milliseconds, so the lookup tries every start within
  :data:`MEL_SEARCH` frames of it.

Similarity is the dot product of unit vectors (cosine); an encoder match is
tried first, then a mel match.

File: the token-map container (:mod:`tokenmap.maps.mapfile`: magic, format
version :data:`RECALL_VERSION`, JSON header, aligned arrays, sha256), with

    vectors   float16 [R, 5 * d_model]  one encoder fingerprint per segment
    mel       float16 [R, 560]          one mel fingerprint per segment (zeros: none)
    offsets   int64   [R + 1]           segment r's tokens are tokens[offsets[r]:offsets[r + 1]]
    tokens    uint32  [M]               text tokens, then the segment's length as a timestamp token

and header fields ``fingerprint`` (the tokenizer's), ``vocab_size``,
``encoder`` (:func:`encoder_identity` of the model whose encoder made the
vectors), ``model`` and ``created``.

Example (a 2-dimensional "encoder", ``timestamp_begin`` 100)::

    >>> frames = np.zeros((1500, 2), dtype=np.float32); frames[:50, 0] = 1.0; frames[50:100, 1] = 1.0
    >>> index = RecallIndex.empty({})
    >>> index.add_window(frames, [100, 7, 8, 150, 150, 9, 175], timestamp_begin=100)
    2
    >>> drafter = RecallDrafter(index, frames, timestamp_begin=100)
    >>> drafter.draft([100], limit=10)         # window start: the segment heard at frame 0
    [7, 8, 150]
    >>> drafter.draft([100, 7, 8, 150], limit=10)  # after its closing timestamp: the next one
    [150, 9, 175]
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from tokenmap.decode.rules import SpecialTokens
from tokenmap.maps.checks import array_views, check_fingerprint, fail, open_map, vocab_size_of
from tokenmap.maps.mapfile import write_map
from tokenmap.maps.schema import RECALL_LAYOUT, RECALL_VERSION, check_arrays

log = logging.getLogger("tokenmap")

FRAMES = 50  # one second of encoder frames
CHUNKS = 5
MAX_FRAMES = 1500  # a 30 s window
THRESHOLD = 0.9  # cosine above which a stored segment is drafted (chosen on the bench's test prompts)
MEL_BANDS = 56  # the mel bands below about 4 kHz (of 80)
MEL_CHUNK = 10  # mel frames (10 ms) averaged into one chunk
MEL_CHUNKS = 10  # one second
MEL_SIZE = MEL_BANDS * MEL_CHUNKS
MEL_SEARCH = 20  # mel frames tried either side of a segment start (every second one)


def fingerprint(frames: np.ndarray, frame: int) -> np.ndarray | None:
    """Unit vector of the encoder ``frames`` [T, D] from ``frame`` on (None when less than a second is left)."""
    if frame < 0 or frame + FRAMES > frames.shape[0]:
        return None
    chunk = np.asarray(frames[frame:frame + FRAMES], dtype=np.float32)
    vector = chunk.reshape(CHUNKS, FRAMES // CHUNKS, -1).mean(axis=1).ravel()
    norm = float(np.sqrt(np.einsum("k,k->", vector, vector)))  # no BLAS call (see RecallIndex.nearest)
    return vector / norm if norm > 0 else None


def mel_fingerprint(mel: np.ndarray, frame: int) -> np.ndarray | None:
    """Unit vector of the log-mel features ``mel`` [80, N] from mel ``frame`` on (None: under a second left).

    >>> mel = np.zeros((80, 300), dtype=np.float32); mel[:10, 100:150] = 1.0
    >>> v = mel_fingerprint(mel, 100); v.shape, round(float(v @ v), 3), mel_fingerprint(mel, 250)
    ((560,), 1.0, None)
    """
    if frame < 0 or frame + MEL_CHUNK * MEL_CHUNKS > mel.shape[1]:
        return None
    x = np.asarray(mel[:MEL_BANDS, frame:frame + MEL_CHUNK * MEL_CHUNKS], dtype=np.float32)
    vector = x.reshape(MEL_BANDS, MEL_CHUNKS, MEL_CHUNK).mean(axis=2).T.ravel()
    vector -= vector.mean()
    norm = float(np.sqrt(np.einsum("k,k->", vector, vector)))
    return vector / norm if norm > 0 else None


def mel_candidates(mel: np.ndarray, frame: int) -> np.ndarray:
    """Mel fingerprints [C, MEL_SIZE] of every second start within :data:`MEL_SEARCH` frames of ``frame``."""
    found = [mel_fingerprint(mel, frame + d) for d in range(-MEL_SEARCH, MEL_SEARCH + 1, 2)]
    found = [v for v in found if v is not None]
    return np.stack(found) if found else np.zeros((0, MEL_SIZE), np.float32)


def as_mel(features) -> np.ndarray | None:
    """The [80, N] log-mel features of one window (None for a batch of windows or none)."""
    if features is None:
        return None
    array = np.asarray(features)
    if array.ndim == 3 and array.shape[0] == 1:
        array = array[0]
    return array if array.ndim == 2 else None


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
        """``(cosine, tokens)`` of the stored segment closest to ``vector`` (``(-1, [])`` when empty).

        ``einsum`` rather than a BLAS product: inside the decoding loop, BLAS threads would
        compete with the engine's spinning threads (a lookup then cost tens of milliseconds)."""
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


def model_fields(model_dir, hf_tokenizer) -> dict:
    """The header fields an index records of the model in ``model_dir`` and of its tokenizer."""
    from tokenmap.textok import TextTokenizer

    return {"fingerprint": TextTokenizer(hf_tokenizer).fingerprint,
            "vocab_size": SpecialTokens.from_model_dir(str(model_dir)).vocab_size,  # timestamps included
            "encoder": encoder_identity(model_dir), "model": Path(model_dir).name}


def new_index(model_dir, hf_tokenizer) -> RecallIndex:
    """An empty index for the model in ``model_dir`` (its encoder) and its tokenizer, to add windows to."""
    return RecallIndex.empty(model_fields(model_dir, hf_tokenizer))


def load_recall(recall, hf_tokenizer, model_dir) -> RecallIndex | None:
    """``recall`` (None, a loaded index or a path) checked for the model in ``model_dir`` and its tokenizer."""
    if recall is None or isinstance(recall, RecallIndex):
        return recall
    fields = model_fields(model_dir, hf_tokenizer)
    index = RecallIndex.load(recall, fields["fingerprint"], fields["encoder"], fields["vocab_size"],
                             timestamp_begin=SpecialTokens.from_model_dir(str(model_dir)).timestamp_begin)
    log.info("recall index %s: %d segments", recall, len(index))
    return index


class RecallDrafter:
    """Drafts a whole recalled segment at each segment start of one window.

    ``frames``: the window's encoder output [T, D] (or [1, T, D]); ``mel``: its
    log-mel features [80, N] (or [1, 80, N]), when known (segments that start
    inside the window are found by them); ``seconds``: the audio in it, when
    known (no recall after a closing timestamp within the last half second); in
    a window without timestamps, only the start is recalled (its text).
    Elsewhere, and when nothing stored is as close as ``threshold``, it drafts
    nothing (the next drafter of the chain takes over).
    """

    def __init__(self, index: RecallIndex, frames, timestamp_begin: int, seconds: float | None = None,
                 threshold: float = THRESHOLD, mel=None):
        self.index, self.tb, self.threshold = index, timestamp_begin, threshold
        self._source, self._frames = frames, None
        self._mel = as_mel(mel)
        self._end = int(seconds * FRAMES) if seconds else MAX_FRAMES
        self._seen: dict[int, list[int]] = {}

    def reset(self, history: Sequence[int] = ()) -> None:
        self._seen = {}

    def _recall(self, frame: int) -> list[int]:
        """The tokens of the segment recorded where the audio from ``frame`` on sounds like its start, or []."""
        if frame not in self._seen:
            if self._frames is None:
                array = np.asarray(self._source)
                self._frames = array[0] if array.ndim == 3 else array
            vector = fingerprint(self._frames, frame)
            similarity, tokens = self.index.nearest(vector) if vector is not None else (-1.0, [])
            if similarity < self.threshold and self._mel is not None:
                similarity, tokens = self.index.nearest_mel(mel_candidates(self._mel, 2 * frame))
            self._seen[frame] = tokens if similarity >= self.threshold else []
        return self._seen[frame]

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        if limit <= 0:
            return []
        if not tokens:  # a window without timestamps: the text heard at its start
            return self._recall(0)[:-1][:limit]
        if tokens[-1] < self.tb:
            return []
        opening = int(tokens[-1])
        closing_just_written = len(tokens) > 1 and tokens[-2] < self.tb
        frame = opening - self.tb
        if closing_just_written and frame + FRAMES // 2 > self._end:
            return []
        recalled = self._recall(frame)
        closing = opening + recalled[-1] - self.tb if recalled else 0
        if not recalled or closing - self.tb > MAX_FRAMES:
            return []
        proposal = recalled[:-1] + [closing]
        if closing_just_written:
            proposal = [opening] + proposal
        return proposal[:limit]

    def update(self, drafted: int, accepted: int) -> None:
        pass
