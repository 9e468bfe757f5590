"""Draft length: the one rule that decides how far to draft, and the running state it learns from.

:func:`best_cut` cuts every draft on the calibrated cost curve (:class:`tokenmap.decode.cost.CostModel`): a
draft of ``L`` tokens whose first ``k`` are all kept with chance ``P_k`` keeps ``E_L = P_1 + ... + P_L`` tokens
on average and saves ``E_L * step_ms - (batch_ms(L + 1) - step_ms)`` ms; the cut is the ``L`` that saves most
(no draft when none saves anything). Sources differ only in where ``P_k`` comes from:

* a source with no estimate of its own (prompt lookup, the session cache) is wrapped in a
  :class:`ControlledDrafter`, whose :class:`AcceptanceController` takes ``P_k = p ** k``, ``p`` learned from
  its verified drafts;
* a map's drafter (:class:`tokenmap.decode.follow.FollowDrafter`) has per-token chances from the map's
  frequencies, scaled by its :class:`DraftTally`.

The window gate (:class:`tokenmap.decode.gate.WindowGate`) keeps this state across the windows decoded
with the same maps and weighs it.

Example::

    >>> from tokenmap.decode.cost import CostModel
    >>> c = AcceptanceController(CostModel(10.0, (10.0, 18.0, 16.0, 16.0, 15.0)))
    >>> c.limit()                    # optimistic prior p = 2/3: a 5-token draft pays most
    5
    >>> for _ in range(20):
    ...     c.update(4, 0)           # every draft rejected at its first token
    >>> c.limit(), round(c.p, 2)
    (0, 0.06)
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def verify_costs(cost, max_len: int) -> np.ndarray:
    """``batch_ms(L + 1) - step_ms`` for ``L = 1 .. max_len``: what verifying an ``L``-token draft adds to a step."""
    return np.array([cost.batch(length + 1) - cost.step_ms for length in range(1, max_len + 1)])


def best_cut(chances, step_ms: float, verify_ms: np.ndarray) -> tuple[int, float, float]:
    """``(length, saving ms, expected kept tokens)`` of the draft that saves most (``(0, 0.0, 0.0)``: none
    saves anything); ``chances[k - 1]``: the chance that the first ``k`` drafted tokens are all kept.

    >>> best_cut([0.75, 0.5, 0.25], 10.0, np.array([1.0, 2.0, 6.0]))   # 12.5 - 2 beats 7.5 - 1 and 15 - 6
    (2, 10.5, 1.25)
    >>> best_cut([0.1], 10.0, np.array([1.0]))
    (0, 0.0, 0.0)
    """
    expected = np.cumsum(np.asarray(chances, dtype=np.float64))
    if not len(expected):
        return 0, 0.0, 0.0
    saving = expected * step_ms - verify_ms[: len(expected)]
    best = int(np.argmax(saving))
    if saving[best] <= 0:
        return 0, 0.0, 0.0
    return best + 1, float(saving[best]), float(expected[best])


class DraftTally:
    """What one map drafter learned from its verified drafts, decayed: ``factor``, observed over predicted
    kept tokens, which scales the drafter's chances; ``stamp_rate`` and ``open_rate``, how often a guessed
    closing timestamp, and a guessed opening timestamp after one, were right; ``saving_ms``, which the
    window gate weighs."""

    decay = 0.95

    def __init__(self):
        self.observed = self.predicted = 2.0  # priors: 2 tokens kept of 2 predicted,
        self.stamp_hits, self.stamp_tries = 0.8, 2.0  # 40 % of guessed closing timestamps right,
        self.open_hits, self.open_tries = 1.6, 2.0  # 80 % of guessed opening ones
        self.drafts = 0
        self._saved = 0.0
        self._weight = 0.0

    @property
    def saving_ms(self) -> float:
        """Decayed mean of ``accepted * step - (pass - step)`` over the verified drafts (0 before any)."""
        return self._saved / self._weight if self._weight else 0.0

    def update_saving(self, saved_ms: float) -> None:
        self.drafts += 1
        self._saved = self.decay * self._saved + saved_ms
        self._weight = self.decay * self._weight + 1.0

    @property
    def factor(self) -> float:
        return min(1.0, max(0.05, self.observed / self.predicted))

    @property
    def stamp_rate(self) -> float:
        return self.stamp_hits / self.stamp_tries

    def update(self, predicted: float, observed: float) -> None:
        self.observed = self.decay * self.observed + observed
        self.predicted = self.decay * self.predicted + predicted

    def update_stamp(self, hit: bool) -> None:
        self.stamp_hits = self.decay * self.stamp_hits + hit
        self.stamp_tries = self.decay * self.stamp_tries + 1.0

    @property
    def open_rate(self) -> float:
        return self.open_hits / self.open_tries

    def update_open(self, hit: bool) -> None:
        self.open_hits = self.decay * self.open_hits + hit
        self.open_tries = self.decay * self.open_tries + 1.0


class AcceptanceController:
    """How far a source with no estimate of its own drafts: each drafted token is kept with probability
    ``p`` given that the previous ones were, ``p`` a decayed count of accepted tokens over those plus first
    rejections, carried across windows. No draft is verified while no length pays, but a 2-token probe
    every ``probe_every`` passes; the window gate weighs :meth:`best` against ``margin_ms``."""

    def __init__(self, cost, max_len: int = 24, prior=(2.0, 1.0), decay: float = 0.97,
                 probe_every: int = 16, margin_ms: float = 0.5):
        self.cost = cost
        self.max_len = max_len
        self._verify = verify_costs(cost, max_len)
        self.decay = decay
        self.probe_every = probe_every
        self.margin_ms = margin_ms
        self.accepted, self.rejected = prior
        self.verified = 0  # drafts verified so far
        self._best = None  # (p, best()) cache
        self._since_draft = 0

    @property
    def p(self) -> float:
        return self.accepted / (self.accepted + self.rejected)

    def best(self) -> tuple[int, float]:
        """(draft length, expected saving in ms) of the best draft at the current ``p`` (cached per ``p``)."""
        p = self.p
        if self._best is None or self._best[0] != p:
            length, saving, _ = best_cut([p ** k for k in range(1, self.max_len + 1)], self.cost.step_ms,
                                         self._verify)
            self._best = (p, (length, saving))
        return self._best[1]

    def limit(self) -> int:
        """How many tokens to draft at the next pass (0: none)."""
        best, _ = self.best()
        if best == 0:
            self._since_draft += 1
            if self._since_draft >= self.probe_every:
                return 2
        return best

    def update(self, drafted: int, accepted: int) -> None:
        if drafted == 0:
            return
        self.verified += 1
        self._since_draft = 0
        self.accepted = self.decay * self.accepted + accepted
        self.rejected = self.decay * self.rejected + (1.0 if accepted < drafted else 0.0)


class ControlledDrafter:
    """A drafter asked for at most ``controller.limit()`` tokens; every verified draft teaches both."""

    def __init__(self, drafter, controller: AcceptanceController):
        self.drafter = drafter
        self.controller = controller

    def reset(self, history: Sequence[int] = ()) -> None:
        self.drafter.reset(history)

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        n = min(limit, self.controller.limit())
        return self.drafter.draft(tokens, n) if n > 0 else []

    def update(self, drafted: int, accepted: int) -> None:
        self.controller.update(drafted, accepted)
        self.drafter.update(drafted, accepted)
