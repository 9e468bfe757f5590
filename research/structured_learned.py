"""Does a structured task's map that learned the model's wording from other audio of the domain draft better?

    python research/structured_learned.py results/<run>/results.json bench-data/teacher-structured.jsonl

The teacher file holds the model's greedy transcripts of *other* recordings of the domain
(``bench-data/dev-structured.jsonl``, decoded by ``tokenmap bench --systems greedy``, turned
into lines by ``benchmarks/teacher_texts.py``, which drops any utterance sharing a sentence
with the measured sets). Per structured task of the run (voice-bound tasks left out as in the
report), this builds the task's map from its corpus plus those lines (``ensure_map``, as
``tokenmap-learned`` is built for the scripted tasks) and replays, without the model, the run's
own map and the learned one on the run's greedy token streams, as ``research/replay_bench.py``
does (window gate included; time from the run's greedy fit). Prints replayed S per task.
"""
import argparse
import collections
import json
from pathlib import Path

from replay_bench import load_run, replay_utterance

from tokenmap import load_maps, resolve_model
from tokenmap.decode.control import ControllerSet
from tokenmap_bench import ensure_map

ROOT = Path(__file__).resolve().parents[1]


def replay_task(rows, token_map, cost, special, reps, scale, prefill):
    """(modelled ms, greedy ms) summed over ``rows`` with one controller set, as one bench task keeps them."""
    ctl = ControllerSet(cost)
    total = greedy_total = 0.0
    for g in rows:
        median_ms, greedy_ms = replay_utterance(ctl, token_map, g, cost, special, reps)
        total += median_ms * scale + prefill
        greedy_total += greedy_ms * scale + prefill
    return total, greedy_total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("teacher")
    ap.add_argument("--cache", default="/tmp/structured-learned")
    args = ap.parse_args()
    ctx = load_run(Path(args.results))
    run, cost, fixed, scale, special = ctx.run, ctx.cost, ctx.fixed, ctx.scale, ctx.special
    model = run["options"]["model"]
    by_task = collections.defaultdict(list)
    for r in ctx.greedy.values():
        if r["regime"] == "structured" and r["task"] not in ctx.bound:
            by_task[(r["domain"], r["lang"])].append(r)
    lines = collections.defaultdict(list)
    for line in Path(args.teacher).read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        lines[(rec["domain"], rec["lang"])].append(rec["text"])
    where = ctx.where
    cache = Path(args.cache)
    sums = collections.defaultdict(float)
    print(f"{'task':16s} {'n':>3s} {'teacher lines':>13s} {'S own map':>9s} {'S learned':>9s}")
    for (domain, lang), rows in sorted(by_task.items()):
        if (domain, lang) not in lines:
            continue
        part = cache / "teacher" / f"{domain}-{lang}.txt"
        part.parent.mkdir(parents=True, exist_ok=True)
        part.write_text("\n".join(lines[(domain, lang)]) + "\n", encoding="utf-8")
        learned = load_maps(ensure_map(ROOT / "corpora", domain, lang, cache, str(resolve_model(model, download=False)),
                                       teacher=part, name="learned-"))[0]
        own = load_maps(where / run["maps"][f"{domain}/{lang}"])[0]
        reps = run["options"]["reps"]
        t_own, t_greedy = replay_task(rows, own, cost, special, reps, scale, fixed)
        t_learned, _ = replay_task(rows, learned, cost, special, reps, scale, fixed)
        sums["own"] += t_own
        sums["learned"] += t_learned
        sums["greedy"] += t_greedy
        print(f"{domain + '/' + lang:16s} {len(rows):3d} {len(lines[(domain, lang)]):13d} "
              f"{t_greedy / t_own:9.3f} {t_greedy / t_learned:9.3f}")
    print(f"{'structured':16s} {'':3s} {'':13s} {sums['greedy'] / sums['own']:9.3f} "
          f"{sums['greedy'] / sums['learned']:9.3f}")


if __name__ == "__main__":
    main()
