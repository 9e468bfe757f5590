#!/usr/bin/env python3
"""WER of each encoder on every real-speech set: the transcript must not get worse with a faster encoder.

Every file is transcribed once per encoder, the encoders interleaved file by file, with
``tokenmap.WhisperModel(model, compute_type="int8", cpu_threads=2, encoder=E, audio_context="full",
session_cache=False)`` (one model per encoder, no token map) and ``transcribe(language=<the set's>,
beam_size=1, temperature=0.0, vad_filter=False)``, so only the encoder differs.

Sets (nothing here was tuned or calibrated on them; the full-int8 encoder calibrates on the package's own
synthesized speech, ``tokenmap/encoders/calibration``):

* ``asterisk-en``, ``-es``, ``-fr``: Debian's ``asterisk-core-sounds-<lang>-g722`` prompts with their prompt
  list (``--per-set`` of them, lowest SHA-256 of the name first);
* ``asterisk-it``, ``-ru``, ``fillets-cs``, ``-nl``, ``tuxpaint-ro``: ``benchmarks/wer_sets.py``'s manifest;
* ``librivox``: pocketsphinx-testdata's LibriVox clips.

A file *loops* for a system when its hypothesis runs away (more than twice the reference's words plus five).
WER is corpus WER per set after ``wer_table.normalize``; loops are counted apart, and the pooled and per-set
differences against ``--baseline`` leave out files where any system looped, with a 95 % paired bootstrap
interval over files. Results go to ``--json`` (``make bench-report`` reads them).

    .venv/bin/python benchmarks/encoder_wer.py --per-set 40 --json results/encoder_wer.json
    .venv/bin/python benchmarks/encoder_wer.py --from-json results/encoder_wer.json \
        --keep results/kept/zen4-30-encoder-wer.json --section "AMD EPYC Zen 4 (AVX-512 BF16/VNNI)" --order 30
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
import time
from pathlib import Path

import tokenmap  # noqa: F401  (the runtime policies apply before CTranslate2 loads)

# isort: split
from wer_table import delta_ci, loops, word_errors  # the script beside this one

ROOT = Path(__file__).resolve().parents[1]

ASTERISK = {"en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June"}
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
ENCODERS = ("ctranslate2", "openvino:bf16", "openvino:int8-full")


def asterisk_rows(lang: str, per_set: int) -> list[dict]:
    listing = Path(f"/usr/share/doc/asterisk-core-sounds-{lang}/core-sounds-{lang}.txt.gz")
    sounds = Path("/usr/share/asterisk/sounds") / ASTERISK[lang]
    rows = []
    with gzip.open(listing, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            name, sep, text = line.partition(":")
            text = text.strip()
            if not sep or not text or text.startswith("[") or ";" in name:
                continue
            audio = sounds / f"{name.strip()}.g722"
            if audio.is_file():
                rows.append({"id": f"asterisk-{lang}/{name.strip()}", "set": f"asterisk-{lang}", "lang": lang,
                             "text": text, "audio": str(audio), "format": "g722"})
    rows.sort(key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest())
    return rows[:per_set]


def manifest_rows(path: Path, per_set: int) -> list[dict]:
    rows, counts = [], {}
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if counts.get(r["set"], 0) < per_set:
            counts[r["set"]] = counts.get(r["set"], 0) + 1
            rows.append({"id": r["id"], "set": r["set"], "lang": r["lang"], "text": r["text"],
                         "audio": str(path.parent / r["audio"]), "format": None})
    return rows


def librivox_rows() -> list[dict]:
    rows = []
    for line in (LIBRIVOX / "transcription").read_text(encoding="utf-8").splitlines():
        text, _, name = line.rpartition("(")
        name, text = name.strip(" )"), text.replace("<s>", "").replace("</s>", "").strip()
        if (LIBRIVOX / f"{name}.wav").is_file() and text:
            rows.append({"id": f"librivox/{name}", "set": "librivox", "lang": "en", "format": None, "text": text,
                         "audio": str(LIBRIVOX / f"{name}.wav")})
    return rows


def load_audio(row: dict):
    import av
    import numpy as np
    from faster_whisper.audio import decode_audio

    if row["format"] != "g722":
        return decode_audio(row["audio"])
    with av.open(row["audio"], format="g722") as container:
        resampler = av.AudioResampler(format="s16", layout="mono", rate=16000)
        chunks = [r.to_ndarray().reshape(-1) for frame in container.decode(audio=0) for r in resampler.resample(frame)]
    return np.concatenate(chunks).astype(np.float32) / 32768.0


def decode(rows: list[dict], encoders, model: str) -> list[dict]:
    from tokenmap import WhisperModel
    from tokenmap.encoders import describe

    models = {e: WhisperModel(model, compute_type="int8", cpu_threads=2, encoder=e, audio_context="full",
                              session_cache=False) for e in encoders}
    described = {e: describe(m.model.encoder.choices()) for e, m in models.items()}
    out, started = [], time.perf_counter()
    for n, row in enumerate(rows, 1):
        audio = load_audio(row)
        result = {k: row[k] for k in ("id", "set", "lang", "text")}
        for e, m in models.items():
            t = time.perf_counter()
            segments, _ = m.transcribe(audio, language=row["lang"], beam_size=1, temperature=0.0, vad_filter=False)
            text = "".join(s.text for s in segments).strip()
            edits, words = word_errors(row["text"], text, row["lang"])
            result[e] = {"text": text, "edits": edits, "words": words, "loop": loops(row["text"], text, row["lang"]),
                         "seconds": round(time.perf_counter() - t, 3)}
        out.append(result)
        if n % 20 == 0 or n == len(rows):
            print(f"  {n}/{len(rows)} files, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return out, described


def summarize(results: list[dict], encoders, baseline: str) -> list[dict]:
    groups: dict[str, list[dict]] = {}
    for r in results:
        groups.setdefault(r["set"], []).append(r)
    groups["all (pooled)"] = results
    table = []
    for name, rows in groups.items():
        clean = [r for r in rows if not any(r[e]["loop"] for e in encoders)]
        row = {"set": name, "files": len(rows), "looped files": len(rows) - len(clean)}
        for e in encoders:
            words = sum(r[e]["words"] for r in clean)
            row[e] = {"wer": round(100 * sum(r[e]["edits"] for r in clean) / max(words, 1), 2),
                      "loops": sum(r[e]["loop"] for r in rows)}
            if e != baseline:
                pairs = [(r[baseline]["edits"], r[e]["edits"], r[e]["words"]) for r in clean]
                row[e]["minus_baseline"] = round(row[e]["wer"] - row[baseline]["wer"], 2)
                row[e]["ci95"] = [round(x, 2) for x in delta_ci(pairs)] if pairs else None
        table.append(row)
    return table


def render(table: list[dict], encoders, baseline: str) -> str:
    head = "| set | files | " + " | ".join(f"{e} WER (loops)" for e in encoders) + " | " + " | ".join(
        f"{e} - {baseline}, 95 % CI" for e in encoders if e != baseline) + " |"
    lines = [head, "|" + " --- |" * (2 + 2 * len(encoders) - 1)]
    for row in table:
        cells = [f"{row[e]['wer']:.2f} ({row[e]['loops']})" for e in encoders]
        cells += [f"{row[e]['minus_baseline']:+.2f} [{row[e]['ci95'][0]:+.2f}, {row[e]['ci95'][1]:+.2f}]"
                  if row[e].get("ci95") else "-" for e in encoders if e != baseline]
        lines.append(f"| {row['set']} | {row['files']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def keep(data: dict, args) -> None:
    """The run as a table file of ``results/kept`` (its README has the schema)."""
    encoders, baseline = data["encoders"], data["baseline"]
    rows = []
    for row in data["table"]:
        cells = [row["set"], row["files"]] + [f"{row[e]['wer']:.2f} ({row[e]['loops']})" for e in encoders]
        cells += [f"{row[e]['minus_baseline']:+.2f} [{row[e]['ci95'][0]:+.2f}, {row[e]['ci95'][1]:+.2f}]"
                  for e in encoders if e != baseline]
        rows.append(cells)
    table = {
        "section": args.section, "order": args.order, "title": "WER by encoder on the real-speech sets",
        "text": ("Each file transcribed once per encoder, interleaved, on the same decoder (tokenmap without a map, "
                 "full 30 s context, greedy, temperature 0, VAD off, the language given): only the encoder differs. "
                 "Corpus WER (%) per set, loops (hypotheses past twice the reference's words plus five) counted "
                 "apart and left out of every WER and difference; the difference against "
                 f"{baseline} in points with a 95 % paired bootstrap interval over files."),
        "command": data["command"], "commit": args.commit, "date": data["date"], "model": data["model"],
        "compute_type": "int8", "threads": 2, "encoder_auto": args.encoder_auto,
        "columns": ["set", "files"] + [f"{e} WER (loops)" for e in encoders]
                   + [f"{e} − {baseline} [95 % CI]" for e in encoders if e != baseline],
        "rows": rows,
        "notes": ["The full-int8 encoder calibrates on the package's own synthesized speech "
                  "(tokenmap/encoders/calibration), none of it from these sets.",
                  "Encoders as they described themselves: " + "; ".join(f"{e}: {d}" for e, d in
                                                                        data["described"].items())]}
    args.keep.write_text(json.dumps(table, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="base")
    ap.add_argument("--encoders", default=",".join(ENCODERS))
    ap.add_argument("--baseline", default="ctranslate2")
    ap.add_argument("--per-set", type=int, default=40, help="files per set at most [40]")
    ap.add_argument("--sets", default=None, help="comma-separated sets (default: all)")
    ap.add_argument("--manifest", type=Path, default=ROOT / "bench-data" / "wer" / "manifest.jsonl")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--from-json", type=Path, default=None, help="print the table of an earlier run, no decoding")
    ap.add_argument("--keep", type=Path, default=None, help="with --from-json: write the table for make bench-report")
    ap.add_argument("--section", default=None, help="with --keep: the CPU kind (results/kept/sections.json)")
    ap.add_argument("--order", type=int, default=30)
    ap.add_argument("--commit", default=None, help="with --keep: the commit the run was made at")
    ap.add_argument("--encoder-auto", default=None,
                    help="with --keep: what `--encoder auto` chose on this CPU (`tokenmap doctor`'s encoder line)")
    args = ap.parse_args(argv)
    if args.from_json:
        data = json.loads(args.from_json.read_text(encoding="utf-8"))
        print(render(data["table"], data["encoders"], data["baseline"]))
        if args.keep:
            keep(data, args)
        return 0
    encoders = args.encoders.split(",")
    rows = [r for lang in ASTERISK for r in asterisk_rows(lang, args.per_set)]
    if args.manifest.is_file():
        rows += manifest_rows(args.manifest, args.per_set)
    rows += librivox_rows()
    if args.sets:
        rows = [r for r in rows if r["set"] in args.sets.split(",")]
    print(f"{len(rows)} files in {len({r['set'] for r in rows})} sets", file=sys.stderr)
    results, described = decode(rows, encoders, args.model)
    table = summarize(results, encoders, args.baseline)
    print(render(table, encoders, args.baseline))
    if args.json:
        from tokenmap.encoders.choice import cpu_identity

        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "command": "python benchmarks/encoder_wer.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d"), "cpu": cpu_identity().split(" | ")[0], "model": args.model,
            "encoders": encoders, "described": described, "baseline": args.baseline, "table": table,
            "files": results}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
