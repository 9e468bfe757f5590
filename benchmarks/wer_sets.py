#!/usr/bin/env python3
"""Real-speech WER sets nothing in this project was tuned on: ``bench-data/wer/`` + its manifest.

Each set is read from installed Debian packages (nothing is downloaded, no audio is committed),
converted to 16 kHz mono 16-bit FLAC with sox (G.722 through PyAV) and listed in
``bench-data/wer/manifest.jsonl``. What the sets are, their licences and counts:
``benchmarks/WER_SETS.md``.

=============  ====  ==========================================================================
set            lang  audio / reference
=============  ====  ==========================================================================
asterisk-it    it    Asterisk core sounds, Italian (Carlo Flora), G.722 16 kHz / the package's
                     prompt list ``core-sounds-it.txt.gz``
asterisk-ru    ru    Asterisk core sounds, Russian (ivrvoice.ru), G.722 / ``core-sounds-ru.txt.gz``
fillets-cs     cs    Fish Fillets NG dialogue, Czech voices (ogg) / ``dialogStr`` of the level's
                     ``dialogs_cs.lua`` for the sound's dialog id
fillets-nl     nl    the same game, Dutch voices / ``dialogs_nl.lua``
tuxpaint-ro    ro    Tux Paint stamp descriptions spoken in Romanian (``*_desc_ro.ogg``) / the
                     stamp's ``ro.utf8=`` line
=============  ====  ==========================================================================

Sets built only when ``--sets`` names them (``--sets all``: every set below and above):

=============  ====  ==========================================================================
asterisk-en    en    Asterisk core sounds, English (Allison), G.722 / ``core-sounds-en.txt.gz``;
asterisk-es    es    Spanish (Allison, es_MX) and French (June, fr_CA) the same way. Their split is
asterisk-fr    fr    ``corpora/telephony/<lang>/``'s: ``test.tsv`` prompts are ``test``, ``train.tsv``
                     prompts (which ``research/short_context.py`` tuned the guard on) ``dev``
librivox       en    pocketsphinx-testdata's five LibriVox clips (one passage) / its
                     ``transcription``; all ``test``
=============  ====  ==========================================================================

Every candidate with audio, a reference and 0.5-28 s of audio is eligible; each set keeps the
``--per-set`` eligible utterances with the lowest SHA-256 of (seed, set, name); in that order every
third utterance (the 1st, 4th, 7th, ...) is in the ``dev`` split, the others in ``test``. A larger
``--per-set`` only adds utterances: every earlier one keeps its split. Sets with a split of their own
(``FIXED_SPLIT``) keep up to ``ceil(2 N / 3)`` test and ``N // 3`` dev utterances, each the lowest hashes
of its split. Dev and test never share a recording: a dev utterance whose packaged file has the same
bytes as a test utterance's (of any set) is dropped, and a name is one recording whatever its codec
(only G.722 is read from the Asterisk packages).

Needs (Debian bookworm; sox is already a ``make bench-data`` package)::

    apt-get install -y sox libsox-fmt-base asterisk-core-sounds-it asterisk-core-sounds-it-g722 \\
        asterisk-core-sounds-ru asterisk-core-sounds-ru-g722 fillets-ng-data fillets-ng-data-cs \\
        fillets-ng-data-nl tuxpaint-stamps-default

Usage::

    .venv/bin/python benchmarks/wer_sets.py              # build (incremental: existing FLACs are kept)
    .venv/bin/python benchmarks/wer_sets.py --list       # candidates and kept counts, no audio written
    .venv/bin/python benchmarks/wer_sets.py --force      # rewrite every FLAC
    #   --sets asterisk-it,fillets-nl   --per-set N (default 54)   --seed S (default 0)   --out DIR

Manifest line (sorted by id; ``audio`` is relative to the manifest's folder)::

    {"id": "asterisk-it/conf-locked", "audio": "asterisk-it/conf-locked.flac",
     "text": "Questa conferenza è bloccata!", "lang": "it", "set": "asterisk-it", "split": "dev",
     "duration": 1.548, "package": "asterisk-core-sounds-it-g722", "version": "1.6.1-1",
     "origin": "/usr/share/asterisk/sounds/it_IT_m_Carlo/conf-locked.g722"}
"""

from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SR = 16000
MIN_S, MAX_S = 0.5, 28.0       # one Whisper window each; shorter clips are clicks or single syllables
G722_BYTES_PER_S = 8000        # G.722 at 64 kbit/s

ASTERISK = {"it": "it_IT_m_Carlo", "ru": "ru_RU_f_IvrvoiceRU",
            "en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June"}
ASTERISK_DOC = "/usr/share/doc/asterisk-core-sounds-{lang}/core-sounds-{lang}.txt.gz"
ASTERISK_SOUNDS = "/usr/share/asterisk/sounds/{voice}"
#: silence/N is silence ('(6 secondi di silenzio)'); letters/ are symbol and letter names, which Whisper
#: writes as the symbol or letter ('percento' -> '%', 'h' -> 'H'): a spelling convention, not a recognition error
SKIP_ASTERISK = ("silence/", "letters/")
FILLETS = "/usr/share/games/fillets-ng"
TUXPAINT = "/usr/share/tuxpaint/stamps"
SETS = ("asterisk-it", "asterisk-ru", "fillets-cs", "fillets-nl", "tuxpaint-ro")
#: built when ``--sets`` names them (or ``--sets all``)
EXTRA_SETS = ("asterisk-en", "asterisk-es", "asterisk-fr", "librivox")
LIBRIVOX = "/usr/share/pocketsphinx/test/data/librivox"
#: sets whose split is given, not drawn: name -> "dev" | "test" (names missing: not used)
FIXED_SPLIT = {f"asterisk-{lang}": lang for lang in ("en", "es", "fr")}


@dataclass(frozen=True)
class Candidate:
    set: str
    name: str           # unique within the set; the id is set/name
    lang: str
    text: str
    origin: str         # the packaged audio file
    package: str

    @property
    def id(self) -> str:
        return f"{self.set}/{self.name}"


def stable_hash(*parts: object) -> int:
    """64-bit hash of the parts, independent of PYTHONHASHSEED."""
    data = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def has_words(text: str) -> bool:
    return bool(re.search(r"[^\W\d_]", text))


# ---------------------------------------------------------------- readers
def asterisk_prompts(lang: str) -> dict[str, str]:
    """name -> text from the package's prompt list, as ``corpora/build_real.py`` reads en/es/fr:
    whole-bracket entries ('[beep]') dropped, inline brackets unwrapped or dropped. Also dropped:
    Italian lines whose accented letters the list lost to '?' ('La conferenza ? piena.'). The
    Russian list repeats a few names inside the text ('conf-adminmenu: conf-adminmenu: ...')."""
    out = {}
    if not os.path.isfile(ASTERISK_DOC.format(lang=lang)):
        return out
    with gzip.open(ASTERISK_DOC.format(lang=lang), "rt", encoding="utf-8-sig") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith(";") or ":" not in line:
                continue
            name, text = (s.strip() for s in line.split(":", 1))
            if text.startswith(name + ":"):
                text = text[len(name) + 1:].strip()
            if not name or not text or re.fullmatch(r"\[[^\]]*\]", text):
                continue
            text = re.sub(r"\[([^\]]*)\]", lambda m: m.group(1) if has_words(m.group(1)) else "", text)
            if re.search(r"\?(?!\W*$)", text) and lang == "it":   # '?' inside the line: a lost 'è', 'à', 'ù'
                continue
            text = clean(text)
            if has_words(text):
                out[name] = text
    return out


def read_asterisk(lang: str) -> list[Candidate]:
    """Every prompt with a G.722 file, except ``SKIP_ASTERISK`` and descriptions in parentheses."""
    folder = ASTERISK_SOUNDS.format(voice=ASTERISK[lang])
    out = []
    for name, text in sorted(asterisk_prompts(lang).items()):
        if name.startswith(SKIP_ASTERISK) or re.fullmatch(r"\(.*\)", text):
            continue
        path = os.path.join(folder, name + ".g722")
        if os.path.isfile(path):
            out.append(Candidate(f"asterisk-{lang}", name, lang, text, path, f"asterisk-core-sounds-{lang}-g722"))
    return out


_LUA_STR = r'"((?:[^"\\]|\\.)*)"'
_DIALOG = re.compile(r'dialogId\(\s*' + _LUA_STR + r'\s*,\s*' + _LUA_STR + r'\s*,\s*' + _LUA_STR + r'\s*\)\s*'
                     r'dialogStr\(\s*' + _LUA_STR + r'\s*\)')


def lua_unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": " ", "t": " "}.get(m.group(1), m.group(1)), s)


def read_fillets(lang: str) -> list[Candidate]:
    """Every ``sound/<level>/<lang>/<dialog id>.ogg`` whose level's ``dialogs_<lang>.lua`` holds a
    ``dialogStr`` for that id (the subtitle of that line), except templates the game fills in."""
    out = []
    for lua in sorted(glob.glob(f"{FILLETS}/script/*/*dialogs_{lang}.lua")):
        level = Path(lua).parent.name
        src = Path(lua).read_text(encoding="utf-8")
        for m in _DIALOG.finditer(src):
            dialog_id, text = m.group(1), clean(lua_unescape(m.group(4)))
            path = f"{FILLETS}/sound/{level}/{lang}/{dialog_id}.ogg"
            if "%" in text:   # templates the game fills in ('C%1.': a coordinate of the battleship level)
                continue
            if has_words(text) and os.path.isfile(path):
                out.append(Candidate(f"fillets-{lang}", f"{level}/{dialog_id}", lang, text, path,
                                     f"fillets-ng-data-{lang}"))
    return out


def read_tuxpaint(lang: str) -> list[Candidate]:
    """Every ``<stamp>_desc_<lang>.ogg`` whose ``<stamp>.txt`` has a ``<lang>.utf8=`` description."""
    out = []
    for path in sorted(glob.glob(f"{TUXPAINT}/**/*_desc_{lang}.ogg", recursive=True)):
        txt = path[: -len(f"_desc_{lang}.ogg")] + ".txt"
        if not os.path.isfile(txt):
            continue
        for line in Path(txt).read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(f"{lang}.utf8="):
                text = clean(line.split("=", 1)[1])
                if has_words(text):
                    name = os.path.relpath(path, TUXPAINT)[: -len(f"_desc_{lang}.ogg")]
                    out.append(Candidate(f"tuxpaint-{lang}", name, lang, text, path, "tuxpaint-stamps-default"))
                break
    return out


def read_librivox(lang: str = "en") -> list[Candidate]:
    """pocketsphinx-testdata's LibriVox clips with their line of ``transcription`` (``text (name)``)."""
    listing = Path(LIBRIVOX) / "transcription"
    if not listing.is_file():
        return []
    out = []
    for line in listing.read_text(encoding="utf-8").splitlines():
        text, _, name = line.rpartition("(")
        name, text = name.strip(" )"), clean(text.replace("<s>", "").replace("</s>", ""))
        path = f"{LIBRIVOX}/{name}.wav"
        if os.path.isfile(path) and has_words(text):
            out.append(Candidate("librivox", name, lang, text, path, "pocketsphinx-testdata"))
    return out


def fixed_split(set_name: str) -> dict[str, str]:
    """name -> split for the sets of ``FIXED_SPLIT`` (``corpora/telephony/<lang>/{train,test}.tsv``: train is
    dev here), every name ``test`` for librivox, else empty (the split is drawn)."""
    if set_name == "librivox":
        return {c.name: "test" for c in read_librivox()}
    lang = FIXED_SPLIT.get(set_name)
    if lang is None:
        return {}
    out = {}
    for split, file in (("dev", "train.tsv"), ("test", "test.tsv")):
        for line in (ROOT / "corpora" / "telephony" / lang / file).read_text(encoding="utf-8").splitlines():
            name = line.partition("\t")[0].strip()
            if name:
                out[name] = split
    return out


def candidates(set_name: str) -> list[Candidate]:
    if set_name == "librivox":
        return read_librivox()
    kind, lang = set_name.split("-", 1)
    return {"asterisk": read_asterisk, "fillets": read_fillets, "tuxpaint": read_tuxpaint}[kind](lang)


# ---------------------------------------------------------------- audio
def source_seconds(paths: list[str]) -> list[float]:
    """Durations of packaged files: G.722 from the file size, the rest from ``soxi -D`` (batched)."""
    out: dict[str, float] = {p: os.path.getsize(p) / G722_BYTES_PER_S for p in paths if p.endswith(".g722")}
    rest = [p for p in paths if p not in out]
    for i in range(0, len(rest), 400):
        chunk = rest[i:i + 400]
        lines = subprocess.run(["soxi", "-D", *chunk], check=True, capture_output=True, text=True).stdout.split()
        out.update(zip(chunk, map(float, lines)))
    return [out[p] for p in paths]


def convert(origin: str, out: Path) -> None:
    """Packaged audio -> 16 kHz mono 16-bit FLAC, written atomically (no dither; -G: no clipping)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.stem + ".part.flac")
    fmt = ["-t", "flac", "-r", str(SR), "-c", "1", "-b", "16"]
    if origin.endswith(".g722"):
        from tokenmap_bench import decode_g722

        pcm = (decode_g722(origin).clip(-1.0, 1.0) * 32767).astype("<i2").tobytes()
        subprocess.run(["sox", "-D", "-t", "raw", "-e", "signed", "-b", "16", "-r", str(SR), "-c", "1", "-",
                        *fmt, str(part)], input=pcm, check=True, capture_output=True)
    else:
        subprocess.run(["sox", "-D", "-G", origin, *fmt, str(part)], check=True, capture_output=True)
    os.replace(part, out)


def flac_seconds(path: Path) -> float:
    out = subprocess.run(["soxi", "-s", str(path)], check=True, capture_output=True, text=True).stdout
    return round(int(out) / SR, 3)


def package_version(package: str) -> str:
    try:
        return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


# ---------------------------------------------------------------- planning
def select(cands: list[Candidate], seconds: list[float], n: int, seed: int) -> list[tuple[Candidate, float]]:
    """The ``n`` eligible candidates (``MIN_S`` to ``MAX_S`` of audio) with the lowest seeded hashes."""
    ok = [(c, s) for c, s in zip(cands, seconds) if MIN_S <= s <= MAX_S]
    return sorted(ok, key=lambda cs: stable_hash(seed, cs[0].set, cs[0].name))[:n]


def select_fixed(cands: list[Candidate], seconds: list[float], n: int, seed: int,
                 splits: dict[str, str]) -> list[tuple[Candidate, float, str]]:
    """For a set with a given split: up to ``ceil(2 n / 3)`` test and ``n // 3`` dev candidates of
    ``splits``, each the eligible ones with the lowest seeded hashes."""
    ranked = select([c for c in cands if c.name in splits], [s for c, s in zip(cands, seconds) if c.name in splits],
                    len(cands), seed)
    room = {"test": n - n // 3, "dev": n // 3}
    out = []
    for c, s in ranked:
        split = splits[c.name]
        if room[split] > 0:
            room[split] -= 1
            out.append((c, s, split))
    return out


def file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def split_of(rank: int) -> str:
    """The split of the set's ``rank``-th utterance in selection order: every third one (0, 3, 6, ...) is
    ``dev``, so a set of n holds ceil(n / 3) dev utterances, and a larger ``--per-set`` keeps every earlier
    utterance in its split (the order is the seeded hash's, the same for any n)."""
    return "dev" if rank % 3 == 0 else "test"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--out", type=Path, default=ROOT / "bench-data" / "wer", help="output folder (%(default)s)")
    ap.add_argument("--sets", default=",".join(SETS),
                    help=f"comma-separated sets, or 'all' (default: {','.join(SETS)}; also: {','.join(EXTRA_SETS)})")
    ap.add_argument("--per-set", type=int, default=54, help="utterances kept per set (default %(default)s)")
    ap.add_argument("--seed", type=int, default=0, help="selection and split seed (default %(default)s)")
    ap.add_argument("--force", action="store_true", help="rewrite FLACs that exist")
    ap.add_argument("--list", action="store_true", help="print the counts only, write nothing")
    args = ap.parse_args(argv)

    sets = list(SETS + EXTRA_SETS) if args.sets == "all" else [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in sets if s not in SETS + EXTRA_SETS]
    if unknown:
        ap.error(f"unknown set(s) {', '.join(unknown)}; known: {', '.join(SETS + EXTRA_SETS)}")
    plans, missing = [], []
    for set_name in sets:
        cands = candidates(set_name)
        if not cands:
            missing.append(set_name)
            continue
        seconds = source_seconds([c.origin for c in cands])
        splits = fixed_split(set_name)
        if splits:
            kept = select_fixed(cands, seconds, args.per_set, args.seed, splits)
        else:
            kept = [(c, s, split_of(rank)) for rank, (c, s) in enumerate(select(cands, seconds, args.per_set,
                                                                                  args.seed))]
        total = sum(s for _, s, _ in kept)
        print(f"{set_name}: {len(cands)} with audio and text, {sum(MIN_S <= s <= MAX_S for s in seconds)} "
              f"eligible, {len(kept)} kept, {total / 60:.1f} min", file=sys.stderr)
        plans.extend(kept)
    # dev and test never share a recording: the same packaged bytes under another name leave dev
    test_digests = {file_digest(c.origin) for c, _, split in plans if split == "test"}
    dropped = [c.id for c, _, split in plans if split == "dev" and file_digest(c.origin) in test_digests]
    if dropped:
        print(f"{len(dropped)} dev utterances dropped, the same recording as a test one: {', '.join(dropped)}",
              file=sys.stderr)
    if missing:
        print(f"no audio or text for {', '.join(missing)}: install the packages in this script's header",
              file=sys.stderr)
    if args.list:
        return 1 if missing else 0
    rows = []
    versions: dict[str, str] = {}
    for c, _, split in plans:
        if c.id in dropped:
            continue
        if c.package not in versions:
            versions[c.package] = package_version(c.package)
        audio = Path(c.set) / (c.name + ".flac")
        path = args.out / audio
        if args.force or not path.exists():
            convert(c.origin, path)
        rows.append({"id": c.id, "audio": str(audio), "text": c.text, "lang": c.lang, "set": c.set,
                     "split": split, "duration": flac_seconds(path), "package": c.package,
                     "version": versions[c.package], "origin": c.origin})
    rows.sort(key=lambda r: r["id"])
    keys = ("id", "audio", "text", "lang", "set", "split", "duration", "package", "version", "origin")
    manifest = args.out / "manifest.jsonl"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    tmp = manifest.with_suffix(".jsonl.part")
    tmp.write_text("".join(json.dumps({k: r[k] for k in keys}, ensure_ascii=False) + "\n" for r in rows),
                   encoding="utf-8")
    os.replace(tmp, manifest)
    for set_name in sorted({r["set"] for r in rows}):
        part = [r for r in rows if r["set"] == set_name]
        dev = [r for r in part if r["split"] == "dev"]
        print(f"{set_name}: {len(dev)} dev ({sum(r['duration'] for r in dev) / 60:.1f} min), {len(part) - len(dev)} "
              f"test ({sum(r['duration'] for r in part if r['split'] == 'test') / 60:.1f} min)", file=sys.stderr)
    print(f"{len(rows)} utterances -> {manifest}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
