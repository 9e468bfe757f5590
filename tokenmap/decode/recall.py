"""The recall drafter: whole segments heard before, drafted where a window sounds the same.

At each segment start :class:`RecallDrafter` takes the audio fingerprint (:mod:`tokenmap.maps.audio_fingerprints`),
finds the nearest stored one in a :class:`tokenmap.maps.recallindex.RecallIndex` (an encoder match first, then
a mel match) and, when its cosine is at least :data:`THRESHOLD`, drafts that whole segment: its text and its
closing timestamp.

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

import logging
from pathlib import Path
from typing import Sequence

import numpy as np

from tokenmap.decode.special import SpecialTokens
from tokenmap.maps.audio_fingerprints import FRAMES, MAX_FRAMES, as_mel, fingerprint, mel_candidates
from tokenmap.maps.recallindex import RecallIndex, encoder_identity
from tokenmap.maps.schema import vocab_fingerprint

log = logging.getLogger("tokenmap")

THRESHOLD = 0.9  # cosine above which a stored segment is drafted (chosen on the bench's test prompts)


def model_fields(model_dir, hf_tokenizer) -> dict:
    """The header fields an index records of the model in ``model_dir`` and of its tokenizer."""
    return {"fingerprint": vocab_fingerprint(hf_tokenizer),
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
    """Drafts a whole recalled segment at each segment start of one window (in a window without timestamps,
    the text at its start), else nothing.

    ``frames``: the window's encoder output [T, D] (or [1, T, D]); ``mel``: its log-mel features, when known
    (segments that start inside the window are found by them); ``seconds``: the audio in it, when known
    (no recall after a closing timestamp within the last half second).
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
        return (([opening] if closing_just_written else []) + recalled[:-1] + [closing])[:limit]

    def update(self, drafted: int, accepted: int) -> None:
        pass
