"""Record plain greedy token streams (fork, base, int8) for model-free replays.

    python research/record_greedy.py bench-data/manifest.jsonl -o results/greedy.jsonl \
        [--set telephony] [--no-timestamps]

One JSON line per utterance: id, task, set, voice, prompt, tokens (no EOT), seconds (audio in the window).
The replay (research/replay.py) drafts against these streams with no model.
"""
import argparse
import json
import sys
import time

from tokenmap import resolve_model
from tokenmap.decode.reference import GREEDY_KW
from tokenmap.decode.special import SpecialTokens
from tokenmap_bench import features, load_manifest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--task", action="append", default=[])
    ap.add_argument("--no-timestamps", action="store_true")
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    import ctranslate2
    model_dir = resolve_model("base", download=False)
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="int8", intra_threads=2)
    special = SpecialTokens.from_model_dir(str(model_dir))
    vocab = (model_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    index = {t: i for i, t in enumerate(vocab)}
    utts = [u for u in load_manifest(args.manifest)
            if (not args.set or u.set in args.set) and (not args.task or u.task in args.task)]
    if args.limit:
        utts = utts[: args.limit]
    t0 = time.time()
    with open(args.out, "w") as out:
        for i, u in enumerate(utts):
            mel, audio_s = features(u)
            enc = model.encode(mel)
            prompt = [special.sot, index[f"<|{u.lang}|>"], index["<|transcribe|>"]]
            if args.no_timestamps:
                prompt.append(special.no_timestamps)
            res = model.generate(enc, [prompt], **GREEDY_KW)[0]
            out.write(json.dumps({"id": u.id, "task": u.task, "set": u.set, "voice": u.voice, "text": u.text,
                                  "prompt": prompt, "tokens": res.sequences_ids[0],
                                  "seconds": round(min(audio_s, 30.0), 3)}) + "\n")
            out.flush()
            if i % 20 == 0:
                print(f"{i}/{len(utts)} {time.time() - t0:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
