"""The plan of a balanced build: the tasks, their ``D_T`` and their budgets.

A task is a corpus ``domain/lang``.  :func:`plan_balance` reads the corpora by
task, measures each task's excess divergence ``D_T`` (on a dev split of its
training lines, :mod:`tokenmap.balance.streams`, or on the model's own
transcripts, :mod:`tokenmap.balance.teacher`) and gives each task its budget
(:func:`tokenmap.balance.budget.allocate`).  The plan is then written as a map
set (:mod:`tokenmap.balance.sections`): one token map per task, built with
that task's budget.  The decoder drafts from the section whose recent
proposals the model accepted (:class:`tokenmap.decode.drafters.MapSetDrafter`),
so a thin task's extra budget never drafts on the fastest task's text, whose
section is exactly its default-budget map.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from tokenmap.balance.budget import (
    DEFAULT_BUDGET,
    GENEROUS,
    PROTECT,
    Budget,
    allocate,
    best_task,
    protected_tasks,
    rounded,
    shares,
    task_name,
)
from tokenmap.balance.streams import DEV_EVERY, dev_divergence, encode_stream
from tokenmap.balance.teacher import check_teacher_tasks, teacher_divergence
from tokenmap.build.builder import BuildError, BuildOptions, BuildResult, resolve_inputs
from tokenmap.build.corpus import CorpusStats, check_nonempty, read_corpus
from tokenmap.build.selftest import sample_utterances, self_test
from tokenmap.decode.cost import CostModel
from tokenmap.maps.schema import stream_markers
from tokenmap.maps.suffixmap import TokenMap

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
    """The tasks, their ``D_T`` (dev split or teacher lines), ``w_T`` and budgets."""

    output: Path
    model: str
    tokenizer: object
    options: object
    cost: CostModel
    progress: object
    tasks: dict = field(default_factory=dict)  # task -> [texts]
    teacher: dict = field(default_factory=dict)  # task -> [teacher transcripts] (tokenmap.balance.teacher)
    default_maps: dict = field(default_factory=dict)  # task -> default-budget map built for its D_T
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

    def header(self) -> dict:
        """The header's ``balance`` section: the rule, every task's ``D_T``, ``w_T`` and budget."""
        w = shares(self.divergence)
        return {
            "rule": "setting = default + w_T * (generous - default), w_T = (D_T - D_min) / (D_max - D_min)",
            "divergence": "cross-entropy of the map's next-token distribution on "
                          + ("the model's greedy transcripts (teacher lines)" if self.teacher else
                             f"every {DEV_EVERY}th training line") + " (nats/token, tokenmap.balance.divergence)",
            "best": self.best, "protected": self.protected, "protect": self.protect,
            "default": asdict(self.default), "generous": asdict(self.generous),
            "tasks": {t: {"D_T": rounded(self.divergence[t]), "w": round(w.get(t, 0.0), 4),
                          "dev_tokens": self.dev_tokens[t], "lines": len(self.tasks[t]),
                          "teacher_lines": len(self.teacher.get(t, ())), **asdict(self.budgets[t])}
                      for t in sorted(self.tasks)},
        }

    def self_test(self, tm: TokenMap, stream: np.ndarray) -> dict:
        """:func:`tokenmap.build.selftest.self_test` of a task's map on up to 200 utterances of its stream."""
        return self_test(tm, sample_utterances(stream, self.sep, 200), self.cost)

    def result(self, size: int, header: dict, maps: Sequence[TokenMap]):
        """The :class:`tokenmap.build.builder.BuildResult` of the written file (counts summed over ``maps``)."""
        if not size:
            raise BuildError(f"{self.output}: nothing written")
        depth = self.options.depth
        per_length = np.sum([np.bincount(m.arrays["node_depth"], minlength=depth + 1)[1:] for m in maps], axis=0)
        continued = sum(int(np.count_nonzero(m.arrays["node_best"] >= 0)) for m in maps)
        result = BuildResult(str(self.output), size, self.stats.utterances, dict(self.stats.skipped),
                             int(header["tokens"]), sum(m.num_nodes for m in maps), continued,
                             tuple(int(x) for x in per_length), round(time.perf_counter() - self.started, 3),
                             self.cost.source, header["self_test"])
        log.info("built balanced %s: %d tasks (best %s), %d contexts", self.output, len(self.tasks), self.best,
                 result.contexts)
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
            d_t, n, tm = teacher_divergence(stream, plan.teacher_streams.get(task), options, tokenizer.vocab_size)
            if tm is not None:  # the task's default-budget map on all of its corpus: a section to reuse
                plan.default_maps[task] = tm
        else:
            d_t, n = dev_divergence(stream, options, tokenizer.vocab_size)
        plan.divergence[task], plan.dev_tokens[task] = d_t, n
    plan.budgets = allocate(plan.divergence, plan.default, generous, protect)
    return plan
