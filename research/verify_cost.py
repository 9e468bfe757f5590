"""What a verify pass costs: the bare engine call against the decoder's real path (logits + rules).

    python research/verify_cost.py [--reps 30] [--compute-type int8]

Interleaves, for each pass length, ``forward_batch`` alone and ``forward_batch`` plus the
logits as numpy plus ``RuleSet.choose_rows`` on every row (a pass whose whole draft is
accepted) or on the first row only (a draft rejected at its first token: ``choose_rows``
stops deciding there), on one real 30 s window of tests/data speech. Prints medians in
ms and their ratios to the bare call.
"""
import argparse
import statistics
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tokenmap import resolve_model
from tokenmap.decode.rules import RuleSet
from tokenmap.decode.special import SpecialTokens
from tokenmap_bench import features

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--compute-type", default="int8")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import ctranslate2

    model_dir = resolve_model("base", download=False)
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type=args.compute_type,
                                       intra_threads=args.threads)
    special = SpecialTokens.from_model_dir(str(model_dir))
    enc = model.encode(features(SimpleNamespace(audio=str(ROOT / "tests/data/en-basic-pbx-ivr-main.flac")))[0])
    prompt = [special.sot, special.sot + 1, special.sot + 101]
    rules = RuleSet.from_generate_kwargs(special, prompt)
    state, _ = model.prefill(enc, prompt)
    base = state.current_step
    text = [special.timestamp_begin, 5884, 5883, 428, 5764, 1230, 13, 1692, 3651, 11, 8359, 1045, 13, 1692, 3651]

    def bare(n):
        model.forward_batch(state, text[1:n + 1])
        state.truncate_to_step(base)

    def real(n, every_row=True):
        rows = np.asarray(model.forward_batch(state, text[1:n + 1]))[0]
        rules.choose_rows(rows, text[:1], text[2:n + 1], every_row=every_row)
        state.truncate_to_step(base)

    def rejected(n):  # the draft rejected at its first token: the rules decide one row
        real(n, every_row=False) if n == 1 else _rejected(n)

    def _rejected(n):
        rows = np.asarray(model.forward_batch(state, text[1:n + 1]))[0]
        rules.choose_rows(rows, text[:1], [special.eot - 1] * (n - 1))
        state.truncate_to_step(base)

    print(f"{'tokens':>6} {'bare ms':>8} {'all rows':>8} {'ratio':>6} {'1 row':>8} {'ratio':>6}")
    for n in (1, 2, 5, 9, 13):
        times = {bare: [], real: [], rejected: []}
        for _ in range(args.reps):
            for fn in (bare, real, rejected):
                t0 = time.perf_counter()
                fn(n)
                times[fn].append((time.perf_counter() - t0) * 1000)
        b, r, j = (statistics.median(times[f]) for f in (bare, real, rejected))
        print(f"{n:6d} {b:8.2f} {r:8.2f} {r / b:6.2f} {j:8.2f} {j / b:6.2f}")


if __name__ == "__main__":
    main()
