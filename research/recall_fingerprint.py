"""Does a fingerprint of the encoder output find a prompt that was recorded elsewhere?

    python research/recall_fingerprint.py [--lang en]

Encodes every 8 kHz Asterisk prompt of the language (test and train splits, Debian's
asterisk-core-sounds wav files) and every 16 kHz test prompt of the bench's telephony set
(fork, base, int8, 2 threads), fingerprints each at frame 0 two ways (one mean of the first
second of encoder frames; :func:`tokenmap.maps.audio_fingerprints.fingerprint`, 5 chunk means), and counts
how often the nearest 8 kHz fingerprint is the same prompt (same text, punctuation aside).
"""
import argparse
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import tokenmap  # noqa: F401  (first: the thread wait policy)

# isort: split
import ctranslate2

from tokenmap import resolve_model
from tokenmap.maps.audio_fingerprints import FRAMES, fingerprint
from tokenmap_bench import features

ROOT = Path(__file__).resolve().parents[1]

VOICES = {"en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June"}


def both(model, audio):
    frames = np.asarray(model.encode(features(SimpleNamespace(audio=str(audio)))[0]))[0]
    mean = frames[:FRAMES].mean(axis=0)
    return mean / np.linalg.norm(mean), fingerprint(frames, 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lang", default="en")
    args = ap.parse_args()
    model = ctranslate2.models.Whisper(str(resolve_model("base", download=False)), device="cpu",
                                       compute_type="int8", intra_threads=2)
    norm = lambda s: re.sub(r"[^\w ]", "", s.lower()).strip()  # noqa: E731
    texts, refs = [], []
    for split in ("test", "train"):
        for line in (ROOT / f"corpora/telephony/{args.lang}/{split}.tsv").read_text().splitlines():
            name, text = line.split("\t", 1)
            wav = Path("/usr/share/asterisk/sounds") / VOICES[args.lang] / f"{name}.wav"
            if wav.exists():
                texts.append(norm(text))
                refs.append(both(model, wav))
    hits, n = [0, 0], 0
    for line in (ROOT / "bench-data/full.jsonl").read_text().splitlines():
        u = json.loads(line)
        if u["set"] == "telephony" and u["lang"] == args.lang:
            n += 1
            for k, query in enumerate(both(model, ROOT / "bench-data" / u["audio"])):
                best = int(np.argmax(np.stack([r[k] for r in refs]) @ query))
                hits[k] += texts[best] == norm(u["text"])
    print(f"{len(refs)} recordings, {n} prompts: nearest is the same prompt for {hits[0]} (one mean), "
          f"{hits[1]} (5 chunk means)")


if __name__ == "__main__":
    main()
