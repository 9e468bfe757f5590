"""The plan of a balanced build: the tasks, their ``D_T`` and their budgets.

A task is a corpus ``domain/lang``.  :func:`plan_balance` reads the corpora by
task, measures each task's excess divergence ``D_T`` (on a dev split of its
training lines, :mod:`tokenmap.balance.streams`, or on the model's own
transcripts, :mod:`tokenmap.balance.teacher`) and gives each task its budget
(:func:`tokenmap.balance.budget.allocate`).  The plan is then written as a map
set or one merged map (:mod:`tokenmap.balance.sections`).

:func:`build_balanced` (``tokenmap build --balance``) writes a **map set**
(:func:`tokenmap.maps.mapfile.write_map_set`): one section per task, counted and
pruned with that task's budget.  The decoder drafts from the section whose
recent proposals the model accepted (:class:`tokenmap.decode.drafters.MapSetDrafter`),
so a thin task's extra budget never drafts on the fastest task's text, whose
section is exactly its default-budget map.  ``layout="merged"`` writes the
budgets into one map instead (:mod:`tokenmap.balance.merged`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from tokenmap.balance.budget import (DEFAULT_BUDGET, GENEROUS, PROTECT, Budget, allocate, best_task, protected_tasks,
                                     rounded, shares, task_name)
from tokenmap.balance.streams import DEV_EVERY, dev_divergence, encode_stream, stream_sequences
from tokenmap.balance.teacher import check_teacher_tasks, teacher_divergence
from tokenmap.build.builder import BuildError, BuildOptions, BuildResult, resolve_inputs
from tokenmap.build.corpus import CorpusStats, check_nonempty, read_corpus
from tokenmap.build.selftest import simulate
from tokenmap.decode.cost import CostModel
from tokenmap.maps import mapfile
from tokenmap.maps.schema import stream_markers

log = logging.getLogger("tokenmap")


# -- the build -------------------------------------------------------------------
def read_tasks(corpus, options, stats) -> dict[str, list[str]]:
    """``{task: [texts]}`` in corpus order; a line's task is its ``domain/lang`` (:mod:`tokenmap.build.corpus`)."""
    tasks: dict[str, list[str]] = {}
    for utt in read_corpus(corpus, text_column=options.text_column, stats=stats):
        tasks.setdefault(task_name(utt.domain, utt.lang), []).append(utt.text)
    check_nonempty(stats)
    return tasks


@dataclass
class BalancePlan:
    """What both layouts share: the tasks, their ``D_T`` (dev split or teacher lines), ``w_T`` and budgets."""

    output: Path
    model: str
    tokenizer: object
    options: object
    cost: CostModel
    progress: object
    tasks: dict = field(default_factory=dict)  # task -> [texts]
    teacher: dict = field(default_factory=dict)  # task -> [teacher transcripts] (tokenmap.balance.teacher)
    default_arrays: dict = field(default_factory=dict)  # task -> default-budget arrays built for its D_T
    stats: object = None
    divergence: dict = field(default_factory=dict)
    dev_tokens: dict = field(default_factory=dict)
    budgets: dict = field(default_factory=dict)
    default: Budget = DEFAULT_BUDGET
    generous: Budget = GENEROUS
    protect: float = PROTECT
    started: float = 0.0

    @property
    def bos(self) -> int:
        return stream_markers(self.tokenizer.vocab_size)[0]

    @property
    def sep(self) -> int:
        return stream_markers(self.tokenizer.vocab_size)[1]

    @property
    def best(self) -> str | None:
        return best_task(self.divergence)

    @property
    def protected(self) -> list[str]:
        return protected_tasks(self.divergence, self.protect)

    @cached_property
    def streams(self) -> dict[str, np.ndarray]:
        """``{task: BOS ids SEP ... stream}`` (tokenized once, for D_T and for the build)."""
        return {task: encode_stream(texts, self.tokenizer, self.options) for task, texts in self.tasks.items()}

    @cached_property
    def teacher_streams(self) -> dict[str, np.ndarray]:
        """``{task: BOS ids SEP ... stream}`` of the teacher transcripts of the corpus tasks."""
        return {task: encode_stream(texts, self.tokenizer, self.options)
                for task, texts in self.teacher.items() if task in self.tasks}

    def n_tokens(self, streams: Mapping[str, np.ndarray]) -> int:
        return sum(len(s) for s in streams.values()) - 2 * self.stats.utterances

    def header(self, layout: str) -> dict:
        """The header's ``balance`` section: the rule, every task's ``D_T``, ``w_T`` and budget."""
        w = shares(self.divergence)
        return {
            "layout": layout,
            "rule": "setting = default + w_T * (generous - default), w_T = (D_T - D_min) / (D_max - D_min)",
            # the module is named as it was when maps began to record this text, so maps stay byte-identical
            "divergence": "cross-entropy of the map's next-token distribution on "
                          + ("the model's greedy transcripts (teacher lines)" if self.teacher else
                             f"every {DEV_EVERY}th training line") + " (nats/token, tokenmap.divergence)",
            "best": self.best, "protected": self.protected, "protect": self.protect,
            "default": asdict(self.default), "generous": asdict(self.generous),
            "tasks": {t: {"D_T": rounded(self.divergence[t]), "w": round(w.get(t, 0.0), 4),
                          "dev_tokens": self.dev_tokens[t], "lines": len(self.tasks[t]),
                          "teacher_lines": len(self.teacher.get(t, ())), **asdict(self.budgets[t])}
                      for t in sorted(self.tasks)},
        }

    def self_test(self, tm, streams) -> dict:
        """:func:`tokenmap.build.selftest.simulate` on up to 200 utterances of each stream."""
        sample = [s for stream in streams for s in stream_sequences(stream[:200_000], self.bos, self.sep)[:200]]
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in simulate(tm, sample).items()}

    def result(self, size: int, header: dict, maps: Sequence[mapfile.TokenMap]):
        """The :class:`tokenmap.build.builder.BuildResult` of the written file (key counts summed over ``maps``)."""
        if not size:
            raise BuildError(f"{self.output}: nothing written")
        per_order = np.sum([m.keys_per_order() for m in maps], axis=0).astype(int).tolist()
        result = BuildResult(str(self.output), size, self.stats.utterances, dict(self.stats.skipped),
                             int(header["tokens"]), sum(m.num_keys for m in maps), sum(m.num_candidates for m in maps),
                             tuple(per_order), round(time.perf_counter() - self.started, 3), self.cost.source,
                             header["self_test"])
        log.info("built balanced %s: %d tasks (best %s), %d keys, %d candidates", self.output, len(self.tasks),
                 self.best, result.keys, result.candidates)
        return result


def plan_balance(corpus: Sequence, output, *, model: str = "base", tokenizer=None, options=None,
                 cost: CostModel | None = None, force: bool = False, progress=None,
                 generous: Budget = GENEROUS, protect: float = PROTECT, teacher: Sequence = ()) -> BalancePlan:
    """Load the corpora by task, measure each task's ``D_T`` and allocate the budgets.

    ``D_T`` is measured on each task's dev split, or with ``teacher`` files (the model's transcripts,
    :mod:`tokenmap.balance.teacher`) on those.
    """
    started = time.perf_counter()
    options = options or BuildOptions()
    output = Path(output)
    tokenizer, cost = resolve_inputs(output, force, model, tokenizer, cost, (*corpus, *teacher))
    plan = BalancePlan(output, model, tokenizer, options, cost, progress, stats=CorpusStats(),
                       default=Budget.of(options),
                       generous=generous, protect=protect, started=started)
    plan.tasks = read_tasks(corpus, options, plan.stats)
    if teacher:
        plan.teacher = read_tasks(teacher, options, CorpusStats())
        check_teacher_tasks(plan.tasks, plan.teacher)
    if progress:
        progress("load", plan.stats.utterances)
    for task, stream in plan.streams.items():
        if teacher:
            d_t, n, arrays = teacher_divergence(stream, plan.teacher_streams.get(task), options, cost,
                                                tokenizer.vocab_size)
            if arrays is not None:  # the task's default-budget map on all of its corpus: a section to reuse
                plan.default_arrays[task] = arrays
        else:
            d_t, n = dev_divergence(stream, options, cost, tokenizer.vocab_size)
        plan.divergence[task], plan.dev_tokens[task] = d_t, n
    plan.budgets = allocate(plan.divergence, plan.default, generous, protect)
    return plan
