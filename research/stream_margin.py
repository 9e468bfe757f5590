#!/usr/bin/env python3
"""Streaming on a short audio context: which margin after the live buffer pays?

Each stream is played as fast as possible in 1 s updates by ``tokenmap.stream.live.StreamTranscriber``
(``scratch="generate"``: every update is also encoded as 30 s and decoded from scratch with plain
``generate``, as whisper_streaming-style tools do), once per margin, the margins interleaved stream by
stream in one process (one ``StreamModel``, loaded and ready before the first stream, whose context is
set for each run).
Per margin: the cost of an update (encode + decode) over the cost from scratch (ratio of sums), and
the corpus WER of the committed text against the stream's reference.

Streams: the IVR fixture of the tests and the bench's ``calls`` windows (real Asterisk prompts back to
back, en/es/fr, about 22 s each) of ``bench-data/manifest.jsonl``; ``--split`` takes the windows of even
(``choose``) or odd (``report``) position per language, so a margin chosen on one half is reported on
the other.

    .venv/bin/python research/stream_margin.py --split choose --margins 4,3,2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import tokenmap  # noqa: F401  (its runtime settings first)
from tokenmap.audio import load_audio
from tokenmap.context import AudioContext
from tokenmap.stream.audio import FileSource
from tokenmap.stream.live import StreamModel, StreamOptions, StreamTranscriber
from tokenmap_bench import wer

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_TEXT = ("Thank you for calling Super Awesome Company, Asterisk's premier provider of perfect products. If you "
                "know your party's extension, you may dial it at any time. To establish a sales partnership, press "
                "one. To speak with a customer advocate, press two. For accounting or accounts receivable, press "
                "three. For a company directory, press four. For an operator, press zero.")


def streams(split: str, per_lang: int):
    rows = [json.loads(line) for line in (ROOT / "bench-data/manifest.jsonl").open()]
    out = [("fixture", "en", ROOT / "tests/data/en-basic-pbx-ivr-main.flac", FIXTURE_TEXT)] if split == "report" else []
    for lang in ("en", "es", "fr"):
        calls = [r for r in rows if r["set"] == "calls" and r["lang"] == lang]
        half = calls[0 if split == "choose" else 1::2][:per_lang]
        out += [(r["id"], lang, ROOT / "bench-data" / r["audio"], r["text"]) for r in half]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--split", choices=("choose", "report"), default="choose")
    p.add_argument("--margins", default="4,3,2", help="seconds after the buffer, comma-separated")
    p.add_argument("--per-lang", type=int, default=8)
    args = p.parse_args()
    margins = [float(m) for m in args.margins.split(",")]
    engine = StreamModel.load("base", "int8")
    sums = {m: [0.0, 0.0, []] for m in margins}  # cost, scratch cost, (reference, committed) pairs
    for sid, lang, path, text in streams(args.split, args.per_lang):
        audio = load_audio(str(path))
        for m in margins:
            engine.context = AudioContext("auto", margin_s=m)
            st = StreamTranscriber(engine, StreamOptions(language=lang, scratch="generate"))
            for _ in st.run(FileSource(audio).chunks(1.0)):
                pass
            ups = [u for u in st.metrics.updates if u.scratch_decode is not None]
            sums[m][0] += sum(u.encode_seconds + u.decode_seconds for u in ups)
            sums[m][1] += sum(u.scratch_encode + u.scratch_decode for u in ups)
            sums[m][2].append((text, st.committed_text))
        print(sid, " ".join(f"m{m:g}: {sums[m][0] / sums[m][1]:.3f}" for m in margins), flush=True)
    print(f"{'margin':>6} {'cost vs scratch':>16} {'WER %':>7}")
    for m in margins:
        print(f"{m:6g} {sums[m][0] / sums[m][1]:16.3f} {100 * wer(sums[m][2]):7.2f}")


if __name__ == "__main__":
    main()
