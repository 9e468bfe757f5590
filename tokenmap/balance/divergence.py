"""How well a token map fits a task: ``D_T``, the cross-entropy of the map's
next-token distribution against the tokens the model emits on that task.

The disparate-impacts paper (Definition 1) measures a drafter's misfit on a
task ``T`` as ``D_T = E_s[-sum_x p(x|s) log q(x|s)]``.  Here the verifier is
greedy, so ``p(.|s)`` is a point mass on the greedy token ``y`` and the
cross-entropy is simply the mean negative log-likelihood of the greedy
outputs under ``q``::

    D_T = 1/n * sum_i -log q(y_i | y_<i)            # nats per token

``q`` is read from the map itself (:class:`MapDistribution`), so any map file
can be scored, including a merged multi-task map: at the longest stored key
for the context, each ranked candidate puts its first token's share
``count(key + t1) / (count(key) + 1)`` on ``t1`` (the ``+ 1`` reserves mass
for continuations the corpus never showed, more of it behind rare keys); the
rest backs off to the next shorter key (Katz-style), and what is left at the
end is spread uniformly over the vocabulary.  Finally ``q`` is mixed with
``EPSILON`` of the uniform distribution, so one confident wrong draft costs at
most ``log(V / EPSILON)`` (about 15.5 nats) instead of dominating the mean.  A map whose drafts agree with the model puts
most mass on the greedy token (small ``D_T``); a thin map that has no key or
no candidate for the context pays ``log V`` (about 10.9 nats for Whisper).

The share ``count(key + t1) / count(key)`` is exact when the map stores the
key ``key + t1`` (it then knows its count); otherwise (contexts of the
longest order) the candidate's ``expected / length`` is used, a lower bound
because the shares along a draft never increase.

Example::

    >>> tm = TokenMap.load("maint.tmap")                                   # doctest: +SKIP
    >>> cross_entropy(tm, [tok.encode(s) for s in sentences])              # doctest: +SKIP
    1.73
"""

from __future__ import annotations

import logging
import math
from typing import Iterable, Sequence

from tokenmap.maps.mapfile import TokenMap
from tokenmap.maps.suffixmap import SuffixMap

log = logging.getLogger("tokenmap")

#: Whisper's multilingual vocabulary size, when a map header lacks ``vocab_size``
DEFAULT_VOCAB = 51865
#: mass reserved behind every key for continuations never seen: count(key) + PRIOR
PRIOR = 1.0
#: share of the uniform distribution mixed into q (bounds the loss of one token)
EPSILON = 0.01


class MapDistribution:
    """The smoothed next-token distribution ``q(x | context)`` of a :class:`TokenMap`.

    ``floor`` is the uniform base distribution's vocabulary size (defaults to
    the map's ``vocab_size``).  Results are cached per (key order, key tokens).
    """

    def __init__(self, tm: TokenMap, vocab_size: int | None = None):
        self.tm = tm
        self.vocab = int(vocab_size or tm.header.get("vocab_size") or DEFAULT_VOCAB)
        self._cache: dict = {}
        a = tm.arrays
        self._count = a["key_count"]
        self._exp = a["cand_expected"]
        self._off = a["cand_offsets"]
        self._tok_off = a["cand_tok_offsets"]
        self._tokens = a["cand_tokens"]

    def _find(self, key: Sequence[int]) -> int:
        return self.tm._find(list(key), len(key))

    def shares(self, key: Sequence[int]) -> dict[int, float] | None:
        """``{first token: share}`` of the candidates of ``key`` (None if the key is not stored)."""
        key = tuple(key)
        if key in self._cache:
            return self._cache[key]
        row = self._find(key)
        if row < 0:
            self._cache[key] = None
            return None
        out: dict[int, float] = {}
        total = float(self._count[row]) + PRIOR
        for c in range(int(self._off[row]), int(self._off[row + 1])):
            lo, hi = int(self._tok_off[c]), int(self._tok_off[c + 1])
            if hi <= lo:
                continue
            first = int(self._tokens[lo])
            child = self._find(key + (first,)) if len(key) < self.tm.order else -1
            if child >= 0:
                share = float(self._count[child]) / total
            else:
                share = float(self._exp[c]) / (hi - lo) * (total - PRIOR) / total
            out[first] = out.get(first, 0.0) + min(1.0, share)
        mass = sum(out.values())
        if mass > 1.0:  # rounding of float32 expectations: renormalise
            out = {t: s / mass for t, s in out.items()}
        self._cache[key] = out
        return out

    def prob(self, context: Sequence[int], token: int) -> float:
        """``q(token | context)``; ``context`` starts with ``TokenMap.BOS`` at an utterance start."""
        p, remaining = 0.0, 1.0
        for n in range(min(self.tm.order, len(context)), 0, -1):
            shares = self.shares(context[len(context) - n:])
            if not shares:
                continue
            p += remaining * shares.get(token, 0.0)
            remaining *= max(0.0, 1.0 - sum(shares.values()))
            if remaining <= 0.0:
                break
        return (1.0 - EPSILON) * (p + remaining / self.vocab) + EPSILON / self.vocab


def suffix_prob(sm: SuffixMap, node: int, token: int, vocab: int) -> float:
    """``q(token | context)`` of a suffix map, ``node`` matching the context's longest stored suffix:
    at each context from the longest to the empty one, ``count(context + token) / (count(context) +
    PRIOR)``, the ``PRIOR`` share backing off to the next shorter context (its suffix link), the rest
    spread uniformly; mixed with ``EPSILON`` of the uniform distribution as for n-gram maps."""
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


def _suffix_cross_entropy(sm: SuffixMap, sequences: Iterable[Sequence[int]], vocab_size: int | None) -> float:
    vocab = int(vocab_size or sm.header.get("vocab_size") or DEFAULT_VOCAB)
    total, n = 0.0, 0
    for ids in sequences:
        node = sm.bos_node if sm.bos_node > 0 else 0
        for y in ids:
            total -= math.log(max(suffix_prob(sm, node, int(y), vocab), 1e-300))
            node = sm.advance(node, int(y))
            n += 1
    return total / n if n else math.nan


def cross_entropy(tm, sequences: Iterable[Sequence[int]], vocab_size: int | None = None) -> float:
    """``D_T``: mean ``-log q(y_i | BOS, y_<i)`` in nats/token over all tokens of ``sequences``.

    ``sequences`` are the model's (greedy) text tokens of the task's
    utterances, one list per segment, without special tokens; NaN if empty.
    ``tm``: a :class:`TokenMap` or a :class:`tokenmap.maps.suffixmap.SuffixMap` (:func:`suffix_prob`).
    """
    if isinstance(tm, SuffixMap):
        return _suffix_cross_entropy(tm, sequences, vocab_size)
    dist = MapDistribution(tm, vocab_size)
    total, n = 0.0, 0
    for ids in sequences:
        ctx = [TokenMap.BOS]
        for y in ids:
            total -= math.log(max(dist.prob(ctx, int(y)), 1e-300))
            ctx.append(int(y))
            n += 1
    return total / n if n else math.nan
