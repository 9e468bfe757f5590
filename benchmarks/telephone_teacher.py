"""Teacher transcripts for the scripted regime: plain greedy Whisper on the 8 kHz telephone recordings.

    python benchmarks/telephone_teacher.py -o bench-data/teacher-telephone.jsonl [--split test] [--recall FILE]

The telephony bench decodes the 16 kHz G.722 Asterisk prompts. Debian's
asterisk-core-sounds-<lang>-wav packages carry the same prompts as 8 kHz
telephone audio, the way calls carry them: another recording of the same
inventory. This script transcribes those with plain greedy decoding (fork,
base, int8, timestamps on, as faster-whisper decodes) and writes one JSON line
per segment (text, domain, lang, prompt name), to be given to
`tokenmap build --teacher`. With ``--recall`` it also writes a recall index of
those windows (what `tokenmap recall` would record from the same files), for
system tokenmap-recall. It never reads the audio the bench measures.
"""
import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tokenmap.decode.reference import GREEDY_KW  # noqa: E402
from tokenmap.models import resolve_model  # noqa: E402
from tokenmap.decode.rules import SpecialTokens  # noqa: E402
from tokenmap_bench.harness import features  # noqa: E402

SOUNDS = Path("/usr/share/asterisk/sounds")
VOICES = {"en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June"}


def segments(tokens, ts0):
    """Texts between timestamps (token lists)."""
    out, cur = [], []
    for t in tokens:
        if t >= ts0:
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        out.append(cur)
    return out


class GreedyBase:
    """Plain greedy Whisper base (fork, int8, 2 threads, timestamps on), as faster-whisper decodes a window."""

    def __init__(self):
        import ctranslate2

        from tokenmap.textok import TextTokenizer

        self.model_dir = resolve_model("base", download=False)
        self.model = ctranslate2.models.Whisper(str(self.model_dir), device="cpu", compute_type="int8",
                                                intra_threads=2)
        self.special = SpecialTokens.from_model_dir(str(self.model_dir))
        self.tok = TextTokenizer.from_file(self.model_dir / "tokenizer.json")
        self.vocab = (self.model_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()

    def decode(self, mel, lang: str):
        """``(encoder output, token ids)`` of one window's log-mel features in ``lang``."""
        enc = self.model.encode(mel)
        prompt = [self.special.sot, self.vocab.index(f"<|{lang}|>"), self.vocab.index("<|transcribe|>")]
        return enc, self.model.generate(enc, [prompt], **GREEDY_KW)[0].sequences_ids[0]

    def texts(self, ids) -> list[str]:
        """The texts of the segments of ``ids``, stripped, empty ones left out."""
        texts = (self.tok.decode(seg).strip() for seg in segments(ids, self.special.timestamp_begin))
        return [text for text in texts if text]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--split", action="append", default=[], help="test, train (default: test)")
    ap.add_argument("--lang", action="append", default=[])
    ap.add_argument("--recall", help="also write a recall index of the decoded windows here")
    args = ap.parse_args()
    from tokenizers import Tokenizer

    from tokenmap.recall import new_index

    base = GreedyBase()
    index = new_index(base.model_dir, Tokenizer.from_file(str(base.model_dir / "tokenizer.json"))) if args.recall else None
    n = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for lang in args.lang or list(VOICES):
            for split in args.split or ["test"]:
                for line in (ROOT / "corpora/telephony" / lang / f"{split}.tsv").read_text().splitlines():
                    name = line.split("\t", 1)[0]
                    wav = SOUNDS / VOICES[lang] / f"{name}.wav"
                    if not wav.exists():
                        continue
                    mel = features(SimpleNamespace(audio=str(wav)))[0]  # the window transcribe() decodes
                    enc, ids = base.decode(mel, lang)
                    if index is not None:
                        index.add_window(np.asarray(enc)[0], ids, base.special.timestamp_begin, mel=np.asarray(mel))
                    for text in base.texts(ids):
                        out.write(json.dumps({"text": text, "domain": "telephony", "lang": lang,
                                              "prompt": name, "source": "asterisk-8khz-wav"},
                                             ensure_ascii=False) + "\n")
                    n += 1
    print(f"{n} prompts transcribed -> {args.out}", file=sys.stderr)
    if index is not None:
        index.save(args.recall, force=True)
        print(f"{len(index)} segments -> {args.recall}", file=sys.stderr)


if __name__ == "__main__":
    main()
