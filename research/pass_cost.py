#!/usr/bin/env python3
"""What a verify pass of k tokens costs against k plain tokens, on this CPU.

    .venv/bin/python research/pass_cost.py --reps 40

The fork's ``forward_step`` and ``forward_batch`` of k tokens on a real call window (base, int8, 2 threads,
tokenmap's packed decoder), the same k again and again (warm) and k in turn with the other lengths (mixed,
as the loop runs them), against plain ``generate`` a token on the fork and on stock CTranslate2 in its
worker. A pass pays only when it decides more tokens than its cost in the worker's tokens.
"""

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

import tokenmap  # noqa: F401  (packed decoder and thread policy, before CTranslate2 loads)

# isort: split
import ctranslate2
from faster_whisper import decode_audio
from faster_whisper.feature_extractor import FeatureExtractor

from tokenmap.models import resolve_model
from tokenmap.runtime.stock_worker import StockWorker

LENGTHS = (0, 1, 2, 3, 4, 6, 8, 12, 16)  # 0: forward_step
PROMPT = [50258, 50259, 50359]


def passes(model, encoded, sizes, reps: int) -> dict:
    """Median ms of a pass of each size in ``sizes``, in turn ``reps`` times; each pass keeps one token."""
    state, times = model.prefill(encoded, PROMPT)[0], {n: [] for n in sizes}
    for _ in range(reps):
        for n in sizes:
            started = time.perf_counter()
            np.asarray(model.forward_step(state, 220) if n == 0 else model.forward_batch(state, [220] * n))
            times[n].append((time.perf_counter() - started) * 1000.0)
            state.truncate_to_step(state.current_step - max(n, 1) + 1)
    return {n: statistics.median(v) for n, v in times.items()}


def per_token(generate, encoded, reps: int = 7) -> float:
    """ms a token of ``generate``: the difference of ``max_length`` 36 and 4 over the tokens it added."""
    def run(n):
        started = time.perf_counter()
        out = generate(encoded, [PROMPT], beam_size=1, max_length=n, suppress_blank=False, suppress_tokens=[-1, 50257])
        return time.perf_counter() - started, len(out[0].sequences_ids[0])
    (long, n_long), (short, n_short) = ([statistics.median(x) for x in zip(*(run(n) for _ in range(reps)))]
                                        for n in (36, 4))
    return (long - short) * 1000.0 / max(1, n_long - n_short)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--manifest", type=Path, default=Path("bench-data/quick.jsonl"))
    args = ap.parse_args()
    line = next(json.loads(x) for x in args.manifest.read_text(encoding="utf-8").splitlines() if '"calls"' in x)
    feats = FeatureExtractor()(decode_audio(str(args.manifest.parent / line["audio"])))[:, :3000]
    feats = np.pad(feats, ((0, 0), (0, 3000 - feats.shape[1])))[None].astype(np.float32)
    model_dir = resolve_model("base", download=False)
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="int8", intra_threads=2)
    encoded = model.encode(ctranslate2.StorageView.from_array(feats), to_cpu=True)
    worker = StockWorker(model_dir, "int8", 2)
    worker.wait_ready()
    stock = per_token(worker.generate, np.asarray(encoded))
    worker.close()
    warm = {n: passes(model, encoded, (n,), args.reps)[n] for n in LENGTHS}
    mixed = passes(model, encoded, LENGTHS, args.reps)
    print(f"plain generate, a token: stock worker {stock:.2f} ms, fork {per_token(model.generate, encoded):.2f} ms")
    print("| pass | warm (ms) | mixed (ms) | mixed, in stock tokens |\n| --- | ---: | ---: | ---: |")
    for n in LENGTHS:
        print(f"| {'forward_step' if n == 0 else f'forward_batch {n}'} | {warm[n]:.2f} | {mixed[n]:.2f} "
              f"| {mixed[n] / stock:.2f} |")


if __name__ == "__main__":
    main()
