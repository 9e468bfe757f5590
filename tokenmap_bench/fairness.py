"""Offline fairness measurement of token maps across tasks (domain x language), no audio.

For every task (maintenance, incar x en/es/fr; telephony en/es/fr) the
task's held-out ``corpora/<domain>/<lang>/test.txt`` sentences are tokenized
as Whisper emits them (leading space, no special tokens) and stand in for
the model's greedy output.  The decoder's own map drafter
(:func:`tokenmap.decode.drafters.map_drafter`, which cuts its drafts on the cost
curve and learns from what is accepted) is replayed on them: after every pass it
is asked for a draft, the agreeing prefix plus one model token is kept, and the
decoder time is estimated with the cost model::

    greedy  = prefill + (n + 1) * step                 # n text tokens + end-of-text
    drafted = prefill + sum(batch(L + 1) if L else step over passes) + step
    S = sum greedy / sum drafted                        # per task, summed over utterances

with ``prefill`` = 65 ms and ``SENTENCES`` test sentences per utterance
(the benchmark's dictation utterances join several sentences).  ``D_T`` is
:func:`tokenmap.balance.divergence.cross_entropy` on the same tokens and ``U`` is
Definition 1 over the tasks.  Map configurations:

* ``per-task``: one map per domain/lang (what ``tokenmap bench`` uses today);
* ``per-lang``: one map per language (all its domains);
* ``multi``: one plain map over every corpus (``tokenmap build`` of all of them);
* ``balanced``: ``tokenmap build --balance`` over every corpus: a map set, replayed here
  with each task's own section (the task known; ``map_inference.py`` replays the
  decoder inferring it).

With ``--greedy RESULTS_JSON`` the replay runs instead on the model's own
greedy output of a ``tokenmap bench`` run (its results.json, cut into
segments at the timestamps, one prefill per utterance) with that run's
cached maps (``--bench-maps``, default results/maps): the same measurement
on what the decoder really sees on audio, free of timing noise (the
window gate is not replayed, so a task whose drafts lose still drafts).

Usage::

    python -m tokenmap_bench.fairness --out results/fairness        # ~1 minute on 2 cores
    python -m tokenmap_bench.fairness --greedy results/<run>/results.json --out /tmp/fair-audio
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Sequence

from tokenmap.balance.budget import Budget
from tokenmap.balance.divergence import cross_entropy, split_dev
from tokenmap.balance.sections import build_balanced
from tokenmap.build.builder import BuildOptions, build_map
from tokenmap.decode.cost import DEFAULT, CostModel
from tokenmap.decode.drafters import map_drafter
from tokenmap.decode.special import SpecialTokens
from tokenmap.maps.mapfile import load_maps
from tokenmap.maps.suffixmap import TokenMap
from tokenmap.models import resolve_model
from tokenmap.textok import TextTokenizer
from tokenmap_bench.machine import checkout_root
from tokenmap_bench.metrics import spearman, unfairness

ROOT = checkout_root()

TASKS = [(d, lang) for d in ("maintenance", "incar") for lang in ("en", "es", "fr")] + \
        [("telephony", lang) for lang in ("en", "es", "fr")]
PREFILL_MS = 65.0
SENTENCES = 5
CONFIGS = ("per-task", "per-lang", "multi", "balanced")


MAX_DRAFT = 64


def draft_passes(drafter, ids):
    """Replay greedy drafting over one token sequence, as if the model emitted it: at each position
    ask ``drafter.draft(emitted, MAX_DRAFT)`` (the decoder's drafter interface), keep the agreeing
    prefix and one model token, and tell the drafter what was kept; yields ``(draft length, draft
    tokens accepted)`` per decoder pass."""
    drafter.reset(())
    emitted: list[int] = []
    while len(emitted) < len(ids):
        i = len(emitted)
        d = list(drafter.draft(emitted, MAX_DRAFT))
        a = 0
        while a < len(d) and i + a < len(ids) and d[a] == ids[i + a]:
            a += 1
        if d:
            drafter.update(len(d), a)
        yield len(d), a
        emitted.extend(ids[i:i + min(a + 1, len(ids) - i)])


def drafter_of(tm: TokenMap, special: SpecialTokens, cost: CostModel):
    """The decoder's drafter of one map, as :func:`replay` asks it."""
    return map_drafter(tm, special, cost)


def replay(drafter, seqs: list[list[int]], cost: CostModel, per_utt: int = SENTENCES,
           prefill: float = PREFILL_MS, starts: set | None = None) -> dict:
    """Drafting by ``drafter`` (e.g. :func:`drafter_of` a map) replayed over ``seqs``: counts,
    acceptance and the cost-model speed-up.

    A prefill is paid every ``per_utt`` sequences, or at the indexes in ``starts`` when given."""
    greedy = spec = 0.0
    drafts = drafted = accepted = passes = tokens = 0
    for k, ids in enumerate(seqs):
        if (k in starts) if starts is not None else (k % per_utt == 0):
            greedy += prefill + cost.step_ms  # + end-of-text step
            spec += prefill + cost.step_ms
        for n, a in draft_passes(drafter, ids):
            drafts += n > 0
            drafted += n
            accepted += a
            spec += cost.batch(n + 1) if n else cost.step_ms
            passes += 1
        tokens += len(ids)
        greedy += len(ids) * cost.step_ms
    return {"tokens": tokens, "passes": passes, "drafts": drafts, "drafted": drafted, "accepted": accepted,
            "A_r": accepted / drafted if drafted else math.nan, "A_l": accepted / drafts if drafts else math.nan,
            "S": greedy / spec if spec else math.nan}


def split_corpora(out: Path, split: str) -> tuple[dict, dict]:
    """``({task: training file}, {task: evaluation lines})`` for ``split``.

    ``test``: the corpora's train.txt / test.txt.  ``dev``: train.txt split as
    :func:`tokenmap.balance.divergence.split_dev` does (every 10th line is dev), the rest
    written to ``out/split-dev/<domain>/<lang>/train.txt``; choices tuned on
    ``dev`` never see a test sentence.
    """
    def lines(path):
        return [x.strip() for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]

    src = {t: ROOT / "corpora" / t[0] / t[1] for t in TASKS}
    if split == "test":
        return {t: src[t] / "train.txt" for t in TASKS}, {t: lines(src[t] / "test.txt") for t in TASKS}
    files, evals = {}, {}
    for t in TASKS:
        train, dev = split_dev(lines(src[t] / "train.txt"))
        files[t] = out / "split-dev" / t[0] / t[1] / "train.txt"
        files[t].parent.mkdir(parents=True, exist_ok=True)
        files[t].write_text("\n".join(train) + "\n", encoding="utf-8")
        evals[t] = dev
    return files, evals


def parse_variant(spec: str) -> tuple[str, dict]:
    """``name=min_count,teacher[@protect]`` -> (name, build_balanced kwargs)."""
    name, _, rest = spec.partition("=")
    budget, _, protect = rest.partition("@")
    mc, teacher = budget.split(",")
    kw = {"generous": Budget(int(mc), int(teacher))}
    if protect:
        kw["protect"] = float(protect)
    return name, kw


def build_maps(out: Path, tok, model: str, corpus: dict, variants: Sequence[str] = ()) -> dict:
    """``{config: {task: map path}}`` (built once into ``out/maps``; delete the folder to rebuild)."""
    maps = out / "maps"
    maps.mkdir(parents=True, exist_ok=True)
    opts = BuildOptions(jobs=1)

    def make(name, files, balanced=False, **kw):
        path = maps / f"{name}.tmap"
        if not path.is_file():
            fn = build_balanced if balanced else build_map
            fn([str(f) for f in files], path, model=model, tokenizer=tok, options=opts, force=True, **kw)
        return path

    out_maps = {"per-task": {t: make(f"{t[0]}-{t[1]}", [corpus[t]]) for t in TASKS}}
    langs = sorted({t[1] for t in TASKS})
    per_lang = {lang: make(f"lang-{lang}", [corpus[t] for t in TASKS if t[1] == lang]) for lang in langs}
    out_maps["per-lang"] = {t: per_lang[t[1]] for t in TASKS}
    out_maps["multi"] = dict.fromkeys(TASKS, make("multi", corpus.values()))
    out_maps["balanced"] = dict.fromkeys(TASKS, make("balanced", corpus.values(), balanced=True))
    for spec in variants:  # maps are cached by name: give a changed variant a new name
        name, kw = parse_variant(spec)
        out_maps[name] = dict.fromkeys(TASKS, make(name, corpus.values(), balanced=True, **kw))
    return out_maps


def task_map(maps: list, task: str) -> TokenMap:
    """The map of ``task`` among ``load_maps``'s result: a set's own section (the task known), else the map."""
    return next((m for m in maps if m.task == task), maps[0])


def measure(maps: dict, tok, cost: CostModel, evals: dict, special: SpecialTokens) -> dict:
    """``{config: {task: replay + D_T}}`` on ``evals`` (``{task: lines}``)."""
    tests = {t: [tok.encode(line) for line in evals[t]] for t in TASKS}
    loaded: dict = {}
    out: dict = {}
    for config, per_task in maps.items():
        out[config] = {}
        for task, path in per_task.items():
            if path not in loaded:
                loaded[path] = load_maps(path)
            tm = task_map(loaded[path], f"{task[0]}/{task[1]}")
            row = replay(drafter_of(tm, special, cost), tests[task], cost)
            row["D_T"] = cross_entropy(tm, tests[task])
            out[config][f"{task[0]}/{task[1]}"] = row
    return out


def greedy_segments(results_json: Path, timestamp_begin: int, skip_ids=frozenset()) -> dict:
    """``{task: (segment texts, indexes of each utterance's first segment)}`` from the greedy
    rows of a ``tokenmap bench`` results.json: the model's own output on the bench audio, cut
    at timestamps as the decoder's map drafter sees it (utterances in ``skip_ids`` left out)."""
    rows = json.loads(results_json.read_text(encoding="utf-8"))["rows"]
    out: dict = {}
    for r in rows:
        if r["system"] != "greedy" or r["kind"] != "decoder" or r.get("id") in skip_ids:
            continue
        segs, starts = out.setdefault(r["task"], ([], set()))
        starts.add(len(segs))
        cur: list = []
        for t in [*r["token_ids"], timestamp_begin]:
            if t < timestamp_begin:
                cur.append(t)
            elif cur:
                segs.append(cur)
                cur = []
    return out


def measure_greedy(maps_dir: Path, results_json: Path, cost: CostModel, special: SpecialTokens,
                   variants: Sequence[str] = (), out: Path | None = None, model: str = "base") -> dict:
    """:func:`measure` on a bench run's greedy outputs with that run's cached maps
    (``<task>.tmap``, ``multi-<N>tasks.tmap``, ``balanced-<N>tasks.tmap``), plus a balanced
    map over the same tasks' corpora for each of ``variants`` (built into ``out/maps``)."""
    evals = greedy_segments(results_json, special.timestamp_begin)
    shared = {m: sorted(maps_dir.glob(f"{m}-*tasks.tmap")) for m in ("multi", "balanced")}
    maps = {"per-task": {t: maps_dir / f"{t.replace('/', '-')}.tmap" for t in evals}}
    maps.update({m: dict.fromkeys(evals, paths[-1]) for m, paths in shared.items() if paths})
    corpus = [c for c in (ROOT / "corpora" / t / "train.txt" for t in sorted(evals)) if c.is_file()]
    for spec in variants:  # cached by name, as in build_maps
        name, kw = parse_variant(spec)
        path = out / "maps" / f"greedy-{name}.tmap"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            build_balanced([str(c) for c in corpus], path, model=model, options=BuildOptions(jobs=1), force=True, **kw)
        maps[name] = dict.fromkeys(evals, path)
    out: dict = {}
    for config, per_task in maps.items():
        out[config] = {}
        for task, path in per_task.items():
            tm = task_map(load_maps(path), task)
            segs, starts = evals[task]
            row = replay(drafter_of(tm, special, cost), segs, cost, starts=starts)
            row["D_T"] = cross_entropy(tm, segs)
            out[config][task] = row
    return out


def summary(results: dict, fastest: str) -> dict:
    """Per config: U, spread/mean of S, the ``fastest`` task's S and A_r, rank correlation of D_T with S."""
    out = {}
    for config, rows in results.items():
        s = {t: r["S"] for t, r in rows.items()}
        d = {t: r["D_T"] for t, r in rows.items()}
        out[config] = {"U": unfairness(d), "S_mean": statistics.fmean(s.values()),
                       "S_min": min(s.values()), "S_max": max(s.values()),
                       "S_spread": max(s.values()) - min(s.values()), "S_std": statistics.pstdev(s.values()),
                       "S_fastest": s[fastest], "A_r_fastest": rows[fastest]["A_r"],
                       "rho_D_S": spearman([d[t] for t in rows], [s[t] for t in rows])}
    return out


def markdown(results: dict, summ: dict, fastest: str) -> str:
    lines = ["| map | U (nats²) | mean S | min S | max S | spread S (max-min) | std S | "
             f"S of {fastest} | A_r of {fastest} | Spearman(D_T, S) |", "|" + "---|" * 10]
    for c, v in summ.items():
        lines.append(f"| {c} | {v['U']:.3f} | {v['S_mean']:.3f} | {v['S_min']:.3f} | {v['S_max']:.3f} | "
                     f"{v['S_spread']:.3f} | {v['S_std']:.3f} | {v['S_fastest']:.3f} | "
                     f"{v['A_r_fastest']:.1%} | {v['rho_D_S']:.2f} |")
    lines += ["", "| task | " + " | ".join(f"{c} S / A_r / A_l / D_T" for c in results) + " |",
              "|" + "---|" * (len(results) + 1)]
    for task in next(iter(results.values())):
        cells = [f"{r[task]['S']:.3f} / {r[task]['A_r']:.0%} / {r[task]['A_l']:.2f} / {r[task]['D_T']:.2f}"
                 for r in results.values()]
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(next(iter(results.values())))
    fig, ax = plt.subplots(figsize=(11, 4.2))
    width = 0.8 / len(results)
    for k, (config, rows) in enumerate(results.items()):
        ax.bar([i + k * width for i in range(len(tasks))], [rows[t]["S"] for t in tasks], width, label=config)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(tasks))], tasks, rotation=30, ha="right")
    ax.set_ylabel("decoder speed-up S (cost model)")
    ax.set_title("Speed-up per task: per-task, per-language, one multi-task map, balanced multi-task map")
    ax.legend(ncol=len(results), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "fairness")
    ap.add_argument("--model", default="base")
    ap.add_argument("--split", choices=("test", "dev"), default="test",
                    help="evaluate on the held-out test sentences, or on a dev split of the training corpora")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=MIN_COUNT,TEACHER[@PROTECT]",
                    help="also a balanced map with this worst-task budget (and protection threshold)")
    ap.add_argument("--greedy", type=Path, metavar="RESULTS_JSON",
                    help="instead of sentences, replay on the greedy outputs of a `tokenmap bench` run "
                         "(its results.json) with that run's maps (--bench-maps)")
    ap.add_argument("--bench-maps", type=Path, default=ROOT / "results" / "maps")
    args = ap.parse_args(argv)
    tok = TextTokenizer.from_model(args.model)
    special = SpecialTokens.from_model_dir(str(resolve_model(args.model)))
    args.out.mkdir(parents=True, exist_ok=True)
    if args.greedy:
        cost = CostModel.from_json(json.loads(args.greedy.read_text(encoding="utf-8"))["cost_model"])
        results = measure_greedy(args.bench_maps, args.greedy, cost, special, args.variant, args.out, args.model)
    else:
        corpus, evals = split_corpora(args.out, args.split)
        maps = build_maps(args.out, tok, args.model, corpus, args.variant)
        results = measure(maps, tok, DEFAULT, evals, special)
    shared = results.get("multi", results["per-task"])  # a run without a shared map: its per-task maps
    fastest = max(shared, key=lambda t: shared[t]["S"])
    summ = summary(results, fastest)
    text = markdown(results, summ, fastest)
    plot(results, args.out / "fairness_S.png")
    (args.out / "fairness.json").write_text(json.dumps({"results": results, "summary": summ, "fastest": fastest},
                                                       indent=1) + "\n", encoding="utf-8")
    (args.out / "fairness.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    print(f"\nwrote {args.out}/fairness.md, fairness.json, fairness_S.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
