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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from telephone_teacher import segments  # noqa: E402
from tokenmap.decode.reference import GREEDY_KW  # noqa: E402
from tokenmap.decode.rules import SpecialTokens  # noqa: E402
from tokenmap.models import resolve_model  # noqa: E402
from tokenmap_bench.harness import features  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--voice", default="rms", help="flite voice (kal16, awb, rms, slt)")
    ap.add_argument("--lang", default="en")
    args = ap.parse_args()
    import ctranslate2

    from tokenmap.textok import TextTokenizer

    model_dir = resolve_model("base", download=False)
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="int8", intra_threads=2)
    special = SpecialTokens.from_model_dir(str(model_dir))
    tok = TextTokenizer.from_file(model_dir / "tokenizer.json")
    vocab = (model_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    prompt = [special.sot, vocab.index(f"<|{args.lang}|>"), vocab.index("<|transcribe|>")]
    sentences = [s for split in ("train", "test")
                 for s in (ROOT / "corpora/telephony" / args.lang / f"{split}.txt").read_text().splitlines() if s]
    n = 0
    with tempfile.TemporaryDirectory() as tmp, open(args.out, "w", encoding="utf-8") as out:
        wav = Path(tmp) / "s.wav"
        for i, sentence in enumerate(sentences):
            subprocess.run(["flite", "-voice", args.voice, "-t", sentence, "-o", str(wav)], check=True)
            enc = model.encode(features(SimpleNamespace(audio=str(wav)))[0])
            res = model.generate(enc, [prompt], **GREEDY_KW)[0]
            for seg in segments(res.sequences_ids[0], special.timestamp_begin):
                text = tok.decode(seg).strip()
                if text:
                    out.write(json.dumps({"text": text, "domain": "telephony", "lang": args.lang,
                                          "source": f"flite-{args.voice}"}, ensure_ascii=False) + "\n")
            n += 1
            if i % 100 == 0:
                print(f"{i} of {len(sentences)} sentences", file=sys.stderr)
    print(f"{n} sentences transcribed -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
