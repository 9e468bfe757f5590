#!/usr/bin/env python3
"""Template generator for the synthetic tokenmap domain corpora.

Pure standard library, deterministic for a given seed.

Domains (generated): ``maintenance`` and ``incar``, languages ``en``, ``es``,
``fr``.  Output is written the way Whisper transcribes: sentence case, final
punctuation, digits for numbers, unit symbols or unit words as Whisper tends to
write them ("142.5 bar", "22 degrees", "12 V", "at 10:30"; "142,5 bar" in es/fr).

Usage::

    python corpora/generate.py maintenance --lang en -n 1000000 --seed 7 > big.txt
    python corpora/generate.py --write-splits            # regenerate committed files
    python corpora/generate.py --write-splits --check    # verify they are identical

Library use (the file is not a package; load it by path)::

    import importlib.util
    spec = importlib.util.spec_from_file_location("corpgen", "corpora/generate.py")
    corpgen = importlib.util.module_from_spec(spec); spec.loader.exec_module(corpgen)
    for line in corpgen.generate("incar", "en", 10, seed=1): print(line)

This file is the entry point (CLI, ``generate``, the committed splits, the written style); the
sentence templates live in its sibling modules ``corpgen_*.py``, which it imports after putting
its own directory on ``sys.path``::

    corpgen_common.py          number and capital helpers
    corpgen_maint_tables.py    maintenance vocabulary (readings, devices, parts, defects, ...)
    corpgen_maint.py           maintenance base class and English sentences
    corpgen_maint_romance.py   maintenance Spanish and French (one skeleton, per-language phrases)
    corpgen_incar_tables.py    in-car vocabulary, and the es/fr template lists
    corpgen_incar.py           in-car English sentences, Spanish and French (one skeleton)
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys
from typing import Iterator

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:  # the corpgen_* siblings; corpora/ is not a package
    sys.path.append(_HERE)

from corpgen_incar import InCarEN, InCarES, InCarFR  # noqa: E402
from corpgen_incar_tables import INCAR  # noqa: E402,F401  (re-exported)
from corpgen_maint import MaintEN  # noqa: E402
from corpgen_maint_romance import MaintES, MaintFR  # noqa: E402
from corpgen_maint_tables import (  # noqa: E402,F401  (re-exported)
    DEFECTS, DEVICES, FAMILY_READINGS, LOCATIONS, PARTS, READINGS, TYRES)

INCAR_ES = INCAR["es"]
INCAR_FR = INCAR["fr"]

DOMAINS = ("maintenance", "incar")
LANGS = ("en", "es", "fr")

# Committed splits: sizes and seeds. Changing these changes the committed files.
SPLIT_TRAIN_N = 20000
SPLIT_TEST_N = 200
SPLIT_TRAIN_SEED = 1
SPLIT_TEST_SEED = 2
WRITTEN_N = 3000
WRITTEN_SEED = 3

_MAKERS = {
    ("maintenance", "en"): lambda rng: MaintEN("en", rng),
    ("maintenance", "es"): lambda rng: MaintES("es", rng),
    ("maintenance", "fr"): lambda rng: MaintFR("fr", rng),
    ("incar", "en"): InCarEN,
    ("incar", "es"): InCarES,
    ("incar", "fr"): InCarFR,
}


def generate(domain: str, lang: str = "en", n: int = 1000, seed: int = 0) -> Iterator[str]:
    """Yield ``n`` generated utterances (with repeats) for a generated domain."""
    key = (domain, lang)
    if key not in _MAKERS:
        raise ValueError(f"no generator for domain={domain!r} lang={lang!r}; "
                         f"generated: {sorted(_MAKERS)}")
    g = _MAKERS[key](random.Random(f"{domain}/{lang}/{seed}"))
    sent = g.sentence
    for _ in range(n):
        yield sent()


# --------------------------------------------------------------------------
# written-transcript style (for measuring the builder's style bridge)
# --------------------------------------------------------------------------

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
         "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _int_words(n: int) -> str:
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + _int_words(rest))
    if n < 1000000:
        rest = n % 1000
        return _int_words(n // 1000) + " thousand" + ("" if rest == 0 else " " + _int_words(rest))
    return " ".join(_ONES[int(c)] for c in str(n))


def _number_words(tok: str) -> str:
    t = tok.replace(",", "")
    if "." in t:
        a, b = t.split(".", 1)
        return _int_words(int(a)) + " point " + " ".join(_ONES[int(c)] for c in b)
    if len(t) > 1 and t.startswith("0"):
        return " ".join(_ONES[int(c)] for c in t)
    return _int_words(int(t))


_UNIT_WORDS = [("°C", "degrees celsius"), ("mm/s", "millimeters per second"), ("l/min", "liters per minute"),
               ("MΩ", "megaohms"), ("Ω", "ohms"), ("kW", "kilowatts"), ("Nm", "newton meters"), ("Hz", "hertz"),
               ("dB", "decibels"), ("%", " percent"), ("mm", "millimeters"), ("V", "volts"), ("A", "amps"),
               ("RPM", "rpm")]


def _spell_id(m: "re.Match[str]") -> str:
    """'B2' -> 'b two', 'WO-4821' -> 'w o four eight two one', '2024-0117' -> 'two zero two four zero one one seven'."""
    tok = m.group(0)
    if re.fullmatch(r"L[123]", tok):
        return "l " + _ONES[int(tok[1])]
    out = []
    for ch in tok:
        if ch.isdigit():
            out.append(_ONES[int(ch)])
        elif ch.isalpha():
            out.append(ch.lower())
    return " ".join(out)


def written_style_en(s: str) -> str:
    """Render a Whisper-style English line the way human transcribers often write."""
    for sym, word in _UNIT_WORDS:
        if sym == "%":
            s = s.replace("%", word)
        else:
            s = re.sub(rf"(?<=\d) {re.escape(sym)}(?=[ ,.;:?]|$)", " " + word, s)
    s = re.sub(r"\b(?=[A-Za-z-]*\d)(?=[\dA-Za-z]*[A-Za-z])[A-Za-z\d]+(?:-[A-Za-z\d]+)*\b|\b\d+-\d+(?:-[A-Za-z\d]+)*\b",
               _spell_id, s)
    s = re.sub(r"(\d{1,2}):(\d\d)", lambda m: _int_words(int(m.group(1))) + " " +
               ("o'clock" if m.group(2) == "00" else ("oh " + _ONES[int(m.group(2)[1])] if m.group(2)[0] == "0"
                                                      else _int_words(int(m.group(2))))), s)
    s = re.sub(r"\b(\d+)\.(\d+)\.(\d+)\b",
               lambda m: " point ".join(_int_words(int(g)) for g in m.groups()), s)
    s = re.sub(r"\d[\d,]*(?:\.\d+)?(?=\D|$)",
               lambda m: _number_words(m.group(0).rstrip(",")) + ("," if m.group(0).endswith(",") else ""), s)
    s = s.lower().rstrip(".?!")
    s = re.sub(r"\s+", " ", s).strip()
    return s


# --------------------------------------------------------------------------
# committed splits
# --------------------------------------------------------------------------

def make_splits(domain: str, lang: str) -> tuple[list[str], list[str]]:
    """Train: the first SPLIT_TRAIN_N sentences of the train stream (seed SPLIT_TRAIN_SEED), repeats kept
    (real command logs repeat; frequencies matter for a token map).
    Test: the first SPLIT_TEST_N distinct sentences of an independent stream (seed SPLIT_TEST_SEED)
    that do not occur in train, so no test sentence is ever a train sentence."""
    train = list(generate(domain, lang, SPLIT_TRAIN_N, SPLIT_TRAIN_SEED))
    seen = set(train)
    test: list[str] = []
    for s in generate(domain, lang, 10 ** 7, SPLIT_TEST_SEED):
        if s not in seen:
            seen.add(s)
            test.append(s)
            if len(test) == SPLIT_TEST_N:
                break
    return train, test


def _write(path: str, lines: list[str], check: bool) -> bool:
    data = "".join(l + "\n" for l in lines).encode("utf-8")
    if check:
        try:
            with open(path, "rb") as f:
                same = f.read() == data
        except FileNotFoundError:
            same = False
        print(("ok      " if same else "DIFFERS ") + path, file=sys.stderr)
        return same
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print(f"wrote {path} ({len(lines)} lines)", file=sys.stderr)
    return True


def write_splits(root: str, check: bool = False) -> bool:
    ok = True
    for domain in DOMAINS:
        for lang in LANGS:
            train, test = make_splits(domain, lang)
            d = os.path.join(root, domain, lang)
            ok &= _write(os.path.join(d, "train.txt"), train, check)
            ok &= _write(os.path.join(d, "test.txt"), test, check)
    # written-transcript style rendering (en maintenance, train stream only; never test sentences)
    _, test = make_splits("maintenance", "en")
    test_set = set(test)
    written = [written_style_en(s) for s in generate("maintenance", "en", WRITTEN_N * 2, WRITTEN_SEED)
               if s not in test_set][:WRITTEN_N]
    ok &= _write(os.path.join(root, "maintenance", "en", "train_written.txt"), written, check)
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("domain", nargs="?", choices=DOMAINS)
    ap.add_argument("--lang", default="en", choices=LANGS)
    ap.add_argument("-n", type=int, default=1000, help="number of utterances to stream (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--written", action="store_true", help="render en lines in written-transcript style")
    ap.add_argument("--write-splits", action="store_true",
                    help="regenerate the committed corpora/<domain>/<lang>/{train,test}.txt files")
    ap.add_argument("--check", action="store_true", help="with --write-splits: compare, do not write")
    ap.add_argument("--root", default=os.path.dirname(os.path.abspath(__file__)))
    a = ap.parse_args(argv)
    if a.write_splits:
        return 0 if write_splits(a.root, a.check) else 1
    if not a.domain:
        ap.error("give a domain, or --write-splits")
    if a.written and a.lang != "en":
        ap.error("--written is implemented for en only")
    out = sys.stdout
    buf = []
    for s in generate(a.domain, a.lang, a.n, a.seed):
        buf.append(written_style_en(s) if a.written else s)
        if len(buf) >= 10000:
            out.write("\n".join(buf) + "\n")
            buf.clear()
    if buf:
        out.write("\n".join(buf) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
