#!/usr/bin/env python3
"""What does faster-whisper's per-file garbage collection cost a ``transcribe`` of a file path?

One ``tokenmap.WhisperModel`` per audio context (base, int8, 2 threads, no map, no session cache,
language given, greedy, no VAD) transcribes each file of a manifest by its path, alternating file by
file between ``tokenmap.audio.decode_pcm`` with the full ``gc.collect()`` faster-whisper runs after
every file (``collect``: what ``transcribe`` paid before) and without it (``skip``: what it does now
with PyAV 18), in rotating order, medians of ``--reps``. Prints the sums and ``collect / skip``.

    .venv/bin/python research/decode_gc.py --manifest bench-data/e2e-all.jsonl --reps 3
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import time
from pathlib import Path

import tokenmap
import tokenmap.audio as tm_audio

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest", default=str(ROOT / "bench-data/e2e-all.jsonl"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--contexts", default="full,auto")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.manifest)]
    base = Path(args.manifest).parent
    models = {c: tokenmap.WhisperModel("base", compute_type="int8", cpu_threads=2, session_cache=False,
                                       audio_context=c) for c in args.contexts.split(",")}
    variants = {"collect": lambda: True, "skip": lambda: False}
    sums = collections.defaultdict(float)
    for i, row in enumerate(rows):
        path = str(base / row["audio"])
        for context, model in models.items():
            times = collections.defaultdict(list)
            for rep in range(args.reps + 1):  # the first round warms up
                order = list(variants) if (i + rep) % 2 == 0 else list(variants)[::-1]
                for name in order:
                    tm_audio._resampler_cycles = variants[name]
                    t = time.perf_counter()
                    segments, _ = model.transcribe(path, language=row["lang"], temperature=0.0, vad_filter=False)
                    list(segments)
                    if rep:
                        times[name].append(time.perf_counter() - t)
            for name in variants:
                sums[(context, name)] += statistics.median(times[name])
    for context in models:
        collect, skip = sums[(context, "collect")], sums[(context, "skip")]
        print(f"{context}: {len(rows)} files, with the collection {collect:.2f} s, without {skip:.2f} s, "
              f"collect / skip {collect / skip:.3f}")


if __name__ == "__main__":
    main()
