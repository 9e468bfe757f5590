"""``tokenmap build --balance``: write a balanced plan as a map set, one token map per task.

:func:`build_balanced` plans the budgets (:func:`tokenmap.balance.plan.plan_balance`) and
:func:`build_sections` builds each task's map with its own budget (its teacher lines included)
and writes them as the sections of one file (:func:`tokenmap.maps.mapfile.write_map_set`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from tokenmap.balance.budget import rounded
from tokenmap.balance.plan import BalancePlan, plan_balance
from tokenmap.balance.streams import build_task_map
from tokenmap.balance.teacher import with_teacher
from tokenmap.build.builder import make_header, require_keys
from tokenmap.maps import mapfile


def build_balanced(corpus: Sequence, output, **kwargs):
    """``tokenmap build --balance``: budgets from :func:`allocate`, one section per task.

    ``kwargs`` as :func:`plan_balance`.  Returns a :class:`tokenmap.build.builder.BuildResult`;
    the header gets a ``balance`` section with every task's ``D_T`` (dev split or teacher lines),
    ``w_T`` and budget.
    """
    return build_sections(plan_balance(corpus, output, **kwargs))


def build_sections(plan: BalancePlan):
    """A map set: each task's map built with its own budget (teacher lines included)."""
    if plan.progress:
        plan.progress("count", 0)
    streams = plan.streams
    sections, maps = [], []
    for task in sorted(plan.tasks):
        budget = plan.budgets[task]
        tm = plan.default_maps.get(task) if budget == plan.default else None
        if tm is None:
            stream = with_teacher(streams[task], plan.teacher_streams.get(task), budget.teacher)
            tm = build_task_map(stream, budget, plan.options, plan.tokenizer.vocab_size)
        info = {"task": task, "lines": len(plan.tasks[task]), "D_T": rounded(plan.divergence[task]),
                "min_count": tm.header["min_count"], "budget": asdict(budget)}
        info["self_test"] = plan.self_test(tm, streams[task])
        sections.append((info, tm.arrays))
        maps.append(tm)
    header = make_header(plan.tokenizer, plan.model, plan.options, plan.stats, plan.cost, plan.n_tokens(streams))
    header["balance"] = plan.header()
    header["self_test"] = summed_tests([info["self_test"] for info, _ in sections])
    contexts = sum(int((tm.arrays["node_depth"] >= 2).sum()) for tm in maps)
    require_keys(contexts, plan.stats, header["tokens"], min(info["min_count"] for info, _ in sections))
    if plan.progress:
        plan.progress("save", 0)
    size = mapfile.write_map_set(plan.output, header, sections)
    return plan.result(size, header, maps)


def summed_tests(tests: Sequence[dict]) -> dict:
    """The sections' :func:`tokenmap.build.selftest.self_test` counts added up (each task on its own map)."""
    total = {k: sum(t[k] for t in tests) for k in ("tokens", "passes", "drafts", "drafted", "accepted", "utterances")}
    total["acceptance"] = round(total["accepted"] / total["drafted"], 4) if total["drafted"] else 0.0
    total["tokens_per_pass"] = round(total["tokens"] / total["passes"], 4) if total["passes"] else 0.0
    return total
