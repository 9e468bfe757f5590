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
``librivox-paused`` (the 5 clips once, 7 s of silence between them, about 53 s), ``dictation``
(full.jsonl) and ``synthetic-en`` (full.jsonl's English synthetic utterances, espeak voices
left out). It prints per set the corpus WER
(:func:`tokenmap_bench.metrics.wer`) with and without VAD, how many transcripts differ, and the
summed wall time of each.

A window whose greedy decode repeats itself or scores low is decoded again by sampling
(faster-whisper's temperature fallback), so a transcript can differ from run to run; the
joined LibriVox files, where the repeated passage invites such loops, are decoded ``--long-reps``
times each, with CTranslate2's random seed set to the repetition's number before each decode
(the same for both conditions), and their WER pools the repetitions.

Tuning, on data no measured set holds: ``--sets telephony-train,train-paused`` are Asterisk
prompts of the train split (``--train-per-lang`` per language, seeded) and windows of 5 of
them with 7 s of silence between (2 per language), and each ``--vad-params NAME=JSON``
(faster-whisper's ``vad_parameters``) adds a condition ``vad:NAME`` next to VAD's defaults.
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
DATA = ROOT / "bench-data"
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
SETS = ("telephony", "calls", "opendomain", "librivox-joined", "librivox-paused", "dictation", "synthetic-en")
LONG = ("librivox-joined", "librivox-paused")  # decoded --long-reps times
TRAIN = ("telephony-train", "train-paused")  # tuning data: the train split, in no measured set
VOICES = {"en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June"}


def _rows(manifest: str, set_name: str, keep=lambda row: True):
    for line in (DATA / manifest).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["set"] == set_name and keep(row):
            yield row


def utterances(train_per_lang: int = 40):
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
    yield "librivox-paused", "librivox-paused", "en", lambda: joined_librivox(1, 7.0)[:-7 * 16000], joined_reference(1)
    for row in _rows("full.jsonl", "dictation"):
        yield item("dictation", row)
    for row in _rows("full.jsonl", "synthetic", lambda r: r["lang"] == "en" and not r["voice"].startswith("espeak")):
        yield item("synthetic-en", row)
    yield from train_utterances(train_per_lang)


def train_utterances(per_lang: int, seed: int = 0):
    """Train-split Asterisk prompts (16 kHz G.722), and windows of 5 of them with 7 s pauses."""
    import random

    from tokenmap_bench import decode_g722

    for lang, voice in VOICES.items():
        rows = []
        for line in (ROOT / "corpora/telephony" / lang / "train.tsv").read_text(encoding="utf-8").splitlines():
            name, _, text = line.partition("\t")
            path = Path("/usr/share/asterisk/sounds") / voice / f"{name}.g722"
            if path.exists() and text.strip():
                rows.append((f"train/{lang}/{name}", text.strip(), path))
        random.Random(seed).shuffle(rows)
        for uid, text, path in rows[:per_lang]:
            yield "telephony-train", uid, lang, lambda p=path: decode_g722(str(p)), text
        for w in range(2):
            group = rows[per_lang + 5 * w: per_lang + 5 * w + 5]
            pause = np.zeros(7 * 16000, dtype=np.float32)
            yield ("train-paused", f"train-paused/{lang}/{w}", lang,
                   lambda g=group: np.concatenate([x for _, _, p in g for x in (decode_g722(str(p)), pause)][:-1]),
                   " ".join(t for _, t, _ in group))


class _WithVadParams:
    """A model whose ``transcribe`` passes ``vad_parameters`` whenever VAD is on."""

    def __init__(self, model, params: dict):
        self.model, self.params = model, params

    def __getattr__(self, name):
        return getattr(self.model, name)

    def transcribe(self, audio, **kwargs):
        if kwargs.get("vad_filter"):
            kwargs["vad_parameters"] = self.params
        return self.model.transcribe(audio, **kwargs)


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


def measure(model, sets, out, long_reps: int = 1, variants=None, train_per_lang: int = 40):
    """Transcribe every utterance with and without VAD (alternating order); one JSON line each."""
    import ctranslate2

    from tokenmap.transcriber import TranscribeOptions, transcribe_audio

    warm = np.zeros(16000, dtype=np.float32)
    warm[4000:12000] = 0.1 * np.sin(np.arange(8000) / 5.0)
    for vad in (True, False):  # Silero's first call loads its model: not part of any set's time
        transcribe_audio(model, warm, "warm-up", TranscribeOptions(language="en", vad=vad))
    n = 0
    for set_name, uid, lang, load, ref in utterances(train_per_lang):
        if set_name not in sets:
            continue
        audio = load()
        for rep in range(long_reps if set_name in LONG else 1):
            row = {"set": set_name, "id": uid, "rep": rep, "lang": lang, "ref": ref, "seconds": len(audio) / 16000}
            conditions = [("vad", model), ("novad", model)]
            conditions += [(f"vad:{name}", _WithVadParams(model, p)) for name, p in (variants or {}).items()]
            for key, runner in (conditions if n % 2 == 0 else conditions[::-1]):
                ctranslate2.set_random_seed(rep)
                started = time.perf_counter()
                t = transcribe_audio(runner, audio, uid, TranscribeOptions(language=lang, vad=key != "novad"))
                row[key] = {"text": t.text, "wall": time.perf_counter() - started, "segments": len(t.segments)}
            n += 1
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
            yield row


REAL = ("telephony", "calls", "opendomain") + LONG  # the rest is synthesized speech


def table(rows) -> str:
    """Per set, then real speech and TTS together: WER with and without VAD, and the time of each."""
    by_set = defaultdict(list)
    for row in rows:
        by_set[row["set"]].append(row)
    lines = ["| set | decodes | audio (s) | WER VAD | WER no VAD | transcripts differ | time VAD (s) | "
             "time no VAD (s) |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    groups = [(name, by_set[name]) for name in SETS + TRAIN if name in by_set]
    groups += [("all real speech", [r for r in rows if r["set"] in REAL]),
               ("all TTS", [r for r in rows if r["set"] not in REAL + TRAIN])]
    for name, group in groups:
        if group:
            lines.append(_line(name, group))
    return "\n".join(lines)


def tuning_table(rows) -> str:
    """WER per set of every condition (no VAD, VAD's defaults, each ``--vad-params``)."""
    from tokenmap_bench import wer

    keys = ["novad", "vad"] + sorted({k for row in rows for k in row if k.startswith("vad:")})
    lines = ["| set | " + " | ".join(f"WER {k}" for k in keys) + " |", "| --- |" + " ---: |" * len(keys)]
    for name in dict.fromkeys(row["set"] for row in rows):
        group = [r for r in rows if r["set"] == name]
        lines.append(f"| {name} | " + " | ".join(f"{wer([(r['ref'], r[k]['text']) for r in group]):.1%}"
                                                  for k in keys) + " |")
    return "\n".join(lines)


def _line(name: str, group: list) -> str:
    from tokenmap_bench import wer

    w = {k: wer([(r["ref"], r[k]["text"]) for r in group]) for k in ("vad", "novad")}
    t = {k: sum(r[k]["wall"] for r in group) for k in ("vad", "novad")}
    differ = sum(r["vad"]["text"] != r["novad"]["text"] for r in group)
    return (f"| {name} | {len(group)} | {sum(r['seconds'] for r in group):.0f} | {w['vad']:.1%} | "
            f"{w['novad']:.1%} | {differ} | {t['vad']:.1f} | {t['novad']:.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp/tm/vad-rows.jsonl", help="one JSON line per utterance")
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of {', '.join(SETS)}")
    parser.add_argument("--long-reps", type=int, default=5, help="decodes of each joined LibriVox file [5]")
    parser.add_argument("--vad-params", action="append", default=[], metavar="NAME=JSON",
                        help="a further condition: VAD with these vad_parameters (repeatable)")
    parser.add_argument("--train-per-lang", type=int, default=40)
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
            variants = {v.partition("=")[0]: json.loads(v.partition("=")[2]) for v in args.vad_params}
            for row in measure(model, set(args.sets.split(",")), out, args.long_reps, variants,
                               args.train_per_lang):
                rows.append(row)
                print(f"{row['set']} {row['id']}: " + ", ".join(f"{k} {v['wall']:.2f} s" for k, v in row.items()
                                                                if isinstance(v, dict)), file=sys.stderr)
    print(table(rows))
    if any(k.startswith("vad:") for row in rows for k in row):
        print(tuning_table(rows))


if __name__ == "__main__":
    main()
