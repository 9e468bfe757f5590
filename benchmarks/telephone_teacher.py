"""Teacher transcripts and recall indexes for the scripted regime, from the 8 kHz prompt recordings.

    python benchmarks/telephone_teacher.py -o bench-data/teacher-train.jsonl \
        --recall bench-data/recall-train.trec --recall-inventory bench-data/recall-inventory.trec

The telephony bench decodes the 16 kHz G.722 Asterisk prompts of the *test*
split. Debian's asterisk-core-sounds-<lang>-wav packages carry the same
prompts as 8 kHz telephone audio. They are the same studio takes through
another codec, so nothing the bench measures may learn from the test split's
files in either codec.

This script transcribes the 8 kHz files with plain greedy decoding (fork,
base, int8, timestamps on, as faster-whisper decodes) and writes:

* ``-o``: one JSON line per segment of the *train* split's prompts (text,
  domain, lang, prompt name, recording key), for `tokenmap build --teacher`:
  the model's wording of prompts the bench never measures (tokenmap-learned);
* ``--recall``: a recall index of the train split's prompts (tokenmap-recall:
  disjoint from what is measured);
* ``--recall-inventory``: a recall index of every prompt, train and test, as
  an IVR that plays its whole inventory would record it (tokenmap-recall-inventory:
  the measured prompts' own studio takes heard through a telephone codec,
  reported under that label).

Each index's header lists the recordings it holds (``recordings``), which the
bench's leak guard reads.
"""
import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tokenmap_bench import GreedyBase, features, recording_key

ROOT = Path(__file__).resolve().parents[1]
SOUNDS = Path("/usr/share/asterisk/sounds")
VOICES = {"en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June"}


def prompts(lang: str, split: str):
    """``(name, 8 kHz wav path)`` of the split's prompts that have a recording."""
    for line in (ROOT / "corpora/telephony" / lang / f"{split}.tsv").read_text().splitlines():
        name = line.split("\t", 1)[0]
        wav = SOUNDS / VOICES[lang] / f"{name}.wav"
        if wav.exists():
            yield name, wav


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--out", required=True, help="teacher transcripts of the train split's prompts")
    ap.add_argument("--lang", action="append", default=[])
    ap.add_argument("--recall", help="a recall index of the train split's prompts")
    ap.add_argument("--recall-inventory", help="a recall index of every prompt, train and test")
    args = ap.parse_args()
    from tokenizers import Tokenizer

    from tokenmap.decode.recall import new_index

    base = GreedyBase()
    tokenizer = Tokenizer.from_file(str(base.model_dir / "tokenizer.json"))
    indexes = {split: (new_index(base.model_dir, tokenizer), path) for split, path in
               (("train", args.recall), ("inventory", args.recall_inventory)) if path}
    held = {split: [] for split in indexes}
    n = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for lang in args.lang or list(VOICES):
            for split in ("train", "test") if "inventory" in indexes else ("train",):
                for name, wav in prompts(lang, split):
                    mel = features(SimpleNamespace(audio=str(wav)))[0]  # the window transcribe() decodes
                    enc, ids = base.decode(mel, lang)
                    key = recording_key(str(wav))
                    for kind, (index, _) in indexes.items():
                        if kind == "inventory" or split == "train":
                            index.add_window(np.asarray(enc)[0], ids, base.special.timestamp_begin,
                                             mel=np.asarray(mel))
                            held[kind].append(key)
                    if split == "train":
                        for text in base.texts(ids):
                            out.write(json.dumps({"text": text, "domain": "telephony", "lang": lang,
                                                  "prompt": name, "recording": key, "source": "asterisk-8khz-wav"},
                                                 ensure_ascii=False) + "\n")
                    n += 1
    print(f"{n} prompts transcribed -> {args.out}", file=sys.stderr)
    for kind, (index, path) in indexes.items():
        index.header["recordings"] = sorted(set(held[kind]))
        index.save(path, force=True)
        print(f"{len(index)} segments of {len(set(held[kind]))} recordings -> {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
