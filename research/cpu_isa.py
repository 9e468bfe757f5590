#!/usr/bin/env python3
"""Does stock CTranslate2 encode and decode faster with AVX-512 kernels than with the AVX2 it picks?

CTranslate2 selects AVX2 on this Intel Xeon although the CPU has AVX-512 (``CT2_VERBOSE=1``);
``CT2_FORCE_CPU_ISA=AVX512`` overrides it, and ``MKL_ENABLE_INSTRUCTIONS`` bounds what MKL dispatches
to. Each variant runs in its own process of ``.venv-stock`` (stock 4.8.5) with tokenmap's worker
environment (thread wait and heap policies) and times the calls of ``worker_costs.py``'s stock side
(a 30 s encode of low noise, a greedy ``generate`` of up to 60 tokens on it, medians of 10 after 2
warm-up rounds); the variants alternate for ``--rounds``. Then each variant's encoder output and tokens
on that window are compared with the default's.

    .venv/bin/python research/cpu_isa.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from worker_costs import MODEL, stock_times

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {
    "default (AVX2)": {},
    "CT2_FORCE_CPU_ISA=AVX512": {"CT2_FORCE_CPU_ISA": "AVX512"},
    "MKL_ENABLE_INSTRUCTIONS=AVX512_E4": {"MKL_ENABLE_INSTRUCTIONS": "AVX512_E4"},
}


def child(save: str | None) -> None:
    """Print the two medians; with ``save``, also write the encoder output of the noise window to
    ``save`` (.npy) and print the tokens ``generate`` wrote on it."""
    print("%.1f %.1f" % stock_times())
    if save:
        import ctranslate2
        import numpy as np
        from worker_costs import KW, PROMPT, noise_window

        model = ctranslate2.models.Whisper(MODEL, device="cpu", compute_type="int8", intra_threads=2)
        out = model.encode(ctranslate2.StorageView.from_array(noise_window()))
        np.save(save, np.asarray(out))
        print(" ".join(map(str, model.generate(out, [PROMPT], **KW)[0].sequences_ids[0])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.save)
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
    with tempfile.TemporaryDirectory() as tmp:
        outputs = {}
        for i, (name, extra) in enumerate(VARIANTS.items()):
            save = os.path.join(tmp, f"{i}.npy")
            lines = subprocess.run([str(ROOT / ".venv-stock/bin/python"), __file__, "--child", "--save", save],
                                   env={**base, **extra}, check=True, capture_output=True, text=True).stdout
            outputs[name] = (np.load(save), lines.splitlines()[1])
    first_enc, first_tokens = outputs["default (AVX2)"]
    for name, rows in times.items():
        enc = statistics.median(r[0] / b[0] for r, b in zip(rows, ref))
        gen = statistics.median(r[1] / b[1] for r, b in zip(rows, ref))
        diff = float(np.abs(outputs[name][0] - first_enc).max())
        same = "same tokens" if outputs[name][1] == first_tokens else "other tokens"
        print(f"{name:36s} time against the default: encode {enc:.3f}, generate {gen:.3f}; "
              f"encoder output differs by up to {diff:.3g}, {same}")


if __name__ == "__main__":
    main()
