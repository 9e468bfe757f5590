"""How well a token map fits a task: ``D_T``, the cross-entropy of the map's
next-token distribution against the tokens the model emits on that task.

The disparate-impacts paper (Definition 1) measures a drafter's misfit on a
task ``T`` as ``D_T = E_s[-sum_x p(x|s) log q(x|s)]``.  Here the verifier is
greedy, so ``p(.|s)`` is a point mass on the greedy token ``y`` and the
cross-entropy is simply the mean negative log-likelihood of the greedy
outputs under ``q``::

    D_T = 1/n * sum_i -log q(y_i | y_<i)            # nats per token

``q`` is read from the map itself (:func:`next_prob`): at each context the map
holds, from the longest suffix of ``y_<i`` to the empty one, the token gets
``count(context + y) / (count(context) + PRIOR)``; the ``PRIOR`` share (more of
it behind rare contexts) backs off to the next shorter context (Katz-style),
and what is left at the end is spread uniformly over the vocabulary.  Finally
``q`` is mixed with ``EPSILON`` of the uniform distribution, so one confident
wrong draft costs at most ``log(V / EPSILON)`` (about 15.5 nats) instead of
dominating the mean.  A map whose drafts agree with the model puts most mass
on the greedy token (small ``D_T``); a map that never saw the context pays
about ``log V`` (10.9 nats for Whisper).

Example (a map of one utterance, ``BOS=9``, ``SEP=10``, a vocabulary of 9 tokens)::

    >>> import numpy as np
    >>> tm = TokenMap.from_stream(np.array([9, 1, 2, 3, 10], np.uint32), bos=9, sep=10, depth=4)
    >>> round(cross_entropy(tm, [[1, 2, 3]], vocab_size=9), 2)   # the utterance the map holds
    0.29
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence

from tokenmap.maps.suffixmap import TokenMap

log = logging.getLogger("tokenmap")

#: Whisper's multilingual vocabulary size, when a map header lacks ``vocab_size``
DEFAULT_VOCAB = 51865
#: mass reserved behind every context for continuations never seen: count(context) + PRIOR
PRIOR = 1.0
#: share of the uniform distribution mixed into q (bounds the loss of one token)
EPSILON = 0.01


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
    """``D_T``: mean ``-log q(y_i | BOS, y_<i)`` in nats/token over all tokens of ``sequences``.

    ``sequences`` are the model's (greedy) text tokens of the task's
    utterances, one list per segment, without special tokens; NaN if empty.
    ``vocab_size`` defaults to the map header's.
    """
    vocab = int(vocab_size or tm.header.get("vocab_size") or DEFAULT_VOCAB)
    total, n = 0.0, 0
    for ids in sequences:
        node = max(0, tm.bos_node)
        for y in ids:
            total -= math.log(max(next_prob(tm, node, int(y), vocab), 1e-300))
            node = tm.advance(node, int(y))
            n += 1
    return total / n if n else math.nan
