#!/usr/bin/env python3
"""Two 1-thread replicas against one 2-thread engine for batched long-file decoding (stock CTranslate2).

Runs in the stock environment (``.venv-stock``: stock faster-whisper and CTranslate2 4.8.5) with the
worker's runtime settings. The speech chunks of a long file (faster-whisper's VAD, as its
``BatchedInferencePipeline`` makes them, padded to 30 s) are decoded in batches of ``--batch`` rows:
each batch encoded one window per call, then ``generate`` (greedy, timestamps off as the pipeline
runs it: ``without_timestamps=True``) on the batch.

* ``one``: one model, ``intra_threads=2``: the batches one after another (what both pipelines do);
* ``two``: one model, ``inter_threads=2, intra_threads=1``: two Python threads each take every other
  batch, so the two cores run two batches at once.

Configurations alternate round by round; the script prints each round's wall time and whether the
two configurations wrote the same tokens.

    .venv/bin/python -c 'import json, tokenmap.runtime.memory as m
    print(json.dumps(m.worker_environment()))' > /tmp/env.json
    .venv-stock/bin/python research/batch_parallel.py --env /tmp/env.json --audio LONG.wav --seconds 300
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", required=True, help="JSON of the worker's environment")
    p.add_argument("--audio", required=True)
    p.add_argument("--seconds", type=float, default=300.0, help="the first this many seconds of the file")
    p.add_argument("--model", default=os.path.expanduser("~/.cache/tokenmap/models/base"))
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child is None:  # re-run with the worker's environment (read by glibc and OpenMP at start)
        import subprocess

        env = dict(os.environ, **json.load(open(args.env)))
        for r in range(args.rounds):
            for mode in ("one", "two") if r % 2 == 0 else ("two", "one"):
                subprocess.run([sys.executable, __file__, *sys.argv[1:], "--child", mode], env=env, check=True)
        return
    run(args)


def run(args) -> None:
    import ctranslate2
    import numpy as np
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor
    from faster_whisper.vad import VadOptions, collect_chunks, get_speech_timestamps

    audio = decode_audio(args.audio)[: int(args.seconds * 16000)]
    stamps = get_speech_timestamps(audio, VadOptions(max_speech_duration_s=30, min_silence_duration_ms=160))
    chunks, _ = collect_chunks(audio, stamps, max_duration=30)
    fe = FeatureExtractor()
    feats = [np.pad(f, ((0, 0), (0, max(0, 3000 - f.shape[1]))))[:, :3000]
             for f in (fe(c)[:, :-1] if len(c) else fe(c) for c in chunks)]
    two = args.child == "two"
    model = ctranslate2.models.Whisper(args.model, device="cpu", compute_type="int8",
                                       intra_threads=1 if two else 2, inter_threads=2 if two else 1)
    prompt = [50258, 50259, 50359, 50363]  # sot, en, transcribe, notimestamps
    batches = [feats[i: i + args.batch] for i in range(0, len(feats), args.batch)]

    def decode(batch):
        outs = [np.asarray(model.encode(ctranslate2.StorageView.from_array(f[None].astype(np.float32)),
                                        to_cpu=True)) for f in batch]
        enc = ctranslate2.StorageView.from_array(np.concatenate(outs))
        res = model.generate(enc, [prompt] * len(batch), beam_size=1, max_length=448, suppress_blank=True)
        return [r.sequences_ids[0] for r in res]

    decode(batches[0][:1])  # warm-up
    t = time.perf_counter()
    if two:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(2) as pool:
            tokens = [t for part in pool.map(decode, batches) for t in part]
    else:
        tokens = [t for b in batches for t in decode(b)]
    wall = time.perf_counter() - t
    digest = hash(tuple(tuple(t) for t in tokens)) & 0xFFFFFF
    print(f"{args.child}: {len(feats)} chunks in {len(batches)} batches, {wall:.2f} s, tokens {sum(map(len, tokens))}, "
          f"digest {digest:06x}", flush=True)


if __name__ == "__main__":
    main()
