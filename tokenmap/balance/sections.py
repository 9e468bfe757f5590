"""``tokenmap build --balance``: write a balanced plan as a map set (one section per task) or one merged map.

:func:`build_balanced` plans the budgets (:func:`tokenmap.balance.plan.plan_balance`) and writes
either layout: :func:`build_sections` counts and prunes each task's section with its own budget
(teacher lines included); ``layout="merged"`` writes the budgets into one map
(:mod:`tokenmap.balance.merged`).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Sequence

from tokenmap.balance.budget import rounded
from tokenmap.balance.merged import build_merged
from tokenmap.balance.plan import BalancePlan, plan_balance
from tokenmap.balance.streams import task_arrays
from tokenmap.balance.teacher import with_teacher
from tokenmap.build.builder import make_header, require_keys
from tokenmap.maps import mapfile

LAYOUTS = ("sections", "merged")


def build_balanced(corpus: Sequence, output, *, layout: str = "sections", **kwargs):
    """``tokenmap build --balance``: budgets from :func:`allocate`, one section per task (or ``merged``).

    ``kwargs`` as :func:`plan_balance`.  Returns a :class:`tokenmap.build.builder.BuildResult`;
    the header gets a ``balance`` section with every task's ``D_T`` (dev split or teacher lines),
    ``w_T`` and budget.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}: choose from {', '.join(LAYOUTS)}")
    if layout == "merged" and kwargs.get("teacher"):
        raise ValueError("teacher transcripts need the sections layout")
    plan = plan_balance(corpus, output, **kwargs)
    if layout == "merged":
        return build_merged(plan)
    return build_sections(plan)


def build_sections(plan: BalancePlan):
    """A map set: each task's section counted and pruned with its own budget (teacher lines included)."""
    if plan.progress:
        plan.progress("count", 0)
    streams = plan.streams
    sections, maps = [], []
    for task in sorted(plan.tasks):
        budget = plan.budgets[task]
        arrays = plan.default_arrays.get(task) if budget == plan.default else None
        if arrays is None:
            stream = with_teacher(streams[task], plan.teacher_streams.get(task), budget.teacher)
            arrays = task_arrays(stream, budget, plan.options, plan.cost, plan.bos, plan.sep)
        info = {"task": task, "order": plan.options.max_order, "lines": len(plan.tasks[task]),
                "D_T": rounded(plan.divergence[task]), **asdict(budget)}
        tm = mapfile.TokenMap(dict(info), arrays)
        info["self_test"] = plan.self_test(tm, [streams[task]])
        sections.append((info, arrays))
        maps.append(tm)
    header = make_header(plan.tokenizer, plan.model, plan.options, plan.stats, plan.cost, plan.n_tokens(streams))
    header["balance"] = plan.header("sections")
    header["self_test"] = summed_tests([info["self_test"] for info, _ in sections])
    require_keys(sum(m.num_keys for m in maps), plan.stats, header["tokens"], plan.options.min_count)
    if plan.progress:
        plan.progress("save", 0)
    size = mapfile.write_map_set(plan.output, header, sections)
    return plan.result(size, header, maps)


def summed_tests(tests: Sequence[dict]) -> dict:
    """The sections' :func:`tokenmap.build.selftest.simulate` counts added up (each task on its own section)."""
    total = {k: sum(t[k] for t in tests) for k in ("tokens", "passes", "drafts", "drafted", "accepted")}
    total["acceptance"] = round(total["accepted"] / total["drafted"], 4) if total["drafted"] else 0.0
    total["tokens_per_pass"] = round(total["tokens"] / total["passes"], 4) if total["passes"] else 0.0
    return total
