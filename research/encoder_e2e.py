"""Does the stock-encoder worker win after its IPC? Interleaved, in one process.

    TOKENMAP_STOCK_CT2=DIR python research/encoder_e2e.py --reps 15 --e2e-reps 3

1. encode only: the fork's in-process ``encode`` against
   :class:`tokenmap.runtime.stock_encoder.StockEncoder` (features into shared memory,
   stock CTranslate2 in the worker, output copied back into a StorageView), on
   one real 30 s window, alternating which goes first; min, median and the
   per-pair ratio, and whether the outputs are equal.
2. end to end: ``tokenmap.transcriber.load_model`` with ``encoder="fork"`` and
   ``encoder="stock"`` (both with the default float32 decoder, no map)
   transcribing every file of tests/data in turn, alternating; summed wall time
   per round and whether the texts are equal.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def window(path: Path):
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor

    mel = FeatureExtractor(feature_size=80)(decode_audio(str(path)))[:, :3000]
    return np.ascontiguousarray(np.pad(mel, ((0, 0), (0, 3000 - mel.shape[1])))[None], dtype=np.float32)


def encode_only(model_dir, reps: int) -> None:
    import ctranslate2

    from tokenmap.runtime.stock_encoder import StockEncoder

    fork = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="int8", intra_threads=2)
    stock = StockEncoder(model_dir, "int8", threads=2)
    mel = window(ROOT / "tests/data/en-basic-pbx-ivr-main.flac")
    systems = {"fork": lambda: fork.encode(ctranslate2.StorageView.from_array(mel)),
               "stock-worker": lambda: stock.encode(ctranslate2.StorageView.from_array(mel))}
    outs = {name: np.asarray(fn()) for name, fn in systems.items()}  # warm-up
    times = {name: [] for name in systems}
    for r in range(reps):
        for name in (list(systems) if r % 2 == 0 else list(systems)[::-1]):
            t0 = time.perf_counter()
            systems[name]()
            times[name].append(time.perf_counter() - t0)
    ratios = [f / s for f, s in zip(times["fork"], times["stock-worker"])]
    for name, ts in times.items():
        print(f"encode {name:13s} min {min(ts):.3f} s  median {statistics.median(ts):.3f} s")
    print(f"encode fork/stock-worker per pair: median {statistics.median(ratios):.3f}, "
          f"range {min(ratios):.3f}-{max(ratios):.3f}; ratio of medians "
          f"{statistics.median(times['fork']) / statistics.median(times['stock-worker']):.3f}; "
          f"outputs equal: {np.array_equal(outs['fork'], outs['stock-worker'])}")
    stock.close()


def end_to_end(model_dir, reps: int) -> None:
    from tokenmap.transcriber import TranscribeOptions, load_model, transcribe_file

    files = sorted((ROOT / "tests/data").glob("*.flac"))
    models = {name: load_model(str(model_dir), "int8", 2, encoder=name) for name in ("fork", "stock")}
    opts = {f: TranscribeOptions(language=f.name[:2], vad=False) for f in files}
    texts = {name: [transcribe_file(m, f, opts[f]).text for f in files] for name, m in models.items()}  # warm-up
    walls = {name: [] for name in models}
    for r in range(reps):
        for name in (list(models) if r % 2 == 0 else list(models)[::-1]):
            t0 = time.perf_counter()
            for f in files:
                transcribe_file(models[name], f, opts[f])
            walls[name].append(time.perf_counter() - t0)
    ratios = [f / s for f, s in zip(walls["fork"], walls["stock"])]
    print(f"end to end, {len(files)} files of tests/data per round, {reps} rounds: "
          + ", ".join(f"{n} median {statistics.median(w):.2f} s" for n, w in walls.items())
          + f"; fork/stock per round median {statistics.median(ratios):.3f}, "
          f"range {min(ratios):.3f}-{max(ratios):.3f}; "
          f"texts equal: {texts['fork'] == texts['stock']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--e2e-reps", type=int, default=3)
    args = ap.parse_args()
    from tokenmap import resolve_model
    from tokenmap.runtime.stock_encoder import stock_dir, stock_installed

    if not stock_installed():
        sys.exit(f"no stock CTranslate2 in {stock_dir()}: run `make stock-encoder`")
    model_dir = resolve_model("base", download=False)
    encode_only(model_dir, args.reps)
    if args.e2e_reps:
        end_to_end(model_dir, args.e2e_reps)


if __name__ == "__main__":
    main()
