"""``tokenmap build --balance``: a map set, one token map per task, with the budget shared fairly.

A task is a corpus ``domain/lang``.  :func:`build_balanced` reads the corpora by task, measures
each task's ``D_T`` (on a dev split of its training lines, or on the model's own transcripts:
:mod:`tokenmap.balance.divergence`), gives each task its budget
(:func:`tokenmap.balance.budget.allocate`) and writes each task's map, built with its own budget
(its teacher lines included), as the sections of one file
(:func:`tokenmap.maps.mapfile.write_map_set`).  The decoder drafts from the section whose recent
proposals the model accepted (:class:`tokenmap.decode.drafters.MapSetDrafter`), so a thin task's
extra budget never drafts on the fastest task's text, whose section is exactly its default-budget map.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from tokenmap.balance.budget import (
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
from tokenmap.balance.divergence import (
    DEV_EVERY,
    build_task_map,
    dev_divergence,
    encode_stream,
    teacher_divergence,
    with_teacher,
)
from tokenmap.build.builder import (
    BuildOptions,
    BuildResult,
    build_result,
    make_header,
    require_keys,
    resolve_inputs,
    self_test,
    split_utterances,
)
from tokenmap.build.corpus import CorpusStats, check_nonempty, read_corpus
from tokenmap.maps import mapfile
from tokenmap.maps.schema import stream_markers

log = logging.getLogger("tokenmap")


def read_tasks(corpus, options, stats) -> dict[str, list[str]]:
    """``{task: [texts]}`` in corpus order; a line's task is its ``domain/lang`` (:mod:`tokenmap.build.corpus`)."""
    tasks: dict[str, list[str]] = {}
    for utt in read_corpus(corpus, text_column=options.text_column, stats=stats):
        tasks.setdefault(task_name(utt.domain, utt.lang), []).append(utt.text)
    check_nonempty(stats)
    return tasks


def check_teacher_tasks(corpus_tasks, teacher_tasks: Mapping[str, list]) -> None:
    """Warn about teacher tasks without a corpus (ignored) and corpus tasks without teacher lines
    (their ``D_T`` is unknown, so they keep the default budget)."""
    extra = sorted(set(teacher_tasks) - set(corpus_tasks))
    if extra:
        log.warning("teacher lines of %s ignored: no corpus for %s", ", ".join(extra),
                    "it" if len(extra) == 1 else "them")
    missing = sorted(set(corpus_tasks) - set(teacher_tasks))
    if missing:
        log.warning("no teacher lines for %s: D_T unknown, default budget", ", ".join(missing))


def build_balanced(corpus: Sequence, output, *, model: str = "base", tokenizer=None, options=None,
                   force: bool = False, progress=None, teacher: Sequence = ()) -> BuildResult:
    """Build the map set ``output`` (module docstring); arguments as :func:`tokenmap.build.builder.build_map`.

    ``teacher``: files of the model's transcripts, on which ``D_T`` is then measured; ``options.generous``
    (default :data:`GENEROUS`): the worst task's budget; tasks with ``w_T <= options.protect`` (default
    :data:`PROTECT`) keep the default one.  The header gets a ``balance`` section with every task's ``D_T``,
    ``w_T`` and budget.
    """
    started = time.perf_counter()
    options = options or BuildOptions()
    generous = GENEROUS if options.generous is None else options.generous
    protect = PROTECT if options.protect is None else options.protect
    output = Path(output)
    progress = progress or (lambda stage, count: None)
    tokenizer, cost = resolve_inputs(output, force, model, tokenizer, options.cost, (*corpus, *teacher))
    vocab, stats = tokenizer.vocab_size, CorpusStats()
    tasks = read_tasks(corpus, options, stats)
    taught = read_tasks(teacher, options, CorpusStats()) if teacher else {}
    if teacher:
        check_teacher_tasks(tasks, taught)
    progress("load", stats.utterances)
    streams = {task: encode_stream(texts, tokenizer, options) for task, texts in tasks.items()}
    teacher_streams = {t: encode_stream(texts, tokenizer, options) for t, texts in taught.items() if t in tasks}
    divergence, dev_tokens, default_maps = {}, {}, {}
    for task, stream in streams.items():
        if teacher:
            divergence[task], dev_tokens[task], tm = teacher_divergence(stream, teacher_streams.get(task), options,
                                                                        vocab)
            if tm is not None:  # the task's default-budget map on all of its corpus: a section to reuse
                default_maps[task] = tm
        else:
            divergence[task], dev_tokens[task] = dev_divergence(stream, options, vocab)
    default = Budget.of(options)
    budgets = allocate(divergence, default, generous, protect)
    progress("count", 0)
    sections, maps = [], []
    for task in sorted(tasks):
        tm = default_maps.get(task) if budgets[task] == default else None
        if tm is None:
            stream = with_teacher(streams[task], teacher_streams.get(task), budgets[task].teacher)
            tm = build_task_map(stream, budgets[task], options, vocab)
        test = self_test(tm, split_utterances(streams[task], stream_markers(vocab)[1], 200), cost)
        sections.append(({"task": task, "lines": len(tasks[task]), "D_T": rounded(divergence[task]),
                          "min_count": tm.header["min_count"], "budget": asdict(budgets[task]), "self_test": test},
                         tm.arrays))
        maps.append(tm)
    header = make_header(tokenizer, model, options, stats, cost,
                         sum(len(s) for s in streams.values()) - 2 * stats.utterances)
    w = shares(divergence)
    header["balance"] = {
        "rule": "setting = default + w_T * (generous - default), w_T = (D_T - D_min) / (D_max - D_min)",
        "divergence": "cross-entropy of the map's next-token distribution on "
                      + ("the model's greedy transcripts (teacher lines)" if taught else
                         f"every {DEV_EVERY}th training line") + " (nats/token, tokenmap.balance.divergence)",
        "best": best_task(divergence), "protected": protected_tasks(divergence, protect), "protect": protect,
        "default": asdict(default), "generous": asdict(generous),
        "tasks": {t: {"D_T": rounded(divergence[t]), "w": round(w.get(t, 0.0), 4), "dev_tokens": dev_tokens[t],
                      "lines": len(tasks[t]), "teacher_lines": len(taught.get(t, ())), **asdict(budgets[t])}
                  for t in sorted(tasks)},
    }
    header["self_test"] = summed_tests([info["self_test"] for info, _ in sections])
    contexts = sum(int((tm.arrays["node_depth"] >= 2).sum()) for tm in maps)
    require_keys(contexts, stats, header["tokens"], min(info["min_count"] for info, _ in sections))
    progress("save", 0)
    size = mapfile.write_map_set(output, header, sections)
    result = build_result(output, size, stats, header, maps, options.depth, started, cost)
    log.info("built balanced %s: %d tasks (best %s), %d contexts", output, len(tasks), best_task(divergence),
             result.contexts)
    return result


def summed_tests(tests: Sequence[dict]) -> dict:
    """The sections' :func:`tokenmap.build.builder.self_test` counts added up (each task on its own map)."""
    total = {k: sum(t[k] for t in tests) for k in ("tokens", "passes", "drafts", "drafted", "accepted", "utterances")}
    total["acceptance"] = round(total["accepted"] / total["drafted"], 4) if total["drafted"] else 0.0
    total["tokens_per_pass"] = round(total["tokens"] / total["passes"], 4) if total["passes"] else 0.0
    return total
