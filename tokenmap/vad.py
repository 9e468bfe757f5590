"""faster-whisper's Silero VAD over a long file without a second copy of the file in memory.

faster-whisper's ``SileroVADModel`` turns the whole (padded) file into one new array of 512-sample rows, each
with the 64 samples before it, then runs the model 10,000 rows at a time. :class:`PiecewiseVad` builds the
rows one batch of :data:`BATCH` at a time, with the same context, the recurrent state carried across batches
and the same quirk (the last row's own last 64 samples are zero). A row's output does not depend on the
batching (the example checks it), so the speech chunks are the same, and the model's working memory stays
small too. :mod:`tokenmap.hooks` puts it behind ``faster_whisper.vad.get_vad_model`` for tokenmap's calls.

faster-whisper's ``collect_chunks`` grows the array of speech chunks chunk by chunk (a copy at every step)
before ``transcribe`` copies it once more; :func:`collect_chunks` leaves that one copy.

Example::

    >>> import numpy as np
    >>> from tokenmap.hooks import STOCK, install
    >>> install()
    >>> audio = np.random.default_rng(0).normal(0, 0.05, 512 * 25_000).astype(np.float32)
    >>> lean = PiecewiseVad(STOCK["get_vad_model"]())(audio.copy())
    >>> whole = STOCK["get_vad_model"]()(audio.copy())
    >>> lean.shape == whole.shape and bool(np.array_equal(lean, whole))
    True
"""

from __future__ import annotations

import numpy as np
from faster_whisper.vad import collect_chunks as stock_collect_chunks

BATCH = 1_000  # rows a model call (faster-whisper: 10,000)


class PiecewiseVad:
    """``model`` (faster-whisper's ``SileroVADModel``) called on one batch of rows at a time."""

    def __init__(self, model):
        self.model = model

    def __call__(self, audio: np.ndarray, num_samples: int = 512, context_size_samples: int = 64):
        if audio.ndim != 1 or audio.shape[0] % num_samples:
            return self.model(audio, num_samples, context_size_samples)  # its own error message
        rows = audio.reshape(-1, num_samples)
        h = np.zeros((1, 1, 128), dtype="float32")
        c = np.zeros((1, 1, 128), dtype="float32")
        outputs = []
        for start in range(0, len(rows), BATCH):
            block = rows[start: start + BATCH]
            batch = np.empty((len(block), context_size_samples + num_samples), dtype=np.float32)
            batch[:, context_size_samples:] = block
            batch[1:, :context_size_samples] = block[:-1, -context_size_samples:]
            batch[0, :context_size_samples] = rows[start - 1, -context_size_samples:] if start else 0.0
            if start + len(block) == len(rows):  # faster-whisper zeroes the last row's own tail
                batch[-1, -context_size_samples:] = 0.0
            output, h, c = self.model.session.run(None, {"input": batch, "h": h, "c": c})
            outputs.append(output)
        return np.concatenate(outputs, axis=0)


def collect_chunks(audio, chunks, sampling_rate: int = 16000, max_duration: float = float("inf")):
    """faster-whisper's ``collect_chunks``; with an infinite ``max_duration`` the speech chunks come
    back as views of ``audio`` (their concatenation is faster-whisper's array) with its metadata.

    >>> import numpy as np
    >>> pieces, meta = collect_chunks(np.arange(10.0), [{"start": 1, "end": 3}, {"start": 6, "end": 8}])
    >>> np.concatenate(pieces).tolist(), meta[0]["duration"] * 16000
    ([1.0, 2.0, 6.0, 7.0], 4.0)
    """
    if max_duration != float("inf") or not chunks:
        return stock_collect_chunks(audio, chunks, sampling_rate, max_duration)
    views = [audio[chunk["start"]: chunk["end"]] for chunk in chunks]
    total = sum(chunk["end"] - chunk["start"] for chunk in chunks)
    return views, [{"offset": 0.0, "duration": total / sampling_rate, "segments": list(chunks)}]

