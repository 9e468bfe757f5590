#!/usr/bin/env python3
"""Full-int8 encoder recipes compared by WER against CTranslate2 int8 on held-out real speech.

Dev audio: what ``benchmarks/wer_sets.py --per-set 230`` adds to the 150 a set ``benchmarks/encoder_wer.py``
measures, and Asterisk en/es/fr prompts 150-229 in its order. A variant (VARIANTS) is built by the package's own
path under a cache key of its own, then decoded greedily as encoder_wer decodes.

    .venv/bin/python research/int8_recipe.py --variants recipe-4,widen-2.0
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import nncf

from tokenmap.encoders import openvino, quantize

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import encoder_wer  # noqa: E402  (the script in benchmarks/)
from wer_table import delta_ci  # noqa: E402

QUANTIZE, COMPILE_CONFIG = nncf.quantize, openvino.compile_config
RANGES = nncf.quantization.range_estimator.RangeEstimatorParametersSet
BASE = {"layers": quantize.FLOAT_LAYERS, "scale": 1.0}  # recipe 4: activation ranges as calibrated
VARIANTS = {  # name -> settings over BASE: float layers, range scale, nncf.quantize arguments, advanced parameters
    "recipe-4": {},
    "all-ffn-out": {"layers": quantize.FLOAT_LAYERS + ("ffn/linear_1",)},
    "sdpa-float": {"sdpa": True},  # attention's matrix products unquantized
    "quantile": {"advanced": {"activations_range_estimator_params": RANGES.MEAN_QUANTILE}},
    "f32-rest": {"f32": True},  # what is not int8 runs in float32, not bf16
    "bias-correction": {"nncf": {"fast_bias_correction": False}},
    **{f"widen-{k}": {"scale": k} for k in (1.25, 1.5, 2.0, 3.0)},
}


def dev_rows(dev: Path, test: Path, per_set: int) -> list[dict]:
    measured = {json.loads(line)["id"] for line in test.read_text(encoding="utf-8").splitlines()}
    rows = [r for r in encoder_wer.manifest_rows(dev, 10 ** 6) if r["id"] not in measured]
    digest = lambda r: hashlib.sha256(r["id"].encode()).hexdigest()  # noqa: E731
    out = [r for s in sorted({r["set"] for r in rows}) for r in sorted(
        [r for r in rows if r["set"] == s], key=digest)[:per_set]]
    for lang in encoder_wer.ASTERISK:
        out += encoder_wer.asterisk_rows(lang, 150 + per_set)[150:]
    return out


def apply(variant: dict) -> None:
    """Set the package's recipe to ``variant`` (over BASE), under a cache key of its own."""
    v = {**BASE, **variant}
    quantize.FLOAT_LAYERS, quantize.ACTIVATION_RANGE_SCALE = v["layers"], v["scale"]
    f32 = {"INFERENCE_PRECISION_HINT": "f32"} if v.get("f32") else {}
    openvino.compile_config = lambda *a: {**COMPILE_CONFIG(*a), **f32}

    def run(model, dataset, **kw):
        kw = {**kw, **v.get("nncf", {})}
        if v.get("sdpa"):
            kw["ignored_scope"] = nncf.IgnoredScope(names=list(kw["ignored_scope"].names),
                                                    types=["ScaledDotProductAttention"], validate=False)
        for key, value in v.get("advanced", {}).items():
            setattr(kw["advanced_parameters"], key, value)
        return QUANTIZE(model, dataset, **kw)
    nncf.quantize = run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--per-set", type=int, default=80)
    ap.add_argument("--dev", type=Path, default=ROOT / "bench-data" / "wer-230" / "manifest.jsonl")
    ap.add_argument("--test", type=Path, default=ROOT / "bench-data" / "wer-150" / "manifest.jsonl")
    ap.add_argument("--json", type=Path, default=ROOT / "results" / "int8_recipe.json")
    args = ap.parse_args()
    rows = dev_rows(args.dev, args.test, args.per_set)
    saved = json.loads(args.json.read_text()) if args.json.is_file() else {}
    if "ctranslate2" not in saved or len(saved["ctranslate2"]) != len(rows):
        saved["ctranslate2"] = [r["ctranslate2"] for r in encoder_wer.decode(rows, ["ctranslate2"], "base")[0]]
    for name, base in ((n, saved["ctranslate2"]) for n in args.variants.split(",")):
        apply(VARIANTS[name])
        quantize.RECIPE = f"dev-{name}"
        results, described = encoder_wer.decode(rows, ["openvino:int8-full"], "base")
        got = [r["openvino:int8-full"] for r in results]
        saved[name] = got
        clean = [(b, g) for b, g in zip(base, got) if not (b["loop"] or g["loop"])]
        lo, hi = delta_ci([(b["edits"], g["edits"], g["words"]) for b, g in clean])
        print(f"{name:16s} WER {100 * sum(g['edits'] for _, g in clean) / sum(g['words'] for _, g in clean):.2f} vs "
              f"CT2 {100 * sum(b['edits'] for b, _ in clean) / sum(b['words'] for b, _ in clean):.2f}, "
              f"delta CI [{lo:+.2f}, {hi:+.2f}], loops {sum(g['loop'] for g in got)} vs {sum(b['loop'] for b in base)}"
              f" | {described['openvino:int8-full']}", flush=True)
        args.json.write_text(json.dumps(saved))


if __name__ == "__main__":
    main()
