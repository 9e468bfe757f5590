#!/usr/bin/env python3
"""What the stock worker costs: its memory after loading and after a 30 s encode, and an encode and a
``generate`` through it against the same calls in a stock CTranslate2 process.

``python research/worker_costs.py`` loads ``tokenmap.WhisperModel("base", compute_type="int8")``, waits
for its worker, prints the worker's RSS, then times 10 encodes of one 30 s window of noise and 10 greedy
``generate`` calls (up to 60 tokens) on it through the worker (medians, after 2 warm-up rounds); then
runs itself under ``.venv-stock`` with the worker's environment (``--stock``) for the same calls on
stock CTranslate2 in that process; ``--rounds N`` alternates the two N times (this machine's speed
drifts by more than the gap between them from one minute to the next).

    .venv/bin/python research/worker_costs.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROMPT = [50258, 50259, 50359]  # sot, en, transcribe
KW = dict(beam_size=1, max_length=60, suppress_blank=True)
MODEL = os.path.expanduser("~/.cache/tokenmap/models/base")


def rss_mb(pid: int) -> float:
    return int(open(f"/proc/{pid}/statm").read().split()[1]) * 4096 / 2**20


def noise_window() -> np.ndarray:
    """The timed window: 30 s of seeded noise features, [1, 80, 3000]."""
    return (np.random.RandomState(0).randn(1, 80, 3000) * 0.1).astype(np.float32)


def timed(encode, generate) -> tuple[float, float]:
    features = noise_window()
    enc, gen = [], []
    for _ in range(12):
        t = time.perf_counter()
        out = encode(features)
        enc.append(time.perf_counter() - t)
        t = time.perf_counter()
        generate(out)
        gen.append(time.perf_counter() - t)
    return statistics.median(enc[2:]) * 1e3, statistics.median(gen[2:]) * 1e3


def stock_times() -> tuple[float, float]:
    """:func:`timed` on the CTranslate2 this process imports (stock, under ``.venv-stock``)."""
    import ctranslate2

    model = ctranslate2.models.Whisper(MODEL, device="cpu", compute_type="int8", intra_threads=2)
    return timed(lambda f: model.encode(ctranslate2.StorageView.from_array(f)),
                 lambda out: model.generate(out, [PROMPT], **KW))


def stock() -> None:
    e, g = stock_times()
    print(f"stock CTranslate2 in process: encode {e:.1f} ms, generate {g:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stock", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=1, help="worker, then stock process, this many times")
    args = ap.parse_args()
    if args.stock:
        return stock()
    import tokenmap
    from tokenmap.runtime.memory import worker_environment

    model = tokenmap.WhisperModel("base", compute_type="int8", cpu_threads=2)
    worker = model.model.plain.worker
    worker.wait_ready()
    pid = worker._proc.pid
    print(f"worker RSS after loading {rss_mb(pid):.0f} MB; main {rss_mb(os.getpid()):.0f} MB")
    env = {k: v for k, v in worker_environment().items() if not k.startswith("PYTHONPATH")}
    for _ in range(args.rounds):
        e, g = timed(model.model.encode, lambda out: model.model.plain.generate(out, [PROMPT], **KW))
        print(f"worker RSS after 30 s encodes {rss_mb(pid):.0f} MB")
        print(f"through the worker: encode {e:.1f} ms, generate {g:.1f} ms")
        subprocess.run([str(ROOT / ".venv-stock/bin/python"), __file__, "--stock"], env=env, check=True)


if __name__ == "__main__":
    main()
