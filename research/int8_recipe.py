#!/usr/bin/env python3
"""Full-int8 encoder recipes compared by cosine against OpenVINO float32 on held-out real speech, and by time.

Dev audio: Debian's Asterisk en/es/fr prompts (G.722) of the train split (``corpora/telephony/<lang>/train.tsv``,
never measured as audio) that ``benchmarks/encoder_wer.py`` did not evaluate either (the files of its ``--exclude``
results), at 30 s and 10 s windows. A variant is a set of ``quantize`` settings (VARIANTS).
It showed: SmoothQuant alpha 0.7 instead of 0.5 raises the mean cosine (0.9942 -> 0.9961 at 30 s) at no cost, and
keeping layer 0's attention output projection in float raises it again (0.9960 -> 0.9970) as all six would.

    .venv/bin/python research/int8_recipe.py --exclude results/encoder_wer.json --variants alpha-0.7,attn-out-0-0.7
"""
from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import nncf
import numpy as np
import openvino as ov
from faster_whisper.audio import decode_audio
from faster_whisper.feature_extractor import FeatureExtractor

from tokenmap.encoders import quantize
from tokenmap.encoders.modelbin import read_model_bin
from tokenmap.encoders.openvino import compile_config
from tokenmap.encoders.openvino_graph import EncoderShape, build_encoder
from tokenmap.models import resolve_model

ROOT = Path(__file__).resolve().parents[1]
VOICES = {"en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June"}

BASE = quantize.FLOAT_LAYERS[:2]  # conv2 and layer 0's QKV projection; the recipe adds layer 0's output projection
QUANTIZE = nncf.quantize
VARIANTS = {  # name -> (float layers, SmoothQuant alpha, extra nncf.quantize arguments)
    "current": (quantize.FLOAT_LAYERS, quantize.SMOOTH_QUANT_ALPHA, {}),
    **{f"alpha-{a}": (BASE, a, {}) for a in (0.3, 0.5, 0.6, 0.7, 0.8, 0.9)},
    "bias-correction": (BASE, 0.5, {"fast_bias_correction": False}),
    "all-ffn-out": (BASE + ("ffn/linear_1",), 0.5, {}),
    "attn-out-0.7": (BASE + ("self_attention/linear_1",), 0.7, {}),
    **{f"attn-out-{i}-0.7": (BASE + (f"encoder/layer_{i}/self_attention/linear_1",), 0.7, {}) for i in range(6)},
}


def dev_windows(per_lang: int, exclude: set) -> list[np.ndarray]:
    extractor, out = FeatureExtractor(feature_size=80), []
    for lang, voice in VOICES.items():
        folder = Path("/usr/share/asterisk/sounds") / voice
        train = ROOT / "corpora" / "telephony" / lang / "train.tsv"
        names = sorted((line.split("\t")[0] for line in train.read_text(encoding="utf-8").splitlines()),
                       key=lambda n: hashlib.sha256(f"asterisk-{lang}/{n}".encode()).hexdigest())
        for name in [n for n in names if f"asterisk-{lang}/{n}" not in exclude
                     and (folder / f"{n}.g722").is_file()][:per_lang]:
            mel = extractor(decode_audio(str(folder / f"{name}.g722"), sampling_rate=16000))
            for frames in (3000, 1000):
                m = mel[:, :frames]
                out.append(np.pad(m, ((0, 0), (0, frames - m.shape[1])))[None].astype(np.float32))
    return out


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--per-lang", type=int, default=12)
    ap.add_argument("--exclude", type=Path, required=True, help="an encoder_wer.py --json result: its files")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    model_dir = resolve_model("base", download=False)
    spec = read_model_bin(model_dir / "model.bin")
    exclude = {row["id"] for row in json.loads(args.exclude.read_text(encoding="utf-8"))["files"]}
    core, windows = ov.Core(), dev_windows(args.per_lang, exclude)
    f32 = core.compile_model(build_encoder(spec.variables, "float", get=spec.float32), "CPU",
                             compile_config("f32", 2, None))
    reference = [f32(w)[0] for w in windows]
    calibration = quantize.calibration_windows(EncoderShape(spec.variables).n_mels)
    for name in args.variants.split(","):
        layers, alpha, extra = VARIANTS[name]
        quantize.FLOAT_LAYERS, quantize.SMOOTH_QUANT_ALPHA = layers, alpha
        nncf.quantize = lambda *a, **k: QUANTIZE(*a, **{**k, **extra})  # noqa: E731
        model = quantize.quantize_encoder(build_encoder(spec.variables, "float", get=spec.float32), 80, calibration)
        compiled = core.compile_model(model, "CPU", compile_config("int8-full", 2, None))
        cos = {frames: [cosine(compiled(w)[0], r) for w, r in zip(windows, reference) if w.shape[2] == frames]
               for frames in (3000, 1000)}
        times = []
        for _ in range(args.reps):
            t = time.perf_counter()
            compiled(windows[0])
            times.append(1000 * (time.perf_counter() - t))
        print(f"{name:16s} 30 s cos mean {np.mean(cos[3000]):.5f} min {min(cos[3000]):.5f} | "
              f"10 s mean {np.mean(cos[1000]):.5f} min {min(cos[1000]):.5f} | 30 s {np.median(times):.0f} ms",
              flush=True)


if __name__ == "__main__":
    main()
