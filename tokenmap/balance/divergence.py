"""How well a token map fits a task: ``D_T``, the cross-entropy of its next-token distribution on the model's output.

The disparate-impacts paper (Definition 1) measures a drafter's misfit on a task ``T`` as
``D_T = E_s[-sum_x p(x|s) log q(x|s)]``. The verifier here is greedy, so ``p(.|s)`` is a point mass on the
greedy token ``y`` and ``D_T`` is the mean negative log-likelihood of the greedy outputs under ``q``::

    D_T = 1/n * sum_i -log q(y_i | y_<i)            # nats per token

``q`` is read from the map (:func:`next_prob`): at each context the map holds, from the longest suffix of ``y_<i``
to the empty one, the token gets ``count(context + y) / (count(context) + PRIOR)``; the ``PRIOR`` share (more of it
behind rare contexts) backs off to the next shorter context (Katz-style), and what is left at the end is spread
uniformly over the vocabulary. Mixing ``q`` with ``EPSILON`` of the uniform distribution caps the cost of one
confident wrong draft at ``log(V / EPSILON)`` nats; a map that never saw the context pays about ``log V``.

``D_T`` is measured on a dev split of the task's training lines (:func:`dev_divergence`) or on *teacher transcripts*
(:func:`teacher_divergence`): the model's own greedy output on other audio of the domain, read like corpora, which
tells the map how the model writes what it hears, i.e. what the verifier accepts. As s-CDF (appendix D.1) trains the
drafter on the verifier's completions, a task's map counts its teacher lines ``Budget.teacher`` times
(:func:`with_teacher`). A task's *stream* is the ``BOS ids SEP ...`` uint32 array of
:func:`tokenmap.build.builder.encode_texts`.

Example (a map of one utterance, ``BOS=9``, ``SEP=10``, a vocabulary of 9 tokens)::

    >>> tm = TokenMap.from_stream(np.array([9, 1, 2, 3, 10], np.uint32), bos=9, sep=10, depth=4)
    >>> round(cross_entropy(tm, [[1, 2, 3]], vocab_size=9), 2)   # the utterance the map holds
    0.29
    >>> split_dev([f"line {i}" for i in range(20)])[1]
    ['line 9', 'line 19']
    >>> with_teacher(np.array([9, 1, 2, 10], np.uint32), np.array([9, 3, 10], np.uint32), 2).tolist()
    [9, 1, 2, 10, 9, 3, 10, 9, 3, 10]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from tokenmap.balance.budget import Budget
from tokenmap.build.builder import context_min_count, encode_texts, split_utterances
from tokenmap.maps.schema import stream_markers
from tokenmap.maps.suffixmap import TokenMap, build_arrays

#: Whisper's multilingual vocabulary size, when a map header lacks ``vocab_size``
DEFAULT_VOCAB = 51865
#: mass reserved behind every context for continuations never seen: count(context) + PRIOR
PRIOR = 1.0
#: share of the uniform distribution mixed into q (bounds the loss of one token)
EPSILON = 0.01
DEV_EVERY = 10  # every 10th training line of a task is its dev split


def next_prob(sm: TokenMap, node: int, token: int, vocab: int) -> float:
    """``q(token | context)``, ``node`` matching the context's longest stored suffix (module docstring)."""
    p, remaining = 0.0, 1.0
    while True:
        total = sm.count(node) + PRIOR
        child = sm.child(node, token)
        if child > 0:
            p += remaining * sm.count(child) / total
        remaining *= PRIOR / total
        if node == 0:
            break
        node = int(sm.arrays["node_link"][node])
    return (1.0 - EPSILON) * (p + remaining / vocab) + EPSILON / vocab


def cross_entropy(tm: TokenMap, sequences: Iterable[Sequence[int]], vocab_size: int | None = None) -> float:
    """``D_T``: mean ``-log q(y_i | BOS, y_<i)`` in nats/token over all tokens of ``sequences`` (NaN if none),
    the model's text tokens of the task's utterances, one list per segment; ``vocab_size``: the header's."""
    vocab = int(vocab_size or tm.header.get("vocab_size") or DEFAULT_VOCAB)
    total, n = 0.0, 0
    for ids in sequences:
        node = max(0, tm.bos_node)
        for y in ids:
            total -= math.log(max(next_prob(tm, node, int(y), vocab), 1e-300))
            node = tm.advance(node, int(y))
            n += 1
    return total / n if n else math.nan


def split_dev(texts: Sequence, every: int = DEV_EVERY) -> tuple[list, list]:
    """``(train, dev)``: every ``every``-th line is dev; tasks under ``2 * every`` lines use all lines for both."""
    if len(texts) < 2 * every:
        return list(texts), list(texts)
    train = [t for i, t in enumerate(texts) if i % every != every - 1]
    dev = [t for i, t in enumerate(texts) if i % every == every - 1]
    return train, dev


def encode_stream(texts: Sequence[str], tokenizer, options) -> np.ndarray:
    """The stream of ``texts``, tokenized ``options.batch_size`` at a time."""
    parts = [np.frombuffer(encode_texts(texts[i:i + options.batch_size], tokenizer, options.style,
                                        options.add_raw), dtype=np.uint32)
             for i in range(0, len(texts), options.batch_size)]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint32)


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
    """``(D_T, dev tokens)`` of the task's default-budget map, built on the :func:`split_dev` train lines
    of its ``stream``, on the dev lines."""
    sep = stream_markers(vocab_size)[1]
    ends = np.flatnonzero(stream == sep)
    train, dev = split_dev(list(zip(np.r_[0, ends[:-1] + 1].tolist(), (ends + 1).tolist())))  # [start, end)
    train_stream = np.concatenate([stream[a:b] for a, b in train]) if train else stream[:0]
    tm = build_task_map(train_stream, Budget.of(options), options, vocab_size)
    seqs = [stream[a + 1:b - 1].tolist() for a, b in dev]
    return cross_entropy(tm, seqs), sum(map(len, seqs))


def with_teacher(stream: np.ndarray, teacher: np.ndarray | None, copies: int) -> np.ndarray:
    """``stream`` followed by ``copies`` copies of the ``teacher`` stream."""
    if teacher is None or copies <= 0 or not len(teacher):
        return stream
    return np.concatenate([stream, *([teacher] * copies)])


def teacher_divergence(stream: np.ndarray, teacher: np.ndarray | None, options, vocab_size: int):
    """``(D_T, teacher tokens, map)``: the cross-entropy of the task's default-budget map, built on
    all of ``stream``, on the teacher stream's utterances, and that map (the task's section when its
    budget stays the default); ``(nan, 0, None)`` without teacher lines."""
    sep = stream_markers(vocab_size)[1]
    seqs = [s for s in split_utterances(teacher, sep) if s] if teacher is not None else []
    if not seqs:
        return math.nan, 0, None
    tm = build_task_map(stream, Budget.of(options), options, vocab_size)
    return cross_entropy(tm, seqs), sum(map(len, seqs)), tm

