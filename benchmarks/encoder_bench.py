"""The encoder engines on this CPU: time per window length, load time, and output against float32.

For each model, every engine encodes the same features, interleaved round by round (medians):
the OpenVINO precisions this CPU can run that compile here (f32, int8 weights, bf16 where the CPU computes
bfloat16, int8-full where it has int8 matrix instructions), CTranslate2
int8 in process (the fork) and stock CTranslate2 int8 in its worker (what faster-whisper runs; where
``make stock-encoder`` installed it). Then what ``encoder="auto"`` would choose from these timings.
With ``--speech`` the features are a real clip's (padded, as Whisper pads), and each engine's output is
compared with CTranslate2's float32 encoder (cosine over the window; max abs over the speech frames).
Load time is OpenVINO's from an empty cache (read model.bin, build, compile) and from a warm one.

Example::

    .venv/bin/python benchmarks/encoder_bench.py base tiny.en --frames 3000,1000,500 --reps 9
    .venv/bin/python benchmarks/encoder_bench.py ~/.cache/tokenmap/shapes/small --reps 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import tokenmap  # noqa: F401  (the thread and malloc policies apply before CTranslate2 loads)

# isort: split
import numpy as np

import tokenmap.runtime.memory


def engines(model_dir: Path, threads: int, cache: Path | None, stock_worker: bool = True) -> dict:
    """name -> encode(features array) -> array, for every engine this machine has."""
    import ctranslate2

    from tokenmap.encoders.base import StockEncoder
    from tokenmap.encoders.choice import openvino_candidates
    from tokenmap.encoders.openvino import EncoderUnavailable, OpenVINOEncoder
    from tokenmap.runtime.stock_worker import stock_installed

    out = {}
    for candidate in openvino_candidates():
        precision = candidate.split(":")[1]
        try:
            out[f"openvino {precision}"] = OpenVINOEncoder(model_dir, precision, threads, cache=cache).encode_array
        except EncoderUnavailable as exc:
            print(f"  openvino {precision}: {exc}", flush=True)
    fork = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="int8", intra_threads=threads)
    out["ctranslate2 int8 (fork)"] = lambda x: np.asarray(fork.encode(ctranslate2.StorageView.from_array(x)))
    if stock_worker and stock_installed():
        stock = StockEncoder(model_dir, "int8", threads)
        stock.worker.wait_ready()
        out["ctranslate2 int8 (stock worker)"] = lambda x: np.asarray(stock.encode(x))
    return out, fork.n_mels


def load_times(model_dir: Path, threads: int) -> dict:
    """Seconds to an OpenVINO encoder ready to encode: from an empty cache, then from the warm one."""
    from tokenmap.encoders.openvino import OpenVINOEncoder

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        OpenVINOEncoder(model_dir, "f32", threads, cache=Path(tmp))
        cold = time.perf_counter() - started
        started = time.perf_counter()
        OpenVINOEncoder(model_dir, "f32", threads, cache=Path(tmp))
        warm = time.perf_counter() - started
    return {"cold_s": round(cold, 2), "warm_s": round(warm, 3)}


def speech_features(path: str, n_mels: int, frames: int) -> np.ndarray:
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor

    mel = FeatureExtractor(feature_size=n_mels)(decode_audio(path))[:, :frames]
    return np.pad(mel, ((0, 0), (0, frames - mel.shape[1])))[None].astype(np.float32), mel.shape[1]


def accuracy(model_dir: Path, fns: dict, features: np.ndarray, speech_frames: int) -> dict:
    import ctranslate2

    ref_model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="float32", intra_threads=2)
    ref = np.asarray(ref_model.encode(ctranslate2.StorageView.from_array(features)))
    out = {}
    for name, fn in fns.items():
        got = fn(features)
        cosine = float((got * ref).sum() / np.linalg.norm(got) / np.linalg.norm(ref))
        out[name] = {"cosine": round(cosine, 5),
                     "max_abs_speech": round(float(np.abs(got - ref)[:, : speech_frames // 2].max()), 3)}
    return out


def time_engines(fns: dict, n_mels: int, frames_list, reps: int, speech: str | None) -> dict:
    rng = np.random.default_rng(0)
    result = {}
    for frames in frames_list:
        if speech:
            features, _ = speech_features(speech, n_mels, frames)
        else:
            features = (rng.standard_normal((1, n_mels, frames)) * 0.5).astype(np.float32)
        for fn in fns.values():
            fn(features)
        samples = {name: [] for name in fns}
        for _ in range(reps):
            for name, fn in fns.items():
                started = time.perf_counter()
                fn(features)
                samples[name].append(1000 * (time.perf_counter() - started))
        result[frames] = {name: round(statistics.median(v), 1) for name, v in samples.items()}
        print(f"  {frames:5d} frames: " + ", ".join(f"{n} {ms:.0f} ms" for n, ms in result[frames].items()),
              flush=True)
    return result


def auto_choice(timings: dict) -> str:
    """What ``encoder="auto"`` picks from these timings (the measurement's rule), per length."""
    from tokenmap.encoders.choice import plan_from_measurement, plan_summary

    lengths = [f for f in (1000, 3000) if f in timings]
    if not lengths:
        return "not measured at 1000 and 3000 frames"
    ct2 = "ctranslate2 int8 (stock worker)" if "ctranslate2 int8 (stock worker)" in timings[lengths[0]] else \
        "ctranslate2 int8 (fork)"
    names = [n for n in timings[lengths[0]] if n.startswith("openvino ")]
    ms = {f"openvino:{n.split()[1]}": {str(f): timings[f][n] for f in lengths} for n in names}
    ms["ctranslate2"] = {str(f): timings[f][ct2] for f in lengths}
    return plan_summary(plan_from_measurement({"ms": ms}, "ctranslate2", "int8"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="model names or CTranslate2 directories")
    ap.add_argument("--frames", default="3000,2000,1000,500", help="window lengths in mel frames (100 a second)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--speech", default=None, help="an audio file whose features are encoded (default: noise)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--no-stock", action="store_true", help="leave out stock CTranslate2's worker (the fork is "
                    "the same engine a release earlier)")
    args = ap.parse_args(argv)
    tokenmap.runtime.memory.install()
    from tokenmap.models import resolve_model

    frames_list = [int(f) for f in args.frames.split(",")]
    report = {"cpu": _cpu(), "threads": args.threads, "reps": args.reps, "date": time.strftime("%Y-%m-%d %H:%M"),
              "models": {}}
    for name in args.models:
        model_dir = Path(resolve_model(name, download=False))
        print(f"{name} ({model_dir})", flush=True)
        entry = {"load": load_times(model_dir, args.threads)}
        print(f"  OpenVINO load: {entry['load']}", flush=True)
        fns, n_mels = engines(model_dir, args.threads, None, stock_worker=not args.no_stock)  # the user's cache
        entry["ms"] = time_engines(fns, n_mels, frames_list, args.reps, args.speech)
        if args.speech:
            features, speech_frames = speech_features(args.speech, n_mels, 3000)
            entry["accuracy"] = accuracy(model_dir, fns, features, speech_frames)
            print(f"  against float32: {entry['accuracy']}", flush=True)
        entry["auto"] = auto_choice(entry["ms"])
        print(f"  auto: {entry['auto']}", flush=True)
        report["models"][name] = entry
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


def _cpu() -> str:
    from tokenmap.encoders.choice import cpu_identity

    return cpu_identity().split(" | ")[0]


if __name__ == "__main__":
    sys.exit(main())
