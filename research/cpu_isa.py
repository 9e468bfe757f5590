#!/usr/bin/env python3
"""Does stock CTranslate2 encode and decode faster with AVX-512 kernels than with the AVX2 it picks?

CTranslate2 selects AVX2 on this Intel Xeon although the CPU has AVX-512 (``CT2_VERBOSE=1``);
``CT2_FORCE_CPU_ISA=AVX512`` overrides it, and ``MKL_ENABLE_INSTRUCTIONS`` bounds what MKL dispatches
to. Each variant runs in its own process of ``.venv-stock`` (stock 4.8.5) with tokenmap's worker
environment (thread wait and heap policies): a 30 s encode of low noise and a greedy ``generate`` of up
to 60 tokens on it, medians of 5 after 2 warm-up rounds; the variants alternate for ``--rounds``.

    .venv/bin/python research/cpu_isa.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {
    "default (AVX2)": {},
    "CT2_FORCE_CPU_ISA=AVX512": {"CT2_FORCE_CPU_ISA": "AVX512"},
    "MKL_ENABLE_INSTRUCTIONS=AVX512_E4": {"MKL_ENABLE_INSTRUCTIONS": "AVX512_E4"},
}


def child() -> None:
    import ctranslate2
    import numpy as np

    model = ctranslate2.models.Whisper(os.path.expanduser("~/.cache/tokenmap/models/base"), device="cpu",
                                       compute_type="int8", intra_threads=2)
    features = (np.random.RandomState(0).randn(1, 80, 3000) * 0.1).astype(np.float32)
    enc, gen = [], []
    for _ in range(7):
        t = time.perf_counter()
        out = model.encode(ctranslate2.StorageView.from_array(features))
        enc.append(time.perf_counter() - t)
        t = time.perf_counter()
        model.generate(out, [[50258, 50259, 50359]], beam_size=1, max_length=60)
        gen.append(time.perf_counter() - t)
    print(f"{statistics.median(enc[2:]) * 1e3:.1f} {statistics.median(gen[2:]) * 1e3:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child()
    from tokenmap.runtime.memory import worker_environment

    base = {k: v for k, v in worker_environment().items() if not k.startswith("PYTHONPATH")}
    times = {name: [] for name in VARIANTS}
    for _ in range(args.rounds):
        for name, extra in VARIANTS.items():
            out = subprocess.run([str(ROOT / ".venv-stock/bin/python"), __file__, "--child"], env={**base, **extra},
                                 check=True, capture_output=True, text=True).stdout.split()
            times[name].append(tuple(map(float, out)))
            print(f"{name:36s} encode {out[0]} ms, generate {out[1]} ms", file=sys.stderr)
    ref = times["default (AVX2)"]
    for name, rows in times.items():
        enc = statistics.median(r[0] / b[0] for r, b in zip(rows, ref))
        gen = statistics.median(r[1] / b[1] for r, b in zip(rows, ref))
        print(f"{name:36s} time against the default: encode {enc:.3f}, generate {gen:.3f}")


if __name__ == "__main__":
    main()
