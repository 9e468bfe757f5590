"""Does Silero VAD (faster-whisper's ``vad_filter``) help or hurt `tokenmap transcribe`?

    python research/vad_table.py --out /tmp/tm/vad-rows.jsonl [--sets telephony,calls]
    python research/vad_table.py --replay /tmp/tm/vad-a.jsonl /tmp/tm/vad-b.jsonl

Every utterance of the sets below is transcribed twice through the command's own path
(:func:`tokenmap.transcriber.load_model`, base, int8, no map; then
:func:`tokenmap.transcriber.transcribe_audio` with ``TranscribeOptions(vad=…, language=lang)``),
once with VAD and once without, interleaved: utterance by utterance, the order of the two
alternating, so load on a shared machine falls on both alike. Audio is decoded before the
clock starts.

Sets: ``telephony`` (the 120 Asterisk test prompts of ``bench-data/full.jsonl``), ``calls`` (the
43 windows of prompts back to back of ``bench-data/manifest.jsonl``), ``opendomain`` (the 5
LibriVox clips), ``librivox-joined`` (those 5 clips joined twice over with 0.5 s pauses, about
54 s: a read passage longer than one 30 s window; reference: their transcripts joined),
``dictation`` (full.jsonl) and ``synthetic-en`` (full.jsonl's English synthetic utterances,
espeak voices left out). It prints per set the corpus WER
(:func:`tokenmap_bench.metrics.wer`) with and without VAD, how many transcripts differ, and the
summed wall time of each.
"""
import argparse
import json
import logging
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "bench-data"
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
SETS = ("telephony", "calls", "opendomain", "librivox-joined", "dictation", "synthetic-en")


def _rows(manifest: str, set_name: str, keep=lambda row: True):
    for line in (DATA / manifest).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["set"] == set_name and keep(row):
            yield row


def utterances():
    """``(set, id, lang, audio loader, reference)`` of every utterance measured."""
    from tokenmap.audio import load_audio

    def item(set_name, row):
        path = DATA / row["audio"]
        return set_name, row["id"], row["lang"], lambda: load_audio(path), row["text"]

    for row in _rows("full.jsonl", "telephony"):
        yield item("telephony", row)
    for row in _rows("manifest.jsonl", "calls"):
        yield item("calls", row)
    for row in _rows("full.jsonl", "opendomain"):
        yield item("opendomain", row)
    yield "librivox-joined", "librivox-joined", "en", joined_librivox, joined_reference()
    for row in _rows("full.jsonl", "dictation"):
        yield item("dictation", row)
    for row in _rows("full.jsonl", "synthetic", lambda r: r["lang"] == "en" and not r["voice"].startswith("espeak")):
        yield item("synthetic-en", row)


def _librivox_clips():
    """The pocketsphinx LibriVox clips in their order, with their reference transcripts."""
    refs = {}
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        text, _, name = line.rpartition("(")
        refs[name.strip(" )")] = text.replace("<s>", "").replace("</s>", "").strip()
    return [(LIBRIVOX / f"{name}.wav", refs[name]) for name in sorted(refs)]


def joined_librivox(repeat: int = 2, pause_s: float = 0.5) -> np.ndarray:
    """The 5 clips back to back, ``repeat`` times over, each followed by ``pause_s`` of silence."""
    from tokenmap.audio import load_audio

    pause = np.zeros(int(16000 * pause_s), dtype=np.float32)
    clips = [load_audio(path) for path, _ in _librivox_clips()]
    return np.concatenate([piece for _ in range(repeat) for clip in clips for piece in (clip, pause)])


def joined_reference(repeat: int = 2) -> str:
    """The clips' written references (full.jsonl's, as the opendomain set scores them; pocketsphinx's
    lowercase transcription, "mister" for "Mr.", where a clip has none), joined."""
    written = {Path(rec).name: row["text"] for row in _rows("full.jsonl", "opendomain") for rec in row["recordings"]}
    texts = [written.get(path.stem, text) for path, text in _librivox_clips()]
    return " ".join(text for _ in range(repeat) for text in texts)


def measure(model, sets, out):
    """Transcribe every utterance with and without VAD (alternating order); one JSON line each."""
    from tokenmap.transcriber import TranscribeOptions, transcribe_audio

    warm = np.zeros(16000, dtype=np.float32)
    warm[4000:12000] = 0.1 * np.sin(np.arange(8000) / 5.0)
    for vad in (True, False):  # Silero's first call loads its model: not part of any set's time
        transcribe_audio(model, warm, "warm-up", TranscribeOptions(language="en", vad=vad))
    n = 0
    for set_name, uid, lang, load, ref in utterances():
        if set_name not in sets:
            continue
        audio = load()
        row = {"set": set_name, "id": uid, "lang": lang, "ref": ref, "seconds": len(audio) / 16000}
        for vad in ((True, False) if n % 2 == 0 else (False, True)):
            started = time.perf_counter()
            t = transcribe_audio(model, audio, uid, TranscribeOptions(language=lang, vad=vad))
            key = "vad" if vad else "novad"
            row[key] = {"text": t.text, "wall": time.perf_counter() - started, "segments": len(t.segments)}
        n += 1
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        out.flush()
        yield row


REAL = ("telephony", "calls", "opendomain", "librivox-joined")  # the rest is synthesized speech


def table(rows) -> str:
    """Per set, then real speech and TTS together: WER with and without VAD, and the time of each."""
    by_set = defaultdict(list)
    for row in rows:
        by_set[row["set"]].append(row)
    lines = ["| set | utterances | audio (s) | WER VAD | WER no VAD | transcripts differ | time VAD (s) | "
             "time no VAD (s) |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    groups = [(name, by_set[name]) for name in SETS if name in by_set]
    groups += [("all real speech", [r for r in rows if r["set"] in REAL]),
               ("all TTS", [r for r in rows if r["set"] not in REAL])]
    for name, group in groups:
        if group:
            lines.append(_line(name, group))
    return "\n".join(lines)


def _line(name: str, group: list) -> str:
    from tokenmap_bench.metrics import wer

    w = {k: wer([(r["ref"], r[k]["text"]) for r in group]) for k in ("vad", "novad")}
    t = {k: sum(r[k]["wall"] for r in group) for k in ("vad", "novad")}
    differ = sum(r["vad"]["text"] != r["novad"]["text"] for r in group)
    return (f"| {name} | {len(group)} | {sum(r['seconds'] for r in group):.0f} | {w['vad']:.1%} | "
            f"{w['novad']:.1%} | {differ} | {t['vad']:.1f} | {t['novad']:.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp/tm/vad-rows.jsonl", help="one JSON line per utterance")
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of {', '.join(SETS)}")
    parser.add_argument("--model", default="base")
    parser.add_argument("--compute-type", default="int8")
    parser.add_argument("--replay", nargs="+", metavar="ROWS", help="print the table of earlier --out files")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.replay:
        rows = [json.loads(line) for f in args.replay for line in Path(f).read_text(encoding="utf-8").splitlines()]
    else:
        from tokenmap.transcriber import load_model

        model = load_model(args.model, compute_type=args.compute_type)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as out:
            rows = []
            for row in measure(model, set(args.sets.split(",")), out):
                rows.append(row)
                print(f"{row['set']} {row['id']}: vad {row['vad']['wall']:.2f} s, "
                      f"no vad {row['novad']['wall']:.2f} s", file=sys.stderr)
    print(table(rows))


if __name__ == "__main__":
    main()
