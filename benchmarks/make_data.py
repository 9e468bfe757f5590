#!/usr/bin/env python3
"""Build the benchmark test sets in bench-data/ (audio + JSON-lines manifests), offline.

Sets (see benchmarks/README.md, "Benchmark data"):
  synthetic   corpora/{maintenance,incar}/{en,es,fr}/test.txt spoken by TTS voices
              (flite, espeak-ng, piper joe), varied rate/pitch, 20 % with white noise
  telephony   corpora/telephony/<lang>/test.tsv prompts, real speech (asterisk G.722)
  opendomain  the LibriVox clips of pocketsphinx-testdata (real speech)
  dictation   ~20-30 s windows of consecutive maintenance/incar en test sentences (TTS)
  calls       ~25 s windows of telephony test prompts played back to back (real speech,
              asterisk G.722): the scripted regime's dense windows, as call recordings hold them

Usage::

    python benchmarks/make_data.py                 # full build, incremental
    python benchmarks/make_data.py --quick         # only the audio of quick.jsonl
    python benchmarks/make_data.py --force -j 2    # rebuild everything on 2 processes

Every choice (voice, rate, pitch, noise) is drawn from hashes of the text and --seed, so a
rebuild gives the same manifest; an audio file is named after a hash of what it says and how.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import multiprocessing as mp
import os
import random
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from tokenmap_bench import (  # noqa: F401 (tests read the window functions from here)
    CALLS_PAUSE_S,
    calls_windows,
    dictation_windows,
    estimate_seconds,
    lowest_hash_per_group,
    recording_key,
    stable_hash,
)

log = logging.getLogger("tokenmap")

ROOT = Path(__file__).resolve().parent.parent
SR = 16000
SETS = ("synthetic", "telephony", "opendomain", "dictation", "calls")
FIELDS = ("id", "audio", "text", "domain", "lang", "voice", "source", "set", "duration")
ASTERISK = {"en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June", "it": "it_IT_m_Carlo",
            "ru": "ru_RU_f_IvrvoiceRU"}
ASTERISK_DIR = Path("/usr/share/asterisk/sounds")
LIBRIVOX_DIR = Path("/usr/share/pocketsphinx/test/data/librivox")
NOISE_SHARE = 0.2                      # share of synthetic utterances with white noise
SNR_DB = (8.0, 20.0)                   # noise level range
G722_BYTES_PER_S = 8000                # G.722 at 64 kbit/s: a prompt's length from its file size
#: the quick run's subset (quick.jsonl): real speech only, 30 short prompts and 30 dense windows of
#: each language, and the 5 LibriVox clips (all there are)
QUICK_QUOTA = {"synthetic": 0, "telephony": 30, "opendomain": 5, "dictation": 0, "calls": 30}
#: the full run's subset (full.jsonl): every real recording, and TTS voices (counted only where the
#: model hears them: tokenmap_bench.aggregate.VOICE_BOUND_WER); per (set, domain, lang, voice) group
FULL_QUOTA = {"synthetic": 3, "telephony": 1000, "opendomain": 5, "dictation": 4, "calls": 1000}
#: each language's test prompts are played back to back in this many seeded orders (calls windows)
CALLS_ORDERS = 3

# name -> (engine, engine voice, lang); espeak "+f3" etc. are its voice variants
VOICES = {f"flite-{v}": ("flite", v, "en") for v in ("kal16", "awb", "rms", "slt")}
VOICES |= {f"espeak-{v.replace('+', '-')}": ("espeak", v, v[:2]) for v in (
    "en-us", "en-gb+f3", "es", "es+f3", "es-419", "es-419+m3", "fr", "fr+f3", "fr-be", "fr-ch+f2")}
VOICES["piper-joe"] = ("piper", "joe", "en")
DICTATION_VOICES = ("piper-joe", "flite-slt")
SPOKEN = {"en": {"°C": " degrees Celsius", "%": " percent"},
          "es": {"°C": " grados Celsius", "%": " por ciento"},
          "fr": {"°C": " degrés Celsius", "%": " pour cent"}}


@dataclasses.dataclass(frozen=True)
class Job:
    """One utterance to build: how to make its audio and what its manifest line says."""
    id: str
    text: str
    set: str
    domain: str
    lang: str
    voice: str
    source: str
    kind: str                      # "tts", "g722", "g722-calls" or "wav"
    src: str = ""                  # input file for g722/wav; the prompts of a calls window, "|"-joined
    rate: float = 1.0              # speed factor (>1 faster)
    pitch: int = 50                # espeak pitch
    snr_db: float | None = None    # white noise at this SNR, None = clean

    @property
    def audio(self) -> str:
        return self.id + ".flac"


# ---------------------------------------------------------------- pure planning helpers
def make_id(set_: str, domain: str, lang: str, voice: str, idx: int, text: str) -> str:
    """`set/domain/lang/voice/NNN-hash8`: readable, and changes when the text changes."""
    return f"{set_}/{domain}/{lang}/{voice}/{idx:03d}-{stable_hash(text) & 0xFFFFFFFF:08x}"


def assign_voices(texts: list[str], voices: list[str], per_item: int, seed: object) -> list[list[str]]:
    """Give each text `per_item` distinct voices; every voice gets a near-equal share."""
    order = sorted(range(len(texts)), key=lambda i: stable_hash(seed, i, texts[i]))
    per_item = min(per_item, len(voices))
    out: list[list[str]] = [[] for _ in texts]
    for rank, i in enumerate(order):
        out[i] = [voices[(rank + j) % len(voices)] for j in range(per_item)]
    return out


def draw_params(key: str, seed: object, engine: str, lang: str, noisy: bool) -> dict:
    """Rate, pitch and noise level of one utterance, drawn from a per-utterance RNG."""
    rng = random.Random(f"{seed}/{key}")
    lo, hi = (0.85, 1.15) if lang == "en" else (0.8, 1.0)   # es/fr espeak: a bit slower
    rate, pitch, snr = round(rng.uniform(lo, hi), 3), rng.randint(35, 65), round(rng.uniform(*SNR_DB), 1)
    return {"rate": rate, "pitch": pitch if engine == "espeak" else 50, "snr_db": snr if noisy else None}


def pick_noisy(ids: list[str], share: float, seed: object) -> set[str]:
    """Exactly round(share * len(ids)) of the ids (lowest hashes) get noise."""
    ranked = sorted(ids, key=lambda i: stable_hash(seed, "noise", i))
    return set(ranked[:round(share * len(ids))])


def tts_text(text: str, lang: str) -> str:
    """Text handed to a TTS engine: symbols the engines misread written out."""
    for sym, words in SPOKEN.get(lang, {}).items():
        text = text.replace(sym, words)
    return " ".join(text.split())


def manifest_record(job: Job, duration: float) -> dict:
    """The manifest line of a built utterance (FIELDS first, then noise/rate details, or the
    recordings it plays for real speech)."""
    rec = {"id": job.id, "audio": job.audio, "text": job.text, "domain": job.domain,
           "lang": job.lang, "voice": job.voice, "source": job.source, "set": job.set,
           "duration": round(float(duration), 3)}
    if job.kind == "tts":
        rec.update(rate=job.rate, snr_db=job.snr_db)
    elif job.src:
        rec["recordings"] = [recording_key(src) for src in job.src.split("|")]
    return rec


def validate_record(rec: dict) -> None:
    """Raise ValueError if a manifest line lacks a field or has a wrong type."""
    missing = [f for f in FIELDS if f not in rec]
    if missing:
        raise ValueError(f"{rec.get('id')}: missing {missing}")
    for f in FIELDS:
        want = float if f == "duration" else str
        if not isinstance(rec[f], want) or (want is str and not rec[f]):
            raise ValueError(f"{rec.get('id')}: bad {f}={rec[f]!r}")
    if rec["set"] not in SETS or rec["duration"] <= 0 or os.path.isabs(rec["audio"]):
        raise ValueError(f"{rec['id']}: bad set/duration/audio")


def select_quick(records: list[dict], quota: dict[str, int] = QUICK_QUOTA, seed: object = 0) -> list[dict]:
    """The quick set (:func:`tokenmap_bench.lowest_hash_per_group` with ``quota``)."""
    return lowest_hash_per_group(records, quota, seed)


def flac_duration(path: str | Path) -> float:
    """Duration in seconds from a FLAC file's STREAMINFO block."""
    with open(path, "rb") as f:
        head = f.read(42)
    if head[:4] != b"fLaC" or len(head) < 42:
        raise ValueError(f"{path}: not a FLAC file")
    info = int.from_bytes(head[18:26], "big")       # STREAMINFO bytes 10..17
    rate, total = info >> 44, info & ((1 << 36) - 1)
    return total / rate


# ---------------------------------------------------------------- plans
def read_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_tsv(path: Path) -> list[tuple[str, str]]:
    return [tuple(line.split("\t", 1)) for line in read_lines(path)]


def tts_jobs(set_: str, domain: str, lang: str, items: list[tuple[int, str]], voices: list[str],
             seed, per_item: int, noise_share: float) -> list[Job]:
    """TTS jobs for (index, text) items: voices assigned evenly, then in each voice's share
    exactly `noise_share` of the utterances get noise."""
    by_voice: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
    for (idx, text), vs in zip(items, assign_voices([t for _, t in items], voices, per_item, (seed, domain, lang))):
        for v in vs:
            by_voice[v].append((make_id(set_, domain, lang, v, idx, text), idx, text))
    src = {"flite": "flite", "espeak": "espeak-ng", "piper": "piper-tts"}
    jobs = []
    for v, utts in by_voice.items():
        engine = VOICES[v][0]
        noisy = pick_noisy([u[0] for u in utts], noise_share, seed)
        jobs += [Job(jid, text, set_, domain, lang, v, src[engine], "tts",
                     **draw_params(jid, seed, engine, lang, jid in noisy)) for jid, _, text in utts]
    return jobs


def plan_synthetic(corpora: Path, seed, per_item: int) -> list[Job]:
    jobs = []
    for domain in ("maintenance", "incar"):
        for lang in ("en", "es", "fr"):
            texts = read_lines(corpora / domain / lang / "test.txt")
            voices = [v for v, (_, _, voice_lang) in VOICES.items() if voice_lang == lang]
            jobs += tts_jobs("synthetic", domain, lang, list(enumerate(texts)), voices, seed, per_item, NOISE_SHARE)
    return jobs


def plan_dictation(corpora: Path, seed, per_item: int) -> list[Job]:
    jobs = []
    for domain in ("maintenance", "incar"):
        wins = dictation_windows(read_lines(corpora / domain / "en" / "test.txt"))
        items = [(start, text) for start, _, text in wins]
        jobs += tts_jobs("dictation", domain, "en", items, list(DICTATION_VOICES), seed, per_item, 0.0)
    return jobs


def plan_real(corpora: Path) -> list[Job]:
    """telephony (asterisk G.722 prompts) and opendomain (LibriVox clips) jobs."""
    jobs, missing = [], []
    sources = [("telephony", lang, "asterisk-" + vdir.rsplit("_", 1)[-1].lower(), ASTERISK_DIR / vdir,
                "g722", f"asterisk-core-sounds-{lang}-g722") for lang, vdir in ASTERISK.items()]
    sources.append(("opendomain", "en", "librivox", LIBRIVOX_DIR, "wav", "pocketsphinx-testdata"))
    for set_, lang, voice, folder, kind, package in sources:
        for i, (name, text) in enumerate(read_tsv(corpora / set_ / lang / "test.tsv")):
            if name.startswith("text:"):              # opendomain: held-out novel text, no audio
                continue
            src = folder / f"{name}.{kind}"
            if not src.exists():
                missing.append(f"{set_}/{lang}:{name}")
                continue
            jid = make_id(set_, set_, lang, voice, i, text)
            jobs.append(Job(jid, text, set_, set_, lang, voice, package, kind, str(src)))
    if missing:
        log.warning("%d test prompts have no audio file, skipped: %s", len(missing), " ".join(missing))
    return jobs


def plan_calls(corpora: Path, seed, orders: int = CALLS_ORDERS) -> list[Job]:
    """calls jobs: each language's telephony test prompts that have audio, in ``orders`` seeded
    orders, each grouped by :func:`calls_windows` (lengths from the G.722 file sizes)."""
    jobs = []
    for lang, vdir in ASTERISK.items():
        folder, prompts = ASTERISK_DIR / vdir, []
        for name, text in read_tsv(corpora / "telephony" / lang / "test.tsv"):
            src = folder / f"{name}.g722"
            if src.exists():
                prompts.append((str(src), text, src.stat().st_size / G722_BYTES_PER_S))
        voice = "asterisk-" + vdir.rsplit("_", 1)[-1].lower()
        for order in range(orders):
            salt = ("calls",) if order == 0 else ("calls", order)
            prompts.sort(key=lambda p: stable_hash(seed, *salt, p[0]))
            for i, window in enumerate(calls_windows(prompts)):
                text = " ".join(t for _, t, _ in window)
                jobs.append(Job(make_id("calls", "telephony", lang, voice, 1000 * order + i, text), text, "calls",
                                "telephony", lang, voice, f"asterisk-core-sounds-{lang}-g722", "g722-calls",
                                "|".join(p for p, _, _ in window)))
    return jobs


def plan_all(corpora: Path, seed, per_item: int) -> list[Job]:
    jobs = plan_synthetic(corpora, seed, per_item) + plan_real(corpora) + plan_dictation(corpora, seed, per_item)
    jobs += plan_calls(corpora, seed)
    ids = [j.id for j in jobs]
    assert len(ids) == len(set(ids)), "duplicate utterance ids"
    return sorted(jobs, key=lambda j: j.id)


# ---------------------------------------------------------------- audio (benchmarks/bench_audio.py)
def build_one(args: tuple[Job, str, int]) -> tuple[str, float | None, str]:
    """Worker: build one audio file. Returns (id, duration or None, error message)."""
    from bench_audio import add_noise, decode_g722, join_with_pauses, speak, to_pcm16k, write_flac

    job, out_dir, threads = args
    try:
        if job.kind == "g722":
            x = decode_g722(job.src)
        elif job.kind == "g722-calls":
            x = join_with_pauses([decode_g722(src) for src in job.src.split("|")], CALLS_PAUSE_S)
        elif job.kind == "wav":
            x = to_pcm16k(job.src, norm=False)
        else:
            with tempfile.TemporaryDirectory(prefix="mkdata-") as tmp:
                wav = os.path.join(tmp, "tts.wav")
                speak(*VOICES[job.voice][:2], tts_text(job.text, job.lang), job.rate, job.pitch, wav, threads)
                x = to_pcm16k(wav)
            if job.snr_db is not None:
                x = add_noise(x, job.snr_db, stable_hash("noise", job.id))
        if len(x) < SR // 10:
            raise RuntimeError(f"only {len(x)} samples")
        return job.id, write_flac(x, Path(out_dir) / job.audio), ""
    except Exception as e:  # noqa: BLE001 - reported per utterance, the others go on
        return job.id, None, f"{type(e).__name__}: {e}"


# ---------------------------------------------------------------- driver
def _built_duration(path: Path) -> float | None:
    try:
        return flac_duration(path)
    except (OSError, ValueError):
        return None


def run_jobs(jobs: list[Job], out: Path, force: bool, workers: int) -> dict[str, float]:
    """Build what is missing (or all with force); return id -> duration of built files."""
    from tqdm import tqdm
    durations = {} if force else {j.id: d for j in jobs if (d := _built_duration(out / j.audio))}
    # piper is the slow engine: start its jobs first so both processes share them
    todo = sorted((j for j in jobs if j.id not in durations),
                  key=lambda j: (VOICES.get(j.voice, ("",))[0] != "piper", j.id))
    log.info("%d utterances planned, %d already built, %d to build", len(jobs), len(durations), len(todo))
    threads = max(1, (os.cpu_count() or 2) // max(1, workers))
    args = [(j, str(out), threads) for j in todo]
    pool = mp.get_context("fork").Pool(workers) if workers > 1 and len(todo) > 1 else None
    try:
        results = pool.imap_unordered(build_one, args) if pool else map(build_one, args)
        for jid, dur, err in tqdm(results, total=len(todo), unit="utt", file=sys.stderr, disable=not todo):
            if dur is None:
                log.error("failed %s: %s", jid, err)
            else:
                durations[jid] = dur
    finally:
        if pool:
            pool.close()
            pool.join()
    return durations


def write_jsonl(path: Path, records: list[dict]) -> None:
    part = path.with_suffix(".part")
    with open(part, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(part, path)


def summary(records: list[dict]) -> str:
    """Table of count, noisy count and hours per set x lang x voice, with totals."""
    rows: dict[tuple, list] = defaultdict(lambda: [0, 0, 0.0])
    for r in records:
        row = rows[(r["set"], r["lang"], r["voice"])]
        row[:] = row[0] + 1, row[1] + (r.get("snr_db") is not None), row[2] + r["duration"]
    lines = [f"{'set':<11} {'lang':<4} {'voice':<18} {'utts':>5} {'noisy':>5} {'hours':>6}"]
    for (s, lang, v), (n, nz, d) in sorted(rows.items(), key=lambda kv: (SETS.index(kv[0][0]), kv[0][1:])):
        lines.append(f"{s:<11} {lang:<4} {v:<18} {n:>5} {nz:>5} {d / 3600:>6.3f}")
    tot = sum(r["duration"] for r in records)
    lines.append(f"{'total':<11} {'':<4} {'':<18} {len(records):>5} "
                 f"{sum(r.get('snr_db') is not None for r in records):>5} {tot / 3600:>6.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench-data", help="output directory [bench-data/]")
    ap.add_argument("--corpora", type=Path, default=ROOT / "corpora")
    ap.add_argument("--quick", action="store_true", help="build only the audio of quick.jsonl")
    ap.add_argument("--force", action="store_true", help="rebuild audio files that exist")
    ap.add_argument("-j", "--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes [2]")
    ap.add_argument("--seed", default="0", help="seed of every random choice [0]")
    ap.add_argument("--voices-per-sentence", type=int, default=1,
                    help="TTS voices speaking each test sentence / dictation window [1]")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    jobs = plan_all(a.corpora, a.seed, a.voices_per_sentence)
    quick_ids = {r["id"] for r in select_quick([dataclasses.asdict(j) for j in jobs], seed=a.seed)}
    if a.quick:
        jobs = [j for j in jobs if j.id in quick_ids]
    a.out.mkdir(parents=True, exist_ok=True)
    durations = run_jobs(jobs, a.out, a.force, a.jobs)
    records = [manifest_record(j, durations[j.id]) for j in jobs if j.id in durations]
    for r in records:
        validate_record(r)
    quick = [r for r in records if r["id"] in quick_ids]
    write_jsonl(a.out / "quick.jsonl", quick)
    if not a.quick:
        write_jsonl(a.out / "manifest.jsonl", records)
        full = select_quick(records, FULL_QUOTA, seed=a.seed)
        write_jsonl(a.out / "full.jsonl", full)
        print(f"full.jsonl: {len(full)} utterances, {sum(r['duration'] for r in full) / 3600:.3f} h")
    print(summary(records))
    print(f"quick.jsonl: {len(quick)} utterances, {sum(r['duration'] for r in quick) / 3600:.3f} h")
    return 0 if len(records) == len(jobs) else 1


if __name__ == "__main__":
    sys.exit(main())
