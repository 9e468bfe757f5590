"""Replay: draft from a *set* of per-task maps and infer the task while decoding.

The decoder's version is :class:`tokenmap.decode.drafters.MapSetDrafter` (bench map mode
``inferred``); this replay scores each proposal against the whole greedy
continuation (the decoder only sees what one pass emits) and gates single maps the
same way, to compare map configurations without timing noise.

A shared map cannot give a thin task more drafts without drafting them on the
fastest task's text too. A set of per-task maps can, if the decoder knows which
map to ask; this replays a drafter that infers it. After every decoder pass the
model's tokens are known, so every map's would-be draft at that position is
scored against them for free (no extra pass): each map keeps a running saving

    score_m <- decay * score_m + (accepted_m * step - (batch(len_m + 1) - step))

and the next draft comes from the map with the highest score, only while that
score is positive. Single maps are replayed with the same gate on their own
score (the analogue of the decoder's acceptance controller), so every row pays
the same rule. Scores start at zero for each utterance.

Input is the greedy output of a ``tokenmap bench`` run (as ``fairness.py
--greedy``) and that run's cached maps::

    python research/map_inference.py results/<run>/results.json [--maps results/maps] [--decay 0.97]
        [--set NAME=PATH ...] [--skip-teacher TEACHER.jsonl]

``--set`` adds map sets to replay (e.g. ``tokenmap build --balance --teacher`` variants);
``--skip-teacher`` leaves out the utterances whose transcripts a teacher file holds
(``teacher_texts.py --half``: choose on one half, score on the other).

Prints one Markdown table: U (Definition 1, D_T = the cross-entropy of the task's map, for a set
of its own section, on its greedy output) and S (cost model) / A_r per task and configuration.
The cached ``balanced-*tasks.tmap`` is the map set of ``tokenmap build --balance``; it is
replayed with the task inferred among its sections.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from tokenmap.balance.divergence import cross_entropy
from tokenmap.decode.cost import CostModel
from tokenmap.maps.mapfile import load_map, load_maps
from tokenmap_bench import PREFILL_MS, greedy_segments, unfairness

ROOT = Path(__file__).resolve().parents[1]


def _agree(draft, ids, i) -> int:
    a = 0
    while a < len(draft) and i + a < len(ids) and draft[a] == ids[i + a]:
        a += 1
    return a


def replay_set(maps: dict, segs: list, starts: set, cost: CostModel, fixed=None, decay: float = 0.97,
               prefill: float = PREFILL_MS) -> dict:
    """Replay drafting from ``maps`` (``{name: map}``) over ``segs`` (token lists; a prefill and
    fresh scores at the indexes in ``starts``). ``fixed``: always ask this map (the task is known);
    None: ask the best-scoring map. A draft is made only while the asked map's score is positive."""
    greedy = spec = 0.0
    drafted = accepted = 0
    score = dict.fromkeys(maps, 0.0)
    for k, ids in enumerate(segs):
        if k in starts:
            greedy += prefill + cost.step_ms
            spec += prefill + cost.step_ms
            score = dict.fromkeys(maps, 0.0)
        ctx, i = [-1], 0  # -1: the segment start
        while i < len(ids):
            props = {name: list(tm.draft(ctx)) for name, tm in maps.items()}
            lead = fixed if fixed is not None else max(score, key=score.get)
            draft = props[lead] if score[lead] > 0 else []
            a = _agree(draft, ids, i)
            spec += cost.batch(len(draft) + 1) if draft else cost.step_ms
            drafted += len(draft)
            accepted += a
            for name, d in props.items():
                saving = cost.saving(_agree(d, ids, i), len(d)) if d else 0.0
                score[name] = decay * score[name] + saving
            step = min(a + 1, len(ids) - i)
            ctx.extend(ids[i:i + step])
            i += step
        greedy += len(ids) * cost.step_ms
    return {"S": greedy / spec if spec else float("nan"), "A_r": accepted / drafted if drafted else 0.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="results.json of a tokenmap bench run")
    ap.add_argument("--maps", type=Path, default=Path(__file__).resolve().parents[1] / "results" / "maps")
    ap.add_argument("--decay", type=float, default=0.97)
    ap.add_argument("--timestamp-begin", type=int, default=50364, help="<|0.00|> of the model (base: 50364)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=PATH", help="also replay this map set")
    ap.add_argument("--skip-teacher", type=Path, action="append", default=[],
                    help="leave out the utterances of this teacher file")
    args = ap.parse_args(argv)
    run = json.loads(args.results.read_text(encoding="utf-8"))
    cost = CostModel.from_json(run["cost_model"])
    skip = {json.loads(line)["id"] for path in args.skip_teacher for line in path.open(encoding="utf-8")}
    evals = greedy_segments(args.results, args.timestamp_begin, skip)
    per_task = {t: load_map(args.maps / f"{t.replace('/', '-')}.tmap") for t in evals}
    shared = {m: sorted(args.maps.glob(f"{m}-*tasks.tmap")) for m in ("multi", "balanced")}
    # name -> (replay of task t, the map whose cross-entropy is task t's D_T)
    configs = {"per-task (task known)": (lambda t: replay_set(per_task, *evals[t], cost, fixed=t, decay=args.decay),
                                         per_task.get),
               "map set, task inferred": (lambda t: replay_set(per_task, *evals[t], cost, decay=args.decay),
                                          per_task.get)}
    for mode, paths in shared.items():
        if paths:
            maps = load_maps(paths[-1])
            if len(maps) > 1:  # a map set (`tokenmap build --balance`): the task inferred among its sections
                sections = {m.task: m for m in maps}
                configs[f"{mode} set ({paths[-1].name}), task inferred"] = (
                    lambda t, s=sections: replay_set(s, *evals[t], cost, decay=args.decay), sections.get)
            else:
                configs[f"{mode} ({paths[-1].name})"] = (
                    lambda t, tm=maps[0]: replay_set({"one": tm}, *evals[t], cost, fixed="one", decay=args.decay),
                    lambda t, tm=maps[0]: tm)
    for spec in args.set:
        name, _, path = spec.partition("=")
        sections = {m.task: m for m in load_maps(Path(path))}
        configs[f"{name} set, task inferred"] = (
            lambda t, s=sections: replay_set(s, *evals[t], cost, decay=args.decay), sections.get)
    tasks = sorted(evals)
    print("| configuration | U (cross-entropy) | mean S | min S | max S | "
          + " | ".join(f"{t} S / A_r" for t in tasks) + " |")
    print("|" + "---|" * (5 + len(tasks)))
    for name, (run_task, task_map) in configs.items():
        rows = {t: run_task(t) for t in tasks}
        u = unfairness({t: cross_entropy(task_map(t), evals[t][0]) for t in tasks})
        s = [rows[t]["S"] for t in tasks]
        cells = " | ".join(f"{rows[t]['S']:.3f} / {rows[t]['A_r']:.0%}" for t in tasks)
        print(f"| {name} | {u:.3f} | {statistics.fmean(s):.3f} | {min(s):.3f} | {max(s):.3f} | {cells} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
