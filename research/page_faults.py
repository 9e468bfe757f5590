"""What do page faults cost the engine's calls, and what does the heap policy of tokenmap.runtime.memory win?

    python research/page_faults.py [--rounds 2] [--reps 4]

Runs itself in child processes, alternately with glibc's malloc defaults
(``TOKENMAP_MALLOC=default``) and with the policy tokenmap applies on import,
``--rounds`` times each. A child loads base (int8, 2 threads, the fork in process)
and times, on 7 utterances of ``bench-data/full.jsonl`` (a LibriVox clip, 4 Asterisk
prompts, a call window, a dictation window), ``--reps`` times each: ``encode`` of the
window, greedy ``generate``, and ``decode_window`` drafting the greedy output (the
oracle: the decoder-step API's prefill and passes). It prints the sums of the
medians and the median minor page faults of one call (``getrusage``).

What it showed (7791e64): see research/README.md.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(reps: int) -> dict:
    import tokenmap_bench
    from tokenmap import resolve_model
    from tokenmap_bench import Recording, features

    rows = [json.loads(line) for line in open(ROOT / "bench-data/full.jsonl")]
    pick = ([r for r in rows if r["domain"] == "opendomain"][:1] + [r for r in rows if r["set"] == "telephony"][::30]
            + [r for r in rows if r["set"] == "calls"][:1] + [r for r in rows if r["set"] == "dictation"][:1])
    eng = tokenmap_bench.load_models(Path(resolve_model("base", download=False)), "int8", 2, None)
    totals, faults = {}, {}
    for r in pick:
        mel, _ = features(Recording(r["id"], str(ROOT / "bench-data" / r["audio"]), r["text"], r["domain"], r["lang"]))
        enc = eng.main.encode(mel)
        prompt = eng.prompt(r["lang"], True)
        greedy = tokenmap_bench.greedy(eng, enc, prompt)
        runs = {"encode": lambda: eng.main.encode(mel), "generate": greedy,
                "oracle": tokenmap_bench.oracle(eng, enc, prompt, greedy().tokens)}
        times = {k: [] for k in runs}
        for _ in range(reps):
            for k, run in runs.items():
                f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                t0 = time.perf_counter()
                run()
                times[k].append(time.perf_counter() - t0)
                faults.setdefault(k, []).append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
        for k, values in times.items():
            totals[k] = totals.get(k, 0.0) + statistics.median(values)
    return {"seconds": totals, "faults": {k: statistics.median(v) for k, v in faults.items()}, "utterances": len(pick)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.reps)))
        return
    results = {"default": [], "policy": []}
    for i in range(args.rounds):
        for mode in (("default", "policy") if i % 2 == 0 else ("policy", "default")):
            env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
            env["TOKENMAP_MALLOC"] = "default" if mode == "default" else "on"
            out = subprocess.run([sys.executable, __file__, "--child", "--reps", str(args.reps)], env=env,
                                 capture_output=True, text=True, check=True)
            results[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(mode, results[mode][-1], flush=True)
    print(f"{'call':<9} {'default s':>9} {'policy s':>9} {'speed-up':>8} {'faults default':>14} {'faults policy':>13}")
    for k in ("encode", "generate", "oracle"):
        d = statistics.median(r["seconds"][k] for r in results["default"])
        p = statistics.median(r["seconds"][k] for r in results["policy"])
        fd = statistics.median(r["faults"][k] for r in results["default"])
        fp = statistics.median(r["faults"][k] for r in results["policy"])
        print(f"{k:<9} {d:>9.3f} {p:>9.3f} {d / p:>8.2f} {fd:>14.0f} {fp:>13.0f}")


if __name__ == "__main__":
    main()
