#!/usr/bin/env python3
"""Before/after speed of a change to the decode path: two source trees of tokenmap, interleaved, a fresh process
(and model) per tree and repetition, the encoder pinned in both. Prints seconds per workload and the ratio.

    git worktree add /tmp/before a45cca5
    .venv/bin/python benchmarks/tree_speed.py /tmp/before . --reps 3

Workloads: 30 short Asterisk Italian prompts (``bench-data/wer69``, ``benchmarks/wer_sets.py``), the 25 s IVR menu of
``tests/data`` four times (dense windows), and a 3 min file of the test clips back to back, sequential and with
``BatchedInferencePipeline(batch_size=8)``. Greedy, temperature 0, no map.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from pathlib import Path
import numpy as np
import tokenmap
from tokenmap import BatchedInferencePipeline, WhisperModel
from faster_whisper.audio import decode_audio
root, encoder = Path(sys.argv[1]), sys.argv[2]
manifest = [json.loads(l) for l in open(root / "bench-data/wer69/manifest.jsonl")]
prompts = [root / "bench-data/wer69" / r["audio"] for r in manifest
           if r["set"] == "asterisk-it" and r["split"] == "test"][:30]
data = root / "tests/data"
menu = decode_audio(str(data / "en-basic-pbx-ivr-main.flac"))
clips = [decode_audio(str(p)) for p in sorted(data.glob("en-*.flac"))]
long = np.concatenate(clips * 6)[: 16000 * 180]
model = WhisperModel("base", compute_type="int8", cpu_threads=2, encoder=encoder)
def run(fn):
    t = time.perf_counter(); fn(); return time.perf_counter() - t
def text(pipeline, audio, **kw):
    return " ".join(s.text for s in pipeline.transcribe(audio, beam_size=1, temperature=0.0, **kw)[0])
out = {}
out["short"] = run(lambda: [text(model, str(p), language="it") for p in prompts])
out["dense"] = run(lambda: [text(model, menu, language="en", vad_filter=False) for _ in range(4)])
out["3min"] = run(lambda: text(model, long, language="en", vad_filter=True))
batched = BatchedInferencePipeline(model=model)
out["3min-batched"] = run(lambda: text(batched, long, language="en", batch_size=8))
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--encoder", default="openvino:int8-full")
    args = parser.parse_args()
    times: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    for rep in range(args.reps):
        order = ("before", "after") if rep % 2 == 0 else ("after", "before")
        for name in order:
            tree = getattr(args, name).resolve()
            env = dict(os.environ, PYTHONPATH=str(tree))
            line = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), args.encoder], env=env, check=True,
                                  capture_output=True, text=True).stdout.strip().splitlines()[-1]
            for work, seconds in json.loads(line).items():
                times[name].setdefault(work, []).append(seconds)
            print(rep, name, line, flush=True)
    for work in times["before"]:
        b, a = (sorted(times[n][work]) for n in ("before", "after"))
        print(f"{work:14s} before {b} after {a}  median before/after {b[len(b) // 2] / a[len(a) // 2]:.3f}")


if __name__ == "__main__":
    main()
