"""A task's token stream: encoding, the task's map, and ``D_T`` on a dev split.

Shared by :mod:`tokenmap.balance.plan` (``tokenmap build --balance``),
:mod:`tokenmap.balance.sections` and :mod:`tokenmap.balance.teacher`.  A stream is the ``BOS ids SEP ...``
uint32 array :func:`tokenmap.build.builder.encode_texts` makes (``BOS`` =
vocabulary size, ``SEP`` = vocabulary size + 1).

Example::

    >>> split_dev([f"line {i}" for i in range(20)])[1]
    ['line 9', 'line 19']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tokenmap.balance.budget import Budget
from tokenmap.balance.divergence import cross_entropy
from tokenmap.build.builder import context_min_count, encode_texts
from tokenmap.maps.schema import stream_markers
from tokenmap.maps.suffixmap import TokenMap, build_arrays

DEV_EVERY = 10  # every 10th training line of a task is its dev split


def split_dev(texts: Sequence[str], every: int = DEV_EVERY) -> tuple[list[str], list[str]]:
    """``(train, dev)``: every ``every``-th line is dev; tasks under ``2 * every`` lines use all lines for both."""
    if len(texts) < 2 * every:
        return list(texts), list(texts)
    train = [t for i, t in enumerate(texts) if i % every != every - 1]
    dev = [t for i, t in enumerate(texts) if i % every == every - 1]
    return train, dev


def encode_stream(texts: Sequence[str], tokenizer, options) -> np.ndarray:
    """The ``BOS ids SEP ...`` uint32 stream of ``texts`` (as :func:`tokenmap.build.builder.encode_texts`)."""
    parts = [np.frombuffer(encode_texts(texts[i:i + options.batch_size], tokenizer, options.style,
                                        options.add_raw), dtype=np.uint32)
             for i in range(0, len(texts), options.batch_size)]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint32)


def stream_sequences(tok: np.ndarray, bos: int, sep: int) -> list[list[int]]:
    """The utterances of a stream without BOS/SEP."""
    ends = np.flatnonzero(tok == sep)
    out, start = [], 0
    for e in ends.tolist():
        out.append([t for t in tok[start:e].tolist() if t != bos])
        start = e + 1
    return out


def build_task_map(tok: np.ndarray, budget: Budget, options, vocab_size: int) -> TokenMap:
    """The in-memory token map of one task's stream with ``budget`` (``options.depth`` deep); its
    header holds ``depth``, ``bos``, ``sep``, ``vocab_size`` and the ``min_count`` used (for a
    ``budget.min_count`` of 0, the builder's rule on the stream's length, as ``tokenmap build``)."""
    bos, sep = stream_markers(vocab_size)
    min_count = context_min_count(budget.min_count, len(tok))
    arrays = build_arrays(tok, sep, options.depth, min_count)
    header = {"depth": options.depth, "bos": bos, "sep": sep, "vocab_size": vocab_size, "min_count": min_count}
    return TokenMap(header, arrays)


def dev_divergence(stream: np.ndarray, options, vocab_size: int) -> tuple[float, int]:
    """``(D_T, dev tokens)`` of the task's default-budget map (built on its train split) on its dev split.

    ``stream``: the task's ``BOS ids SEP ...`` stream (:func:`encode_stream`), split by line as
    :func:`split_dev` splits texts.
    """
    bos, sep = stream_markers(vocab_size)
    ends = np.flatnonzero(stream == sep)
    lines = list(zip(np.r_[0, ends[:-1] + 1].tolist(), (ends + 1).tolist()))  # [start, end) of each line
    train, dev = split_dev(lines)
    train_stream = np.concatenate([stream[a:b] for a, b in train]) if train else stream[:0]
    tm = build_task_map(train_stream, Budget.of(options), options, vocab_size)
    seqs = [[t for t in stream[a:b - 1].tolist() if t != bos] for a, b in dev]
    return cross_entropy(tm, seqs), sum(map(len, seqs))
