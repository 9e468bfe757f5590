"""The encoder gap: the fork's int8 encoder against stock CTranslate2's, in interleaved processes.

    python research/encoder_gap.py --pairs 8 --encodes 7 [--variant NAME=ENV...] [--out DIR]

One real 30 s window (tests/data/en-basic-pbx-ivr-main.flac, padded) is turned into
features once; then every round starts one child process per system in a rotating
order. A child imports only ``ctranslate2`` and numpy (run by path with the venv's
interpreter: the fork in .venv, stock 4.8.5 in .venv-stock), loads base at int8 with
2 threads, encodes once untimed, times ``--encodes`` encodes and saves the encoder
output, so the outputs of every variant can be compared byte for byte.

A system is ``LABEL=PYTHON[,KEY=VALUE...]``: the interpreter and extra environment
(e.g. ``fork-avx2=/work/main/.venv/bin/python,ONEDNN_MAX_CPU_ISA=AVX2``);
``intra=N`` / ``inter=N`` set the model's thread counts instead of the environment.
Prints per system: min and median of each process's min and median, the ratio to
the first system per round, and whether the output equals the first system's.
``--onednn`` runs the children with ``ONEDNN_VERBOSE=1`` and splits each encode's
time into oneDNN's int8 GEMMs, float32 GEMMs (attention), convolutions, reorders
and the rest (CTranslate2's own operators), medians over all encodes.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
import numpy as np
import ctranslate2
mel_path, out_path, model_dir, n, intra, inter = sys.argv[1:7]
model = ctranslate2.models.Whisper(model_dir, device="cpu", compute_type="int8",
                                   intra_threads=int(intra), inter_threads=int(inter))
mel = ctranslate2.StorageView.from_array(np.load(mel_path))
enc = model.encode(mel)
times = []
for _ in range(int(n)):
    t0 = time.perf_counter()
    enc = model.encode(mel)
    times.append(time.perf_counter() - t0)
np.save(out_path, np.asarray(enc))
print(json.dumps({"times": times, "version": ctranslate2.__version__}))
"""


def make_features(path: Path, out: Path) -> None:
    import numpy as np
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor

    mel = FeatureExtractor(feature_size=80)(decode_audio(str(path), sampling_rate=16000))[:, :3000]
    mel = np.pad(mel, ((0, 0), (0, 3000 - mel.shape[1])))[None]
    np.save(out, np.ascontiguousarray(mel, dtype=np.float32))


def parse_system(spec: str):
    label, _, rest = spec.partition("=")
    python, *pairs = rest.split(",")
    env = dict(p.split("=", 1) for p in pairs)
    threads = (env.pop("intra", "2"), env.pop("inter", "1"))
    return label, python, env, threads


def run_child(python, env, threads, mel, out, model_dir, encodes, onednn=False):
    full = dict(os.environ, **env, **({"ONEDNN_VERBOSE": "1"} if onednn else {}))
    proc = subprocess.run([python, "-c", CHILD, str(mel), str(out), str(model_dir), str(encodes), *threads],
                          env=full, capture_output=True, text=True, check=True)
    lines = proc.stdout.strip().splitlines()
    result = json.loads(lines[-1])
    if onednn:
        result["split"] = split_times(lines, encodes, result["times"])
    return result


def split_times(lines, encodes, times):
    """Per timed encode: ms in oneDNN int8 GEMM, float32 GEMM, convolution, reorder, and the rest."""
    calls = [line.split(",") for line in lines if line.startswith("onednn_verbose,exec")]
    per = len(calls) // (encodes + 1)
    out = []
    for i in range(encodes):
        parts = collections.Counter()
        for c in calls[(i + 1) * per:(i + 2) * per]:
            kind = c[3] if c[3] != "gemm_api" else ("gemm_s8" if "src_u8" in c[6] else "gemm_f32")
            parts[kind] += float(c[-1])
        parts["rest"] = times[i] * 1000 - sum(parts.values())
        out.append(dict(parts))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--audio", default=str(ROOT / "tests/data/en-basic-pbx-ivr-main.flac"))
    ap.add_argument("--pairs", type=int, default=8, help="rounds (one process per system each)")
    ap.add_argument("--encodes", type=int, default=7)
    ap.add_argument("--system", action="append", default=[])
    ap.add_argument("--out", default="/tmp/encoder-gap")
    ap.add_argument("--onednn", action="store_true", help="split the time by oneDNN primitive")
    args = ap.parse_args()
    import numpy as np

    from tokenmap import resolve_model

    model_dir = resolve_model("base", download=False)
    systems = [parse_system(s) for s in args.system] or [
        parse_system(f"fork={ROOT / '.venv/bin/python'}"), parse_system(f"stock={ROOT / '.venv-stock/bin/python'}")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mel = out / "mel.npy"
    make_features(Path(args.audio), mel)
    results = {label: [] for label, *_ in systems}
    ratios = {label: [] for label, *_ in systems}
    started = time.time()
    for r in range(args.pairs):
        order = systems[r % len(systems):] + systems[: r % len(systems)]
        this = {}
        for label, python, env, threads in order:
            res = run_child(python, env, threads, mel, out / f"{label}.npy", model_dir, args.encodes, args.onednn)
            this[label] = res
            results[label].append(res)
        first = systems[0][0]
        for label in this:
            ratios[label].append(statistics.median(this[label]["times"]) / statistics.median(this[first]["times"]))
        print(f"round {r}: " + ", ".join(f"{k} med {statistics.median(v['times']):.3f} s" for k, v in this.items())
              + f" ({time.time() - started:.0f} s)", file=sys.stderr)
    ref = np.load(out / f"{systems[0][0]}.npy")
    print(f"{'system':14s} {'version':10s} {'min':>6s} {'med(min)':>9s} {'med(med)':>9s} {'ratio med':>9s} "
          f"{'ratio range':>13s} {'max|diff|':>10s}")
    for label, *_ in systems:
        mins = [min(x["times"]) for x in results[label]]
        meds = [statistics.median(x["times"]) for x in results[label]]
        diff = float(np.max(np.abs(np.load(out / f"{label}.npy") - ref)))
        rs = ratios[label]
        print(f"{label:14s} {results[label][0]['version']:10s} {min(mins):6.3f} {statistics.median(mins):9.3f} "
              f"{statistics.median(meds):9.3f} {statistics.median(rs):9.3f} {min(rs):6.3f}-{max(rs):6.3f} {diff:10.3g}")
    if args.onednn:
        print("median ms per encode: " + " ".join(f"{k:>9s}" for k in ("gemm_s8", "gemm_f32", "convolution",
                                                                       "reorder", "rest")))
        for label, *_ in systems:
            splits = [s for x in results[label] for s in x["split"]]
            print(f"{label:21s}" + " ".join(f"{statistics.median(s.get(k, 0.0) for s in splits):9.1f}"
                                            for k in ("gemm_s8", "gemm_f32", "convolution", "reorder", "rest")))


if __name__ == "__main__":
    main()
