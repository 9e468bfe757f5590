"""What does encoding a batch of windows in smaller pieces cost in time, and save in the worker's memory?

    python research/batch_encode_rows.py [--batch 8] [--rounds 3]

faster-whisper's ``BatchedInferencePipeline`` encodes ``batch_size`` windows of 30 s in one call; the
stock worker's peak resident memory grows with the rows of one call (the encoder's attention buffers
are per row). For each piece size (rows per encoder call), a fresh ``StockWorker`` (base, int8,
2 threads) encodes the same batch of real speech windows (the bundled IVR recording, repeated) twice
after a warm-up; the median of two is kept, piece sizes alternate within each round, and the
worker's peak RSS (``VmHWM``) is read at the end.
"""
import argparse
import statistics
import time

import tokenmap  # noqa: F401  (first: the thread policy before CTranslate2 loads)

# isort: split
import numpy as np
from faster_whisper.audio import decode_audio
from faster_whisper.feature_extractor import FeatureExtractor

from tokenmap.models import resolve_model
from tokenmap.runtime.stock_worker import StockWorker


def peak_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run(model_dir: str, batch: np.ndarray, rows: int) -> tuple[float, float]:
    encoder = StockWorker(model_dir, "int8", threads=2)
    try:
        encoder.encode(batch[:1])
        times = []
        for _ in range(2):
            started = time.perf_counter()
            for i in range(0, len(batch), rows):
                encoder.encode(batch[i: i + rows])
            times.append(time.perf_counter() - started)
        return statistics.median(times), peak_mb(encoder._proc.pid)
    finally:
        encoder.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pieces", default="8,4,2,1", help="rows per encoder call, comma-separated")
    args = ap.parse_args()
    model_dir = str(resolve_model("base", download=False))
    feats = FeatureExtractor()(decode_audio("tests/data/en-basic-pbx-ivr-main.flac"))[:, :3000]
    window = np.pad(feats, ((0, 0), (0, 3000 - feats.shape[1])))
    batch = np.ascontiguousarray(np.stack([np.roll(window, 37 * i, axis=1) for i in range(args.batch)]),
                                 dtype=np.float32)
    pieces = [int(p) for p in args.pieces.split(",")]
    results = {p: [] for p in pieces}
    for r in range(args.rounds):
        order = pieces[r % len(pieces):] + pieces[: r % len(pieces)]
        for p in order:
            results[p].append(run(model_dir, batch, p))
    base = statistics.median(t for t, _ in results[pieces[0]])
    print(f"{args.batch} windows of 30 s, base int8, 2 threads (stock CTranslate2 in tokenmap's worker)")
    print("| rows per call | encode s (median of rounds) | vs one call | worker peak RSS |")
    print("| --- | --- | --- | --- |")
    for p in pieces:
        t = statistics.median(t for t, _ in results[p])
        mb = max(m for _, m in results[p])
        print(f"| {p} | {t:.2f} | {t / base:.2f} | {mb:.0f} MB |")


if __name__ == "__main__":
    main()
