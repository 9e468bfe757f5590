"""Share a map set's budget fairly across tasks: the token-map analogue of s-CDF.

A task is a corpus ``domain/lang``, and a map set holds one token map per task (:mod:`tokenmap.balance.sections`).
A thin task (few lines) gets short, rare drafts from its map, and so a small speed-up. s-CDF (disparate-impacts
paper, eq. 9) weights each task's update by its *excess divergence* ``D_T - D_min``
(:mod:`tokenmap.balance.divergence`); here the "update" is how generous the task's map is:

* ``min_count``: the count a context needs to stay in the task's map (lower keeps rarer contexts, so more
  drafts); 0 is the builder's rule (:func:`tokenmap.build.builder.context_min_count`);
* ``teacher``: how many times the task's map counts its teacher transcripts.

:func:`allocate` moves every setting from its default towards the generous bound (:data:`GENEROUS` by default)
in proportion to ``w_T = (D_T - D_min) / (D_max - D_min)``: the best task (``w = 0``) keeps the defaults, the
worst (``w = 1``) gets the bound, and tasks with ``w_T <= protect`` are *protected* and keep the defaults too.

Worked example (defaults 0/0, worst-task bound 1/8)::

    >>> bound = Budget(min_count=1, teacher=8)
    >>> alloc = allocate({"maint/en": 4.0, "tel/en": 8.0, "tel/es": 6.0}, generous=bound)
    >>> alloc["maint/en"] == DEFAULT_BUDGET            # w = 0: unchanged
    True
    >>> alloc["tel/en"]                                # w = 1: the bound
    Budget(min_count=1, teacher=8)
    >>> alloc["tel/es"]                                # w = 0.5: half way (integers round half up)
    Budget(min_count=1, teacher=4)
    >>> allocate({"maint/en": 4.0, "tel/en": 8.0, "tel/es": 6.0}, generous=bound, protect=0.5)["tel/es"]
    Budget(min_count=0, teacher=0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    """One task's share of the map set's budget (see the module docstring)."""

    min_count: int = 0
    teacher: int = 0  # copies of the task's teacher transcripts counted into its map

    def __post_init__(self) -> None:
        if self.min_count < 0 or self.teacher < 0:
            raise ValueError("budget needs min_count >= 0 and teacher >= 0")

    @classmethod
    def of(cls, options) -> Budget:
        """The default budget of build options (their ``min_count``)."""
        return cls(min_count=options.min_count)


DEFAULT_BUDGET = Budget()
#: the budget of the worst task (w = 1): every context of its corpus kept, its teacher transcripts counted four times
GENEROUS = Budget(min_count=1, teacher=4)
#: tasks with w_T <= PROTECT keep the default budget in ``tokenmap build --balance`` (the best task always does)
PROTECT = 0.65


def excess(divergence: Mapping[str, float]) -> dict[str, float]:
    """``D_T - D_min`` per task (finite values only)."""
    finite = {t: d for t, d in divergence.items() if d is not None and not math.isnan(d)}
    if not finite:
        return {}
    low = min(finite.values())
    return {t: d - low for t, d in finite.items()}


def shares(divergence: Mapping[str, float]) -> dict[str, float]:
    """``w_T = (D_T - D_min) / (D_max - D_min)`` in [0, 1]; all 0 when every D_T is equal."""
    ex = excess(divergence)
    top = max(ex.values(), default=0.0)
    return {t: (e / top if top > 0 else 0.0) for t, e in ex.items()}


def best_task(divergence: Mapping[str, float]) -> str | None:
    """The task with the smallest ``D_T`` (first in sorted order on ties)."""
    ex = excess(divergence)
    return min(sorted(ex), key=ex.get) if ex else None


def protected_tasks(divergence: Mapping[str, float], below: float = PROTECT) -> list[str]:
    """Tasks with ``w_T <= below``, best first: they keep the default budget (the best task always does)."""
    w = shares(divergence)
    best = best_task(divergence)
    keep = [t for t in w if t == best or w[t] <= below]
    return sorted(keep, key=lambda t: (w[t], t))


def rounded(x: float) -> float | None:
    """``x`` to 4 places for a map header; None for NaN (no JSON NaN in headers)."""
    return None if x is None or math.isnan(x) else round(x, 4)


def _lerp_int(lo: int, hi: int, w: float) -> int:
    return int(math.floor(lo + w * (hi - lo) + 0.5))


def allocate(divergence: Mapping[str, float], default: Budget = DEFAULT_BUDGET,
             generous: Budget = GENEROUS, protect: float = 0.0) -> dict[str, Budget]:
    """Per-task budgets, each setting moved from ``default`` towards ``generous`` (either may be the larger)
    by ``w_T``; tasks with a NaN ``D_T`` and protected tasks (``w_T <= protect``) keep the defaults."""
    w = shares(divergence)
    out = {}
    for task in divergence:
        x = w.get(task, 0.0) if w.get(task, 0.0) > protect else 0.0
        out[task] = Budget(min_count=_lerp_int(default.min_count, generous.min_count, x),
                           teacher=_lerp_int(default.teacher, generous.teacher, x))
    return out


def task_name(domain: str, lang: str) -> str:
    """``domain/lang`` (just ``domain`` when the language is unknown)."""
    return f"{domain}/{lang}" if lang else (domain or "default")
