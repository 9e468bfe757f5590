"""Does detecting the language on the first window as it is transcribed agree with faster-whisper's detection?

    python research/first_window_detection.py [--per-set 40] [--json results/detect/agreement.json]

faster-whisper detects on ``features[..., :3000]``, which for a file under 30 s holds one more frame (the
160 zero samples it appends) than the window it then transcribes; ``tokenmap.windows.first_window``
drops it, so the encoder pass is shared. For files of the bench manifest and of the WER sets (every
language there), both inputs are encoded (stock CTranslate2 in tokenmap's worker, base int8, 2 threads)
and ``detect_language`` run on each: how often the top language agrees, the largest probability change,
and, with ``tokenmap.windows.CONFIDENT`` (the first window's answer taken only above it), how often the
language tokenmap reports differs from faster-whisper's and what share of files saves the encoder pass.
``--from-json`` summarises an earlier run without decoding.
"""

import argparse
import collections
import json
from pathlib import Path

import tokenmap  # first: it sets the engine's thread policy before CTranslate2 loads

# isort: split
import ctranslate2
import numpy as np
from faster_whisper.audio import decode_audio, pad_or_trim

from tokenmap.windows import CONFIDENT, first_window

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = ("bench-data/full.jsonl", "bench-data/wer-150/manifest.jsonl")


def files(per_set: int):
    """Up to ``per_set`` files of each (manifest set, language), in manifest order."""
    taken = collections.Counter()
    for manifest in MANIFESTS:
        path = ROOT / manifest
        if not path.exists():
            continue
        for line in open(path):
            row = json.loads(line)
            key = (row["set"], row["lang"])
            if taken[key] < per_set:
                taken[key] += 1
                yield key, path.parent / row["audio"]


def detect(model, features):
    view = ctranslate2.StorageView.from_array(np.ascontiguousarray(pad_or_trim(features[..., :3000])[None]))
    return dict(model.model.detect_language(model.model.encode(view))[0])


def summarise(rows: list[dict]) -> None:
    per_key = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        per_key[(r["set"], r["lang"])][0] += 1
        per_key[(r["set"], r["lang"])][1] += r["stock"] == r["first_window"]
    for (s, lang), (n, same) in sorted(per_key.items()):
        print(f"{s:12s} {lang}: {same}/{n} agree")
    n, same = len(rows), sum(r["stock"] == r["first_window"] for r in rows)
    changes = [r["max_prob_change"] for r in rows]
    print(f"all: {same}/{n} agree; probability change at most {max(changes):.4f}, median {np.median(changes):.5f}")
    right = {k: sum(r[k][2:-2] == r["lang"] for r in rows) for k in ("stock", "first_window")}
    print(
        f"correct language: faster-whisper's window {right['stock']}/{n}, the first window {right['first_window']}/{n}"
    )
    confident = [r for r in rows if r["p_first_window"] >= CONFIDENT]
    differ = sum(r["stock"] != r["first_window"] for r in confident)
    print(
        f"with CONFIDENT={CONFIDENT}: {len(confident)}/{n} files save the encoder pass; "
        f"language differs from faster-whisper's on {differ}"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-set", type=int, default=40)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--from-json", type=Path, default=None, help="summarise this earlier --json")
    args = ap.parse_args()
    if args.from_json:
        return summarise(json.loads(args.from_json.read_text()))
    model = tokenmap.WhisperModel("base", compute_type="int8", cpu_threads=2, session_cache=False)
    rows = []
    for key, audio in files(args.per_set):
        features = model.feature_extractor(decode_audio(str(audio)))
        stock, ours = detect(model, features), detect(model, first_window(features))
        top_s, top_o = max(stock, key=stock.get), max(ours, key=ours.get)
        change = max(abs(stock[t] - ours.get(t, 0.0)) for t in stock)
        rows.append(
            {
                "set": key[0],
                "lang": key[1],
                "audio": str(audio.relative_to(ROOT)),
                "stock": top_s,
                "first_window": top_o,
                "p_stock": stock[top_s],
                "p_first_window": ours[top_o],
                "max_prob_change": change,
                "frames": int(features.shape[-1]),
            }
        )
    summarise(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
