"""What the OpenMP wait policy does to a decoder pass: the fork's calls timed in child processes.

    python research/thread_wait.py [--rounds 3] [--reps 15] [--variant LABEL=KEY=VALUE,KEY=VALUE ...]

Each round starts, in alternating order, one child process per (policy, compute type):
``default`` (libgomp's defaults: ``TOKENMAP_THREAD_WAIT=default``) and ``spin`` (what
:mod:`tokenmap.runtime.threads` sets). A child loads base with 2 threads, prefills one real 30 s
window (tests/data/en-basic-pbx-ivr-main.flac) and times, ``--reps`` times each, the
prefill, one ``forward_step`` and ``forward_batch`` of 2, 3, 5, 9 and 17 tokens (logits to
numpy, state truncated back), and reports medians in ms plus the largest logit difference
between a batch of 9 and 9 steps (the arithmetic must not change with the policy).
``--variant`` adds a policy of its own: the defaults plus the given variables (e.g.
``spincount=GOMP_SPINCOUNT=3000000`` or ``mkl=CT2_USE_MKL=1``).
Prints the median over rounds for each cell and each policy's ratio to ``default``.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from tokenmap.runtime import threads

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, statistics, sys, time
import numpy as np
from types import SimpleNamespace
import tokenmap
import ctranslate2
from tokenmap import resolve_model
from tokenmap.decode.special import SpecialTokens
from tokenmap_bench import features
compute_type, reps, audio_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
model_dir = str(resolve_model("base", download=False))
model = ctranslate2.models.Whisper(model_dir, device="cpu", compute_type=compute_type, intra_threads=2)
special = SpecialTokens.from_model_dir(model_dir)
enc = model.encode(features(SimpleNamespace(audio=audio_path))[0])
prompt = [special.sot, special.sot + 1, special.sot + 101]
text = [special.timestamp_begin, 5884, 5883, 428, 5764, 1230, 13, 1692, 3651, 11, 8359, 1045, 13, 1692, 3651, 13, 11]
state, _ = model.prefill(enc, prompt)
base = state.current_step
steps = [np.asarray(model.forward_step(state, t))[0].copy() for t in text[:9]]
state.truncate_to_step(base)
batch = np.asarray(model.forward_batch(state, text[:9]))[0]
state.truncate_to_step(base)
times = {}
def timed(key, fn):
    t0 = time.perf_counter()
    fn()
    times.setdefault(key, []).append((time.perf_counter() - t0) * 1000)
for _ in range(reps):
    timed("prefill", lambda: model.prefill(enc, prompt))
    timed("step", lambda: np.asarray(model.forward_step(state, text[0])))
    state.truncate_to_step(base)
    for n in (2, 3, 5, 9, 17):
        timed(f"pass {n}", lambda: np.asarray(model.forward_batch(state, text[:n])))
        state.truncate_to_step(base)
out = {k: statistics.median(v) for k, v in times.items()}
out["max |batch - step|"] = float(max(np.abs(batch[i] - steps[i]).max() for i in range(9)))
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--compute-type", action="append", default=[])
    ap.add_argument("--variant", action="append", default=[], help="LABEL=KEY=VALUE[,KEY=VALUE...]")
    args = ap.parse_args()
    types = args.compute_type or ["int8", "float32"]
    clean = {k: v for k, v in os.environ.items() if k not in threads.POLICY and k != threads.OPT_OUT}
    default = dict(clean, **{threads.OPT_OUT: "default"})
    policies = {"default": default, "spin": clean}
    for spec in args.variant:
        label, _, assignments = spec.partition("=")
        policies[label] = dict(default, **dict(a.split("=", 1) for a in assignments.split(",")))
    results: dict = {}
    audio = str(ROOT / "tests/data/en-basic-pbx-ivr-main.flac")
    for r in range(args.rounds):
        jobs = [(p, t) for t in types for p in policies]
        for policy, ctype in (jobs if r % 2 == 0 else jobs[::-1]):
            out = subprocess.run([sys.executable, "-c", CHILD, ctype, str(args.reps), audio], env=policies[policy],
                                 capture_output=True, text=True, check=True, cwd=ROOT)
            results.setdefault((policy, ctype), []).append(json.loads(out.stdout.splitlines()[-1]))
            print(f"round {r}: {policy} {ctype} step {results[(policy, ctype)][-1]['step']:.2f} ms", flush=True)
    keys = list(results[("default", types[0])][0])
    for ctype in types:
        print(f"\n{ctype}: medians over {args.rounds} rounds (ms); in brackets default / policy")
        print(f"{'call':<20}" + "".join(f"{name:>20}" for name in policies))
        for key in keys:
            cells = {name: statistics.median(x[key] for x in results[(name, ctype)]) for name in policies}
            row = [f"{v:.4g}" + ("" if key.startswith("max") or name == "default" or not v
                                 else f" ({cells['default'] / v:.2f})") for name, v in cells.items()]
            print(f"{key:<20}" + "".join(f"{c:>20}" for c in row))


if __name__ == "__main__":
    main()
