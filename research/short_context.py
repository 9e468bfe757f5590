"""Record greedy decoding of short files at several encoder context lengths, then replay guard rules.

    python research/short_context.py record -o /tmp/sc-train.jsonl --split train --per-lang 60
    python research/short_context.py replay /tmp/sc-train.jsonl

``record``: every Asterisk prompt of a split (16 kHz G.722, en/es/fr; ``--per-lang`` of each,
in a seeded order) is decoded greedily (fork, base, int8, 2 threads, timestamps) on the
full 30 s window and on shorter encoder inputs: the window's first ``audio + margin`` seconds
of features, for each margin of ``--margins``. Each line keeps, per context, the tokens,
``finished``, score, ``no_speech_prob`` and the encoder and decoder seconds.

``replay``: model-free, every (margin, minimum context, guard) combination of
:data:`tokenmap.context` rules is applied to the recorded lines: a file whose short result the
guard rejects takes the full-context result, at the cost of both. It prints WER against the
references next to full-context WER, the guard's firing rate and the time against full context.
"""
import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
VOICES = {"en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June"}
SOUNDS = Path("/usr/share/asterisk/sounds")


def files(split: str, per_lang: int, seed: int = 0):
    for lang, voice in VOICES.items():
        rows = []
        for line in (ROOT / "corpora/telephony" / lang / f"{split}.tsv").read_text().splitlines():
            name, _, text = line.partition("\t")
            path = SOUNDS / voice / f"{name}.g722"
            if path.exists() and text.strip():
                rows.append((lang, name, text, path))
        random.Random(seed).shuffle(rows)
        yield from rows[:per_lang] if per_lang else rows


def record(args):
    import ctranslate2
    from faster_whisper.feature_extractor import FeatureExtractor

    from tokenmap import resolve_model
    from tokenmap.context import AudioContext
    from tokenmap.decode.rules import GREEDY_KW
    from tokenmap_bench import decode_g722

    model_dir = resolve_model("base", download=False)
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="int8", intra_threads=2)
    vocab = (model_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    extractor = FeatureExtractor(feature_size=80)
    margins = [float(m) for m in args.margins.split(",")]
    fixed = [float(m) for m in args.fixed.split(",") if m]
    out = open(args.out, "w", encoding="utf-8")
    for n, (lang, name, text, path) in enumerate(files(args.split, args.per_lang)):
        audio = decode_g722(str(path))
        mel = extractor(audio)[:, :-1][:, :3000]
        content = mel.shape[1]
        mel = np.pad(mel, ((0, 0), (0, 3000 - content)))[None].astype(np.float32)
        prompt = [vocab.index("<|startoftranscript|>"), vocab.index(f"<|{lang}|>"), vocab.index("<|transcribe|>")]
        line = {"lang": lang, "name": name, "ref": text, "seconds": content / 100, "contexts": {}}
        contexts = {"full": 3000}
        contexts.update({f"{m:g}": AudioContext("auto", margin_s=m).frames(content / 100) or 3000 for m in margins})
        contexts.update({f"min{m:g}": AudioContext("auto", margin_s=0, min_s=m).frames(content / 100) or 3000
                         for m in fixed})
        done = {}
        for key, frames in contexts.items():
            if frames in done:  # the same input as another context: the same result
                line["contexts"][key] = line["contexts"][done[frames]]
                continue
            done[frames] = key
            t0 = time.perf_counter()
            enc = model.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(mel[:, :, :frames])))
            t1 = time.perf_counter()
            res = model.generate(enc, [prompt], **GREEDY_KW)[0]
            t2 = time.perf_counter()
            tokens = list(res.sequences_ids[0])
            line["contexts"][key] = {"frames": frames, "tokens": tokens, "score": res.scores[0],
                                     "no_speech_prob": res.no_speech_prob,
                                     "finished": len(tokens) + len(prompt) < GREEDY_KW["max_length"] - 1,
                                     "encode_s": t1 - t0, "decode_s": t2 - t1}
        out.write(json.dumps(line) + "\n")
        out.flush()
        if n % 20 == 0:
            print(f"{n} files", file=sys.stderr)


def replay(args):
    from tokenizers import Tokenizer

    from tokenmap import resolve_model
    from tokenmap.context import AudioContext
    from tokenmap.decode.special import SpecialTokens
    from tokenmap_bench import wer

    model_dir = resolve_model("base", download=False)
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    special = SpecialTokens.from_model_dir(str(model_dir))
    lines = [json.loads(x) for x in Path(args.path).read_text().splitlines() if x.strip()]
    global GUARDS
    GUARDS = _guards()

    def text(tokens):
        return tok.decode([t for t in tokens if t < special.eot]).strip()

    full_time = sum(c["encode_s"] + c["decode_s"] for x in lines for c in [x["contexts"]["full"]])
    full_wer = wer((x["ref"], text(x["contexts"]["full"]["tokens"])) for x in lines)
    print(f"{len(lines)} files, full context: WER {100 * full_wer:.2f} %, {full_time:.1f} s")
    print(f"{'margin':>6} {'min':>4} {'guard':>10} {'WER %':>6} {'dWER':>6} {'fired %':>7} {'same %':>6} "
          f"{'time s':>7} {'speed':>6}")
    margins = sorted({k for x in lines for k in x["contexts"] if k[0].isdigit()}, key=float)
    mins = [0.0] + sorted({float(k[3:]) for x in lines for k in x["contexts"] if k.startswith("min")})
    for margin in margins:
        for min_s in mins:
            for guard_name, guard in GUARDS.items():
                ctx = AudioContext("auto", margin_s=float(margin), min_s=min_s)
                hyps, secs, fired, same = [], 0.0, 0, 0
                for x in lines:
                    frames = ctx.frames(x["seconds"])
                    chosen = _closest(x["contexts"], frames, margin)
                    short = x["contexts"][chosen] if chosen else x["contexts"]["full"]
                    cost = short["encode_s"] + short["decode_s"]
                    result = short
                    if chosen and guard is not None and guard.reason(
                            short["tokens"], seconds=x["seconds"], score=short["score"],
                            no_speech_prob=short["no_speech_prob"], finished=short["finished"],
                            timestamp_begin=special.timestamp_begin, text=text(short["tokens"])):
                        fired += 1
                        result = x["contexts"]["full"]
                        cost += result["encode_s"] + result["decode_s"]
                    same += result["tokens"] == x["contexts"]["full"]["tokens"]
                    hyps.append((x["ref"], text(result["tokens"])))
                    secs += cost
                w = wer(hyps)
                print(f"{margin:>6} {min_s:4.0f} {guard_name:>10} {100 * w:6.2f} {100 * (w - full_wer):+6.2f} "
                      f"{100 * fired / len(lines):7.1f} {100 * same / len(lines):6.1f} {secs:7.1f} "
                      f"{full_time / secs:6.2f}")


def _guards() -> dict:
    from tokenmap.decode.guarding import Guard

    return {"none": None, "guard": Guard(), "lp-1.0": Guard(logprob=-1.0), "lp-1.25": Guard(logprob=-1.25),
            "no-lp": Guard(logprob=-99.0), "past-0.75": Guard(past_audio_s=0.75),
            "past-1.0": Guard(past_audio_s=1.0)}


def _closest(contexts: dict, frames, margin) -> str | None:
    """The recorded context of exactly ``frames`` (None: the full window, or not recorded)."""
    if frames is None:
        return None
    return next((key for key, c in contexts.items() if key != "full" and c["frames"] == frames), None)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("-o", "--out", required=True)
    r.add_argument("--split", default="train")
    r.add_argument("--per-lang", type=int, default=60)
    r.add_argument("--margins", default="1,2,3,4,6,8,10")
    r.add_argument("--fixed", default="5,8,10,15", help="shortest contexts (s) recorded on their own")
    p = sub.add_parser("replay")
    p.add_argument("path")
    args = ap.parse_args()
    record(args) if args.cmd == "record" else replay(args)


if __name__ == "__main__":
    main()
