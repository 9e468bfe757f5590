#!/usr/bin/env python3
"""Build the corpora that come from installed Debian packages (no network, stdlib only).

telephony/<lang>  from asterisk-core-sounds-<lang> prompt transcripts (CC-BY-SA-3.0)
opendomain/en     from r-cran-janeaustenr (Jane Austen's novels, public domain; package MIT)
                  plus the LibriVox clip transcripts of pocketsphinx-testdata (test only)

Prerequisites (Debian bookworm)::

    apt-get update
    apt-get install -y asterisk-core-sounds-en asterisk-core-sounds-es asterisk-core-sounds-fr \\
                       asterisk-core-sounds-it asterisk-core-sounds-ru pocketsphinx-testdata
    # janeaustenr: only its data files are needed, not R itself
    (cd /tmp && apt-get download r-cran-janeaustenr && dpkg -x r-cran-janeaustenr_*_all.deb /tmp/janeaustenr)

Usage::

    python corpora/build_real.py                      # write all
    python corpora/build_real.py --check              # compare with the committed files
    python corpora/build_real.py --janeaustenr /tmp/janeaustenr/usr/lib/R/site-library/janeaustenr
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import re
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate import _write  # noqa: E402  (one writer for every committed split)

HERE = os.path.dirname(os.path.abspath(__file__))
ASTERISK_DOC = "/usr/share/doc/asterisk-core-sounds-{lang}/core-sounds-{lang}.txt.gz"
LIBRIVOX_DIR = "/usr/share/pocketsphinx/test/data/librivox"
JANEAUSTENR_DEFAULTS = ["/usr/lib/R/site-library/janeaustenr",
                        "/tmp/janeaustenr/usr/lib/R/site-library/janeaustenr"]

TEST_PERCENT = 20          # telephony: share of prompt groups held out
OPEN_TRAIN_N = 20000       # opendomain: train sentences kept (file stays < 2 MB)
OPEN_TEST_N = 200          # opendomain: test sentences in all (LibriVox clips + held-out novel)


def _h(s: str) -> int:
    return int.from_bytes(hashlib.sha256(s.encode("utf-8")).digest()[:8], "big")


# --------------------------------------------------------------------------
# telephony
# --------------------------------------------------------------------------

def read_asterisk(lang: str) -> list[tuple[str, str]]:
    """(name, text) for every spoken prompt. Whole-bracket entries ('[beep]') are not speech and are
    dropped; inline brackets are dropped when they hold no letters ('at [@]' -> 'at') and unwrapped
    otherwise ('Sus saludos [temporales] estan' -> 'Sus saludos temporales estan'). Italian lines whose
    accented letters the list lost to '?' ('La conferenza ? piena.') are dropped; the Russian list
    repeats a few names inside the text ('conf-adminmenu: conf-adminmenu: ...')."""
    out = []
    with gzip.open(ASTERISK_DOC.format(lang=lang), "rt", encoding="utf-8-sig") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith(";"):
                continue
            if ":" not in line:
                continue
            name, text = line.split(":", 1)
            name, text = name.strip(), text.strip()
            if text.startswith(name + ":"):
                text = text[len(name) + 1:].strip()
            if not name or not text:
                continue
            if re.fullmatch(r"\[[^\]]*\]", text):
                continue
            if lang == "it" and re.search(r"\?(?!\W*$)", text):
                continue
            text = re.sub(r"\[([^\]]*)\]", lambda m: m.group(1) if re.search(r"[^\W\d_]", m.group(1)) else "", text)
            text = re.sub(r"\s+", " ", text).strip()
            if not re.search(r"[^\W_]", text):
                continue
            out.append((name, text))
    return out


def split_telephony(prompts: list[tuple[str, str]]):
    """Deterministic split by prompt name. Prompts with identical text (case/space-insensitive) are
    kept together, so a test text never occurs in train; the group goes by the sha256 of its
    alphabetically first name: test if sha256(name) mod 100 < TEST_PERCENT."""
    groups: dict[str, list[str]] = {}
    for name, text in prompts:
        groups.setdefault(text.lower(), []).append(name)
    is_test = {}
    for key, names in groups.items():
        t = _h(min(names)) % 100 < TEST_PERCENT
        for n in names:
            is_test[n] = t
    train = [(n, t) for n, t in prompts if not is_test[n]]
    test = [(n, t) for n, t in prompts if is_test[n]]
    assert not ({t.lower() for _, t in train} & {t.lower() for _, t in test})
    return train, test


def build_telephony(check: bool) -> bool:
    ok = True
    for lang in ("en", "es", "fr", "it", "ru"):
        if not os.path.exists(ASTERISK_DOC.format(lang=lang)):
            print(f"skip telephony/{lang}: asterisk-core-sounds-{lang} not installed", file=sys.stderr)
            continue
        train, test = split_telephony(read_asterisk(lang))
        d = os.path.join(HERE, "telephony", lang)
        ok &= _write(os.path.join(d, "train.tsv"), [f"{n}\t{t}" for n, t in train], check)
        ok &= _write(os.path.join(d, "test.tsv"), [f"{n}\t{t}" for n, t in test], check)
        ok &= _write(os.path.join(d, "train.txt"), [t for _, t in train], check)
        ok &= _write(os.path.join(d, "test.txt"), [t for _, t in test], check)
    return ok


# --------------------------------------------------------------------------
# minimal reader for R's serialization format (enough for janeaustenr's character vectors)
# --------------------------------------------------------------------------

class _RReader:
    def __init__(self, b: bytes):
        self.b, self.p, self.refs = b, 0, []

    def i(self) -> int:
        v = struct.unpack_from(">i", self.b, self.p)[0]
        self.p += 4
        return v

    def load(self):
        if self.b[:2] != b"X\n":
            raise ValueError("not an R XDR serialization")
        self.p = 2
        ver = self.i()
        self.i(); self.i()
        if ver == 3:
            n = self.i()  # length of the native-encoding name
            self.p += n
        return self.item()

    def item(self):
        flags = self.i()
        t = flags & 0xFF
        has_attr, has_tag = flags & (1 << 9), flags & (1 << 10)
        if t in (254, 242):
            return None
        if t == 255:
            idx = flags >> 8 or self.i()
            return self.refs[idx - 1]
        if t == 1:
            sym = ("sym", self.item())
            self.refs.append(sym)
            return sym
        if t == 9:
            n = self.i()
            if n == -1:
                return None
            s = self.b[self.p:self.p + n]
            self.p += n
            return s.decode("latin-1" if (flags >> 12) & 4 else "utf-8")
        if t == 2:
            attr = self.item() if has_attr else None  # noqa: F841
            tag = self.item() if has_tag else None
            car, cdr = self.item(), self.item()
            return [(tag[1] if tag else None, car)] + (cdr if isinstance(cdr, list) else [])
        if t in (16, 19):
            v = [self.item() for _ in range(self.i())]
        elif t in (10, 13):
            n = self.i()
            v = list(struct.unpack_from(f">{n}i", self.b, self.p))
            self.p += 4 * n
        elif t == 14:
            n = self.i()
            v = list(struct.unpack_from(f">{n}d", self.b, self.p))
            self.p += 8 * n
        else:
            raise ValueError(f"unsupported R SEXP type {t}")
        if has_attr:
            attrs = dict(self.item())
            if "names" in attrs:
                return dict(zip(attrs["names"], v))
        return v


def read_janeaustenr(pkgdir: str) -> dict[str, list[str]]:
    base = os.path.join(pkgdir, "data", "Rdata")
    with open(base + ".rdx", "rb") as f:
        index = _RReader(gzip.decompress(f.read())).load()
    with open(base + ".rdb", "rb") as f:
        rdb = f.read()
    books = {}
    for name, (off, ln) in index["variables"].items():
        books[name] = _RReader(zlib.decompress(rdb[off + 4:off + ln])).load()
    return books


# --------------------------------------------------------------------------
# opendomain
# --------------------------------------------------------------------------

# The five LibriVox clips of pocketsphinx-testdata (Sense and Sensibility, chapter 1). Their
# reference text is the clip transcript (what the reader says, including the reader's slip
# "a more a amiable"), in Whisper style: sentence case, "Mr.", hyphens as in the book, final period.
LIBRIVOX_WHISPER = {
    "sense_and_sensibility_01_austen_64kb-0870":
        "And Mr. John Dashwood had then leisure to consider how much there might be prudently in his power to do for them.",
    "sense_and_sensibility_01_austen_64kb-0880": "He was not an ill-disposed young man.",
    "sense_and_sensibility_01_austen_64kb-0890":
        "Unless to be rather cold hearted and rather selfish is to be ill-disposed.",
    "sense_and_sensibility_01_austen_64kb-0920":
        "Had he married a more a amiable woman, he might have been made still more respectable than he was.",
    "sense_and_sensibility_01_austen_64kb-0930": "He might even have been made amiable himself.",
}

TRAIN_BOOKS = ("emma", "mansfieldpark", "northangerabbey", "persuasion", "prideprejudice")
TEST_BOOK = "sensesensibility"


def _paragraphs(lines: list[str]):
    para: list[str] = []
    for line in lines + [""]:
        s = line.strip()
        if s:
            para.append(s)
        elif para:
            yield " ".join(para)
            para = []


_SENT_END = re.compile(r'(?<=[.!?])["\']?\s+(?=["\']?[A-Z])')
_ABBREV = re.compile(r"\b(Mr|Mrs|Dr|St|Messrs|Col)\.$")


def _sentences(text: str):
    text = text.replace("_", "")
    text = re.sub(r"\s*--\s*", " - ", text)
    text = re.sub(r"\s+", " ", text).strip()
    parts = _SENT_END.split(text)
    buf = ""
    for p in parts:
        buf = f"{buf} {p}".strip() if buf else p
        if _ABBREV.search(buf):
            continue
        yield buf
        buf = ""
    if buf:
        yield buf


def book_sentences(lines: list[str]) -> list[str]:
    out = []
    for para in _paragraphs(lines):
        if para.isupper() or re.match(r"^(CHAPTER|Chapter|VOLUME|Volume)\b", para):
            continue
        for s in _sentences(para):
            s = s.strip().strip('"').strip("'").strip()
            s = re.sub(r"^- |\s-$", "", s).strip()
            if not s or not s[0].isalpha() or s[-1] not in ".!?":
                continue
            s = re.sub(r'\s*"\s*', " ", s).strip()  # dialogue quotes: Whisper does not write them
            s = re.sub(r" ([,;:.!?])", r"\1", s)
            n = len(s.split())
            if 4 <= n <= 40 and not s.isupper():
                out.append(s)
    return out


def _ngrams(s: str, n: int = 5) -> set:
    w = re.findall(r"[a-z]+", s.lower())
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def build_opendomain(pkgdir: str | None, check: bool) -> bool:
    if pkgdir is None:
        pkgdir = next((d for d in JANEAUSTENR_DEFAULTS if os.path.isdir(d)), None)
    if pkgdir is None or not os.path.isdir(pkgdir):
        print("skip opendomain: janeaustenr data not found (see --help)", file=sys.stderr)
        return True
    books = read_janeaustenr(pkgdir)
    # check the clip ids against the installed pocketsphinx-testdata when present
    tr = os.path.join(LIBRIVOX_DIR, "transcription")
    if os.path.exists(tr):
        ids = set(re.findall(r"\(([^)]+)\)\s*$", open(tr, encoding="utf-8").read(), re.M))
        assert ids == set(LIBRIVOX_WHISPER), ids
    # train: sentences from five novels, never Sense and Sensibility (the test audio's book)
    pool = []
    seen = set()
    for b in TRAIN_BOOKS:
        for s in book_sentences(books[b]):
            if s not in seen:
                seen.add(s)
                pool.append(s)
    keep = set(sorted(pool, key=_h)[:OPEN_TRAIN_N])
    train = [s for s in pool if s in keep]
    # test: the LibriVox clips, then held-out Sense and Sensibility sentences (lowest sha256 first),
    # skipping any that overlap the clips' passage or occur in train
    clip_grams = set().union(*(_ngrams(t) for t in LIBRIVOX_WHISPER.values()))
    cands = [s for s in dict.fromkeys(book_sentences(books[TEST_BOOK]))
             if s not in seen and not (_ngrams(s) & clip_grams)]
    chosen = set(sorted(cands, key=_h)[:OPEN_TEST_N - len(LIBRIVOX_WHISPER)])
    test_rows = [(k, v) for k, v in sorted(LIBRIVOX_WHISPER.items())]
    for i, s in enumerate(cands):
        if s in chosen:
            test_rows.append((f"text:{TEST_BOOK}:{i}", s))
    assert not ({t for _, t in test_rows} & set(train))
    d = os.path.join(HERE, "opendomain", "en")
    ok = _write(os.path.join(d, "train.txt"), train, check)
    ok &= _write(os.path.join(d, "test.txt"), [t for _, t in test_rows], check)
    ok &= _write(os.path.join(d, "test.tsv"), [f"{n}\t{t}" for n, t in test_rows], check)
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with committed files, do not write")
    ap.add_argument("--janeaustenr", default=None, help="installed or extracted janeaustenr package directory")
    ap.add_argument("--only", choices=("telephony", "opendomain"))
    a = ap.parse_args(argv)
    ok = True
    if a.only in (None, "telephony"):
        ok &= build_telephony(a.check)
    if a.only in (None, "opendomain"):
        ok &= build_opendomain(a.janeaustenr, a.check)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
