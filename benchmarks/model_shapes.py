"""Random-weight CTranslate2 Whisper models of the real shapes (small, medium, large-v3, turbo).

The weights are noise (seeded N(0, 0.02), layer norms gamma=1 beta=0): the models
transcribe nothing, but every matrix has its real size, so they cost on a CPU
what the real models cost. The tokenizer, vocabulary and config come from the
packaged base model; large-v3 and turbo get its 128 mel bins and the extra
language token ``<|yue|>`` (vocabulary 51866, ids shifted by one from there, as
in the real large-v3). Built with ``ctranslate2.specs`` alone (no torch).

Example::

    .venv/bin/python benchmarks/model_shapes.py                  # all four into ~/.cache/tokenmap/shapes/
    .venv/bin/python benchmarks/model_shapes.py small --force    # rebuild one
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Shape:
    d_model: int
    encoder_layers: int
    decoder_layers: int
    heads: int
    n_mels: int = 80
    large_v3_vocab: bool = False  # 51866 tokens with <|yue|>; else base's 51865


SHAPES = {
    "small": Shape(768, 12, 12, 12),
    "medium": Shape(1024, 24, 24, 16),
    "large-v3": Shape(1280, 32, 32, 20, 128, True),
    "large-v3-turbo": Shape(1280, 32, 4, 20, 128, True),
}

ENCODER_POSITIONS = 1500
DECODER_POSITIONS = 448


def default_root() -> Path:
    import os
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tokenmap" / "shapes"


def base_dir() -> Path:
    from tokenmap import resolve_model
    return Path(resolve_model("base", download=False))


def read_vocabulary(model_dir: Path) -> list[str]:
    txt = model_dir / "vocabulary.txt"
    if txt.is_file():
        return [line.rstrip("\n") for line in txt.read_text(encoding="utf-8").splitlines()]
    return json.loads((model_dir / "vocabulary.json").read_text(encoding="utf-8"))


def large_v3_vocabulary(vocab: list[str], config: dict) -> tuple[list[str], dict, int]:
    """Base's vocabulary and config with ``<|yue|>`` after the last language token.

    Returns (vocabulary, config, insertion id): every id >= the insertion id moves up by one.
    """
    at = max(config["lang_ids"]) + 1
    out = vocab[:at] + ["<|yue|>"] + vocab[at:]

    def shift(ids):
        return [i + 1 if i >= at else i for i in ids]

    cfg = dict(config)
    cfg["suppress_ids"] = shift(config.get("suppress_ids", []))
    cfg["suppress_ids_begin"] = shift(config.get("suppress_ids_begin", []))
    cfg["lang_ids"] = list(config["lang_ids"]) + [at]
    return out, cfg, at


def large_v3_tokenizer(tokenizer: dict, at: int) -> dict:
    """tokenizer.json with ``<|yue|>`` added at id ``at`` (later added tokens shifted by one)."""
    tok = json.loads(json.dumps(tokenizer))
    added = tok.get("added_tokens", [])
    for entry in added:
        if entry["id"] >= at:
            entry["id"] += 1
    template = next((e for e in added if e["content"].startswith("<|") and e["id"] == at - 1), None)
    new = dict(template or {"single_word": False, "lstrip": False, "rstrip": False,
                            "normalized": False, "special": True})
    new.update(id=at, content="<|yue|>")
    added.append(new)
    added.sort(key=lambda e: e["id"])
    vocab = tok.get("model", {}).get("vocab")
    if isinstance(vocab, dict):
        for k, v in list(vocab.items()):
            if v >= at:
                vocab[k] = v + 1
    return tok


def build_spec(shape: Shape, vocab_size: int, config: dict, vocabulary: list[str], seed: int = 0):
    """A filled, validated ``WhisperSpec`` of ``shape`` with random weights."""
    from ctranslate2.specs import whisper_spec

    rng = np.random.default_rng(seed)
    d = shape.d_model

    def w(*size):
        return (rng.standard_normal(size, dtype=np.float32) * np.float32(0.02))

    def z(n):
        return np.zeros(n, dtype=np.float32)

    def norm(spec):
        spec.gamma = np.ones(d, dtype=np.float32)
        spec.beta = z(d)

    def linear(spec, out, inp, bias=True):
        spec.weight = w(out, inp)
        if bias:
            spec.bias = z(out)

    def ffn(spec):
        norm(spec.layer_norm)
        linear(spec.linear_0, 4 * d, d)
        linear(spec.linear_1, d, 4 * d)

    def self_attention(spec):
        norm(spec.layer_norm)
        linear(spec.linear[0], 3 * d, d)
        linear(spec.linear[1], d, d)

    spec = whisper_spec.WhisperSpec(shape.encoder_layers, shape.heads, shape.decoder_layers, shape.heads)
    enc = spec.encoder
    enc.conv1.weight, enc.conv1.bias = w(d, shape.n_mels, 3), z(d)
    enc.conv2.weight, enc.conv2.bias = w(d, d, 3), z(d)
    enc.position_encodings.encodings = w(ENCODER_POSITIONS, d)
    norm(enc.layer_norm)
    for layer in enc.layer:
        self_attention(layer.self_attention)
        ffn(layer.ffn)

    _fill_decoder(spec.decoder, vocab_size, d, w, norm, linear, self_attention, ffn)

    for key in ("suppress_ids", "suppress_ids_begin", "lang_ids"):
        setattr(spec.config, key, list(config.get(key, [])))
    # alignment heads: the last half of the decoder's layers, all heads (as the converter's default)
    spec.config.alignment_heads = [[layer, head] for layer in range(shape.decoder_layers // 2, shape.decoder_layers)
                                   for head in range(shape.heads)]
    spec.register_vocabulary(vocabulary)
    spec.validate()
    return spec


def _fill_decoder(dec, vocab_size: int, d: int, w, norm, linear, self_attention, ffn) -> None:
    """Random weights for the decoder spec ``dec``, with ``build_spec``'s fillers."""
    dec.embeddings.weight = w(vocab_size, d)
    dec.position_encodings.encodings = w(DECODER_POSITIONS, d)
    norm(dec.layer_norm)
    for layer in dec.layer:
        self_attention(layer.self_attention)
        norm(layer.attention.layer_norm)
        linear(layer.attention.linear[0], d, d)
        linear(layer.attention.linear[1], 2 * d, d)
        linear(layer.attention.linear[2], d, d)
        ffn(layer.ffn)
    dec.projection.weight = dec.embeddings.weight  # tied, as in Whisper


def build(name: str, shape: Shape, out: Path, source: Path | None = None, seed: int = 0,
          quantization: str = "float16") -> Path:
    """Write a random-weight model of ``shape`` to ``out`` (replaced if present)."""
    source = Path(source) if source else base_dir()
    vocabulary = read_vocabulary(source)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    tokenizer = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
    if shape.large_v3_vocab:
        vocabulary, config, at = large_v3_vocabulary(vocabulary, config)
        tokenizer = large_v3_tokenizer(tokenizer, at)
    spec = build_spec(shape, len(vocabulary), config, vocabulary, seed)
    try:
        spec.optimize(quantization=quantization)
    except (ValueError, TypeError):  # a spec that refuses float16 on disk: float32 (converted at load)
        spec.optimize(quantization=None)
    tmp = out.with_name(out.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    spec.save(str(tmp))
    # spec.save wrote config.json with the spec's config; vocabulary.json from the registered tokens
    (tmp / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False), encoding="utf-8")
    (tmp / "preprocessor_config.json").write_text(json.dumps({
        "chunk_length": 30, "feature_extractor_type": "WhisperFeatureExtractor",
        "feature_size": shape.n_mels, "hop_length": 160, "n_fft": 400, "n_samples": 480000,
        "nb_max_frames": 3000, "padding_side": "right", "padding_value": 0.0,
        "processor_class": "WhisperProcessor", "return_attention_mask": False, "sampling_rate": 16000,
    }, indent=2) + "\n", encoding="utf-8")
    (tmp / "shape.json").write_text(json.dumps(dict(name=name, seed=seed, vocabulary=len(vocabulary),
                                                     **shape.__dict__), indent=2) + "\n", encoding="utf-8")
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def disk_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", default=[], metavar="NAME",
                    help=f"shapes to build (default all: {', '.join(SHAPES)})")
    ap.add_argument("--out", type=Path, default=None, help="root folder (default ~/.cache/tokenmap/shapes)")
    ap.add_argument("--force", action="store_true", help="rebuild models that exist")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if n not in SHAPES]
    if unknown:
        ap.error(f"unknown shape {unknown[0]!r}; shapes: {', '.join(SHAPES)}")
    root = (args.out or default_root()).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    for name in args.names or list(SHAPES):
        out = root / name
        if (out / "model.bin").is_file() and not args.force:
            print(f"{name:15s} exists  {disk_size(out) / 1e6:8.0f} MB  {out}", flush=True)
            continue
        print(f"{name:15s} building ...", flush=True)
        t0 = time.perf_counter()
        build(name, SHAPES[name], out, seed=args.seed)
        print(f"{name:15s} built   {disk_size(out) / 1e6:8.0f} MB  {out}  ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
