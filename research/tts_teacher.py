"""Can a text-only inventory teach the map the model's wording? Teacher transcripts of TTS audio.

    python research/tts_teacher.py -o bench-data/teacher-tts-en.jsonl [--voice rms] [--lang en]

The learned map's gain over the phrase inventory comes from the model's transcripts of other
recordings of the prompts (``benchmarks/telephone_teacher.py``). An operator who has only the
inventory's text could make such recordings with a speech synthesizer. This script speaks every
inventory sentence of ``corpora/telephony/<lang>/{train,test}.txt`` with Debian's ``flite`` (voice
``--voice``), transcribes it with plain greedy decoding (fork, base, int8, timestamps on), and writes
one JSON line per segment in the teacher format (text, domain, lang, source), to be given to
``research/scripted_bench.py --teacher`` or ``tokenmap build --teacher``. It never reads the audio
the bench measures.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from tokenmap_bench import GreedyBase, features

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--voice", default="rms", help="flite voice (kal16, awb, rms, slt)")
    ap.add_argument("--lang", default="en")
    args = ap.parse_args()
    base = GreedyBase()
    sentences = [s for split in ("train", "test")
                 for s in (ROOT / "corpora/telephony" / args.lang / f"{split}.txt").read_text().splitlines() if s]
    n = 0
    with tempfile.TemporaryDirectory() as tmp, open(args.out, "w", encoding="utf-8") as out:
        wav = Path(tmp) / "s.wav"
        for i, sentence in enumerate(sentences):
            subprocess.run(["flite", "-voice", args.voice, "-t", sentence, "-o", str(wav)], check=True)
            _, ids = base.decode(features(SimpleNamespace(audio=str(wav)))[0], args.lang)
            for text in base.texts(ids):
                out.write(json.dumps({"text": text, "domain": "telephony", "lang": args.lang,
                                      "source": f"flite-{args.voice}"}, ensure_ascii=False) + "\n")
            n += 1
            if i % 100 == 0:
                print(f"{i} of {len(sentences)} sentences", file=sys.stderr)
    print(f"{n} sentences transcribed -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
