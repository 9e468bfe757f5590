"""Replay a `tokenmap bench` run without the model, and compare its predicted S with the audio S.

    python research/replay_bench.py results/<run>/results.json [--prefill-ms 45] [--reps N]

For each drafting system of the run (tokenmap, tokenmap-learned, tokenmap-mismatch), the
drafter is rebuilt as the bench built it (the run's maps, its cost curve, one ControllerSet per
task, the window's audio length), in manifest order and with the run's repetitions, and
replayed on the greedy token ids the run recorded (:func:`tokenmap.decode.replay.replay_window`). The
window gate is replayed too: a window it sends to plain ``generate`` costs what greedy costs.
Modelled decoder time = a window's fixed cost + its passes on the run's cost curve, where the
fixed cost and the curve's level come from a straight-line fit of the run's greedy decoder times
against their token counts (the machine's load during the run); the tokenmap times are never used. Prints, per regime
(voice-bound tasks left out as in the report), the replayed S and the audio S of the run.

What it showed (c016e09): +0.05 to +0.15 against the audio from the greedy fit,
-0.03 to -0.25 with --calibrated; the load of a shared machine moves during a run.
"""
import argparse
import collections
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tokenmap import load_maps, resolve_model
from tokenmap.decode.control import ControllerSet
from tokenmap.decode.cost import CostModel
from tokenmap.decode.drafters import FixedDrafter, default_drafter
from tokenmap.decode.replay import replay_window
from tokenmap.decode.special import SpecialTokens
from tokenmap_bench import VOICE_BOUND_WER, wer

ROOT = Path(__file__).resolve().parents[1]

CONTROLLER_KEY = {"tokenmap": "{task}", "tokenmap-learned": "learned {task}", "tokenmap-mismatch": "mismatch {task}"}


def map_key(system: str, row: dict) -> str:
    if system == "tokenmap-learned":
        return f"learned {row['task']}"
    if system == "tokenmap-mismatch":
        return f"maintenance/{row['lang']}"
    return row["task"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--prefill-ms", type=float, default=None,
                    help="the fixed cost of a window (default: fitted on the run's greedy decodes)")
    ap.add_argument("--reps", type=int, default=None, help="default: the run's repetitions")
    ap.add_argument("--calibrated", action="store_true",
                    help="predict tokenmap's time from the run's calibrated curve and prefill as they are, "
                    "against the greedy times the run measured")
    args = ap.parse_args()
    header, out = replay_run(Path(args.results), args.prefill_ms, args.reps, args.calibrated)
    print(header)
    print(f"{'system':18s} {'regime':11s} {'n':>4s} {'S replay':>9s} {'S audio':>8s} {'diff':>6s} {'identical':>9s}")
    for (system, regime), v in sorted(out.items()):
        s_rep = v["greedy_ms"] / v["replay_ms"]
        s_aud = v["audio_greedy_s"] / v["audio_s"]
        print(f"{system:18s} {regime:11s} {int(v['n']):4d} {s_rep:9.3f} {s_aud:8.3f} {s_rep - s_aud:+6.3f} "
              f"{v['identical'] / v['n']:9.0%}")


def load_run(results: Path) -> SimpleNamespace:
    """What every replay of the run at ``results`` starts from: ``run`` (its JSON), ``cost`` (its curve),
    ``greedy`` (its greedy rows by id), ``fixed`` and ``per_token`` (:func:`fit_greedy` of them),
    ``scale`` (the machine's load: per-token time over the curve's step), ``special`` (the model's
    special tokens), ``bound`` (the voice-bound tasks, left out of every figure) and ``where`` (the
    checkout the run was made in)."""
    run = json.loads(results.read_text())
    cost = CostModel.from_json(run["cost_model"])
    greedy = {r["id"]: r for r in run["rows"] if r["system"] == "greedy"}
    fixed, per_token = fit_greedy(list(greedy.values()))
    by_task = collections.defaultdict(list)
    for r in greedy.values():
        by_task[r["task"]].append(r)
    bound = {t for t, rs in by_task.items() if wer([(r["ref"], r["text"]) for r in rs]) > VOICE_BOUND_WER}
    special = SpecialTokens.from_model_dir(str(resolve_model(run["options"]["model"], download=False)))
    return SimpleNamespace(run=run, cost=cost, greedy=greedy, fixed=fixed, per_token=per_token,
                           scale=per_token / cost.step_ms, special=special, bound=bound,
                           where=results.resolve().parents[2])  # results/<run>/results.json


def replay_run(results: Path, prefill_ms=None, reps=None, calibrated=False):
    """Replay every drafting system of the run at ``results``; returns ``(header text, sums)``,
    sums keyed by ``(system, regime)``: replayed and greedy ms, audio seconds, counts."""
    ctx = load_run(results)
    run, cost, fixed, scale, special, bound = ctx.run, ctx.cost, ctx.fixed, ctx.scale, ctx.special, ctx.bound
    prefill = prefill_ms if prefill_ms is not None else fixed
    if calibrated:  # the run's calibration alone: its curve and its prefill, unscaled
        scale, prefill = 1.0, cost.prefill_ms
    header = [f"greedy decoder time = {fixed:.1f} ms + {ctx.per_token:.2f} ms x tokens (least squares over "
              f"{len(ctx.greedy)} utterances); the curve's step is {cost.step_ms} ms, so its passes are scaled by "
              f"{scale:.2f}"]
    reps = reps or run["options"]["reps"]
    rows, greedy, where = run["rows"], ctx.greedy, ctx.where
    maps = {k: load_maps(where / v)[0] for k, v in run["maps"].items() if isinstance(v, str)}
    controllers: dict = {}
    out = collections.defaultdict(lambda: collections.defaultdict(float))  # (system, regime) -> sums
    for row in (r for r in rows if r["system"] in CONTROLLER_KEY):
        g = greedy[row["id"]]
        if g["task"] in bound:
            continue
        system, task = row["system"], g["task"]
        ctl = controllers.setdefault(CONTROLLER_KEY[system].format(task=task), ControllerSet(cost))
        median_ms, greedy_ms = replay_utterance(ctl, maps[map_key(system, row)], g, cost, special, reps,
                                                run["options"]["timestamps"])
        key = (system, g["regime"])
        out[key]["replay_ms"] += median_ms * scale + prefill
        out[key]["greedy_ms"] += g["decoder_s"] * 1000.0 if calibrated else greedy_ms * scale + prefill
        out[key]["audio_s"] += row["decoder_s"]
        out[key]["audio_greedy_s"] += g["decoder_s"]
        out[key]["n"] += 1
        out[key]["identical"] += bool(row.get("identical"))
    header.append(f"cost model: {cost.source}; prefill {prefill} ms; {reps} repetitions; voice-bound left out: "
                  f"{', '.join(sorted(bound)) or '-'}")
    return "\n".join(header), out


def replay_utterance(ctl, token_map, greedy_row, cost, special, reps: int, with_ts: bool = True):
    """``(median modelled ms, greedy ms)`` of ``reps`` replays of one utterance's greedy tokens, drafting
    from ``token_map`` under the task's controllers ``ctl`` (its window gate included)."""
    ms, truth = [], greedy_row["token_ids"]
    for _ in range(reps):
        if not ctl.use_speculation():
            st = replay_window(FixedDrafter([]), truth, special.eot, with_ts, special.timestamp_begin, cost, feed=2)
            ms.append(st.greedy_ms)
            continue
        drafter = default_drafter(token_map, special.timestamp_begin, controllers=ctl, eot=special.eot, cost=cost,
                                  seconds=min(greedy_row["audio_s"], 30.0) or None)
        st = replay_window(drafter, truth, special.eot, with_ts, special.timestamp_begin, cost, feed=2)
        ctl.record_window(st)
        ms.append(st.ms)
    return sorted(ms)[len(ms) // 2], st.greedy_ms


def fit_greedy(rows) -> tuple[float, float]:
    """Least-squares ``(fixed ms, ms per token)`` of the run's greedy decoder times (tokens include EOT)."""
    n = np.array([len(r["token_ids"]) + 1 for r in rows], dtype=float)
    t = np.array([r["decoder_s"] * 1000.0 for r in rows])
    slope, intercept = np.polyfit(n, t, 1)
    return float(intercept), float(slope)



if __name__ == "__main__":
    main()
