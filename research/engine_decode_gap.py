"""Greedy ``generate`` on the fork against stock CTranslate2, same features, one process per engine, interleaved.

Run: ``python research/engine_decode_gap.py tests/data/en-basic-pbx-ivr-main.flac --rounds 4``.
Prints per round each engine's encode and generate medians (ms) and the token counts: the fork with
packed GEMM for its decoder (``tokenmap.runtime.packing``), the fork without, and stock 4.8.5.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, time, statistics
import tokenmap  # first: packed GEMM for the fork (tokenmap.runtime.packing)
import numpy as np
import ctranslate2
from faster_whisper.audio import decode_audio
from faster_whisper.feature_extractor import FeatureExtractor
path, model_dir, reps, frames = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
m = ctranslate2.models.Whisper(model_dir, compute_type="int8", intra_threads=2)
f = FeatureExtractor()(decode_audio(path))[:, :3000]
f = np.pad(f, ((0, 0), (0, 3000 - f.shape[1])))[None][..., :frames]
sv = ctranslate2.StorageView.from_array(np.ascontiguousarray(f))
prompt = [[50258, 50259, 50359]]
enc_t, gen_t = [], []
for _ in range(reps):
    t = time.perf_counter(); e = m.encode(sv); enc_t.append(time.perf_counter() - t)
    t = time.perf_counter(); r = m.generate(e, prompt, beam_size=1, max_length=448, return_scores=True)
    gen_t.append(time.perf_counter() - t)
print(json.dumps({"version": ctranslate2.__version__, "encode": statistics.median(enc_t) * 1e3,
                  "generate": statistics.median(gen_t) * 1e3, "tokens": len(r[0].sequences_ids[0])}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("audio")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--frames", type=int, default=3000)
    args = ap.parse_args()
    from tokenmap.models import resolve_model
    from tokenmap.runtime.stock_encoder import stock_dir

    model_dir = str(resolve_model("base", download=False))
    from tokenmap.runtime.packing import child_environment

    base = child_environment()  # each child decides on packing for itself
    envs = {"fork": dict(base), "fork-unpacked": dict(base, TOKENMAP_PACKED_GEMM="0"),
            "stock": dict(base, PYTHONPATH=str(stock_dir()))}
    for env in envs.values():  # the runtime settings tokenmap gives itself
        env.update(OMP_WAIT_POLICY="ACTIVE", GOMP_SPINCOUNT="100000", OPENBLAS_NUM_THREADS="1")
    for r in range(args.rounds):
        row = {}
        for name, env in envs.items():
            out = subprocess.run([sys.executable, "-c", CHILD, str(Path(args.audio).resolve()), model_dir,
                                  str(args.reps), str(args.frames)], env=env, capture_output=True, text=True,
                                 check=True)
            row[name] = json.loads(out.stdout.strip().splitlines()[-1])
        stock = row["stock"]["generate"]
        print(r, json.dumps(row), "generate fork/stock %.2f, unpacked fork/stock %.2f" % (
            row["fork"]["generate"] / stock, row["fork-unpacked"]["generate"] / stock))


if __name__ == "__main__":
    main()
