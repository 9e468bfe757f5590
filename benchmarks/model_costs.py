"""What each Whisper size costs on this CPU: encoder, prefill, step and verify passes.

Runs on the random-weight models of ``benchmarks/model_shapes.py`` (``make shapes``):
their costs are the real models' (same shapes), their outputs are noise. For each
model, int8 and float32 are loaded side by side and measured in alternating rounds
(every measurement once a round; medians), on the real path of
:func:`tokenmap.decode.calibration.calibrate`: the engine call, the logits as numpy and
Whisper's rules on every row, ``truncate_to_step`` between calls.

Example::

    .venv/bin/python benchmarks/model_costs.py small medium --reps 7 --encoder-reps 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import tokenmap  # noqa: F401  (its thread policy applies on import)

# isort: split
import tokenmap.runtime.memory

ROOT = Path(__file__).resolve().parent.parent

PASSES = (2, 3, 5, 9, 17)
COMPUTE_TYPES = ("int8", "float32")



class Bench:
    """One loaded model, with encoder output, state and rules ready."""

    def __init__(self, model_dir: Path, compute_type: str, threads: int, encoder_seconds=(6, 30)):
        import ctranslate2
        import numpy as np
        from faster_whisper.feature_extractor import FeatureExtractor

        from tokenmap.decode.calibration import calibration_prompt
        from tokenmap.decode.rules import RuleSet
        from tokenmap.decode.special import SpecialTokens

        self.ct2 = ctranslate2
        t0 = time.perf_counter()
        self.model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type=compute_type,
                                                intra_threads=threads)
        self.load_s = time.perf_counter() - t0
        special = SpecialTokens.from_model_dir(str(model_dir))
        audio = np.random.default_rng(0).normal(0, 1e-3, 16000 * 30).astype(np.float32)
        feats = FeatureExtractor(feature_size=self.model.n_mels)(audio)[:, :3000]
        self.full = ctranslate2.StorageView.from_array(np.ascontiguousarray(feats[None], dtype=np.float32))
        self.short = ctranslate2.StorageView.from_array(np.ascontiguousarray(feats[None, :, :600], dtype=np.float32))
        self.contexts = {
            s: ctranslate2.StorageView.from_array(np.ascontiguousarray(feats[None, :, : min(100 * s, 3000)],
                                                                       dtype=np.float32))
            for s in encoder_seconds}
        self.prompt = calibration_prompt(special, self.model.is_multilingual)
        self.rules = RuleSet.from_generate_kwargs(special, self.prompt)
        self.encoded = self.model.encode(self.short)  # warm-up; the decoder reads the 30 s output below
        self.encoded = self.model.encode(self.full)
        self.encoded_at = {s: self.model.encode(v) for s, v in self.contexts.items()}
        self.state, _ = self.model.prefill(self.encoded, self.prompt)
        self.base = self.state.current_step
        self.tok = 220
        self.context = [special.timestamp_begin, self.tok]
        for _ in range(2):
            self.step()
            self.batch(9)

    def step(self):
        import numpy as np
        rows = np.asarray(self.model.forward_step(self.state, self.tok))
        self.rules.choose_rows(rows.reshape(1, -1), self.context, ())
        self.state.truncate_to_step(self.base)

    def batch(self, n):
        import numpy as np
        rows = np.asarray(self.model.forward_batch(self.state, [self.tok] * n))[0]
        self.rules.choose_rows(rows, self.context, [self.tok] * (n - 1), every_row=True)
        self.state.truncate_to_step(self.base)

    def run(self, what):
        t0 = time.perf_counter()
        if what.startswith("encoder_"):
            self.model.encode(self.contexts[int(what[len("encoder_"):-1])])
        elif what == "prefill":
            self.model.prefill(self.encoded, self.prompt)
        elif what.startswith("prefill_"):
            self.model.prefill(self.encoded_at[int(what[len("prefill_"):-1])], self.prompt)
        elif what == "step":
            self.step()
        else:
            self.batch(int(what.split("_")[1]))
        return (time.perf_counter() - t0) * 1000.0


def measure(name: str, model_dir: Path, threads: int, reps: int, encoder_reps: int, compute_types,
            encoder_seconds=(6, 30)):
    benches = {}
    for ct in compute_types:
        print(f"  loading {name} {ct} ...", flush=True)
        benches[ct] = Bench(model_dir, ct, threads, encoder_seconds)
    decoder = ["prefill", "step"] + [f"pass_{k}" for k in PASSES] + [f"prefill_{s}s" for s in encoder_seconds]
    encoders = [f"encoder_{s}s" for s in encoder_seconds]
    samples = {ct: {w: [] for w in encoders + decoder} for ct in compute_types}
    for r in range(max(reps, encoder_reps)):
        for ct, bench in benches.items():  # alternate compute types round by round
            whats = list(decoder) if r < reps else []
            if r < encoder_reps:
                whats = encoders + whats
            for w in whats:
                samples[ct][w].append(bench.run(w))
        print(f"  round {r + 1}/{max(reps, encoder_reps)}", flush=True)
    rows = []
    for ct in compute_types:
        med = {w: round(statistics.median(v), 2) for w, v in samples[ct].items()}
        rows.append(dict(model=name, compute_type=ct, threads=threads, reps=reps, encoder_reps=encoder_reps,
                         load_s=round(benches[ct].load_s, 1), **med, samples=samples[ct]))
    return rows


def table(rows) -> str:
    head = ("| model | compute type | encoder 30 s (ms) | encoder 6 s (ms) | prefill (ms) | step (ms) | "
            "pass of " + "/".join(map(str, PASSES)) + " (ms) | reps (decoder / encoder) |")
    lines = [head, "|" + " --- |" * 8]
    for r in rows:
        passes = " / ".join(f"{r[f'pass_{k}']:.1f}" for k in PASSES)
        short = r.get("encoder_6s", float("nan"))
        lines.append(f"| {r['model']} | {r['compute_type']} | {r['encoder_30s']:.0f} | {short:.0f} | "
                     f"{r['prefill']:.1f} | {r['step']:.1f} | {passes} | {r['reps']} / {r['encoder_reps']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from model_shapes import SHAPES, default_root

    from tokenmap import resolve_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", default=[], metavar="NAME", help=f"default: {', '.join(SHAPES)}")
    ap.add_argument("--root", type=Path, default=None, help="where model_shapes.py built them")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=7, help="rounds of the decoder measurements (median)")
    ap.add_argument("--encoder-reps", type=int, default=3, help="rounds of the encoder measurements (median)")
    ap.add_argument("--compute-types", default=",".join(COMPUTE_TYPES))
    ap.add_argument("--encoder-seconds", default="6,30",
                    help="encoder contexts to time, in seconds of audio (comma-separated; 30 and 6 are in the table)")
    ap.add_argument("--json", type=Path, default=Path("/tmp/tm/sizes.json"))
    ap.add_argument("--md", type=Path, default=Path("/tmp/tm/sizes.md"))
    ap.add_argument("--append", action="store_true", help="keep the rows of other models already in --json")
    args = ap.parse_args(argv)
    tokenmap.runtime.memory.install()
    root = (args.root or default_root()).expanduser()
    names = args.names or list(SHAPES)
    rows = []
    if args.append and args.json.is_file():
        rows = [r for r in json.loads(args.json.read_text())["rows"] if r["model"] not in names]
    command = "benchmarks/model_costs.py " + " ".join(sys.argv[1:] if argv is None else argv)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    for name in names:
        model_dir = resolve_model(name, download=False) if name == "base" else root / name
        if not (model_dir / "model.bin").is_file():
            print(f"{name}: not built ({model_dir}); run `make shapes`", file=sys.stderr)
            continue
        print(f"{name}", flush=True)
        rows += measure(name, model_dir, args.threads, args.reps, args.encoder_reps, args.compute_types.split(","),
                        [int(x) for x in args.encoder_seconds.split(",")])
        order = {n: i for i, n in enumerate(["base", *SHAPES])}
        rows.sort(key=lambda r: (order.get(r["model"], 99), r["compute_type"]))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        args.json.write_text(json.dumps({"date": stamp, "command": command, "rows": rows}, indent=1) + "\n")
        args.md.write_text(
            f"`.venv/bin/python {command}` — {stamp}\n\n"
            "AMD EPYC, 2 cores, CTranslate2 fork 4.7.1, ISA AVX2, oneDNN; random-weight models of the real shapes "
            "(benchmarks/model_shapes.py), 30 s of low noise; passes with the rules on every row.\n\n" + table(rows))
        print(table(rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
