"""Audio fingerprints: where a stretch of audio sounds like one heard before.

A *fingerprint* here is a unit vector summarising one second of a window's audio, compared with others by dot product
(cosine): the recall index (:mod:`tokenmap.maps.recallindex`) stores them per segment and the recall drafter
(:mod:`tokenmap.decode.recall`) looks them up. (Not the tokenizer fingerprint a map's header records.)

* The *encoder* fingerprint of frame ``f`` (an encoder frame is 20 ms, one timestamp step) is the encoder
  output over frames ``f .. f + 50`` (one second) cut in 5 chunks of 10 frames, each chunk averaged, the 5 means
  concatenated and scaled to unit length. A frame's encoder output depends on the audio around it, so it finds a
  recording again where it starts a window (a prompt, a command, the first segment after faster-whisper moves its
  window on), not in the middle of one.
* The *mel* fingerprint, for segments that start inside a window (prompts played back to back in a call), is the
  window's log-mel features over one second: the 56 lowest of the 80 mel bands (below about 4 kHz, all that
  telephone audio carries) averaged over 10 chunks of 10 frames (10 ms each), its mean removed (the features' level
  depends on the loudest sound of the file) and scaled to unit length. A timestamp places a segment start to a few
  hundred milliseconds, so a lookup tries every start within :data:`MEL_SEARCH` frames of it (:func:`mel_candidates`).

Example (a 2-dimensional "encoder" whose first second is constant)::

    >>> frames = np.zeros((1500, 2), dtype=np.float32); frames[:50, 0] = 1.0
    >>> [round(x, 3) for x in fingerprint(frames, 0).tolist()], fingerprint(frames, 1480)
    ([0.447, 0.0, 0.447, 0.0, 0.447, 0.0, 0.447, 0.0, 0.447, 0.0], None)
"""

from __future__ import annotations

import numpy as np

FRAMES = 50  # one second of encoder frames
CHUNKS = 5
MAX_FRAMES = 1500  # a 30 s window
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
