"""Read domain transcripts as a stream of :class:`Utterance`.

Accepted inputs (each may also be gzip-compressed, ``.gz``):

* ``.txt`` - one utterance a line;
* ``.jsonl`` - one JSON object a line with ``text`` and optional ``domain``, ``lang`` (teacher transcripts
  too); a line that is not a JSON object, or longer than ``MAX_LINE_BYTES``, raises :class:`CorpusError`
  naming the file and line (the file is damaged or not JSON lines); an object without a ``text`` string is
  skipped and counted;
* ``.csv`` / ``.tsv`` - a header row; the text column is ``text_column`` (default ``text``), optional
  ``domain`` / ``lang`` columns;
* directories - every file above, walked in sorted order.

The domain defaults to the parent folder name; in a ``<domain>/<lang>/train.txt`` layout (the parent looks
like a language code) the grandparent is the domain and the parent the language. Bad lines (binary, not UTF-8,
longer than ``MAX_CHARS``) are skipped and counted, empty ones skipped; an empty corpus or an unreadable file
raises :class:`CorpusError` with a one-line message.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("tokenmap")

MAX_CHARS = 10_000
_MAX_BYTES = 4 * MAX_CHARS + 16  # a UTF-8 char is at most 4 bytes
#: the longest JSON line read (a record with its fields and escapes); a longer one is refused
MAX_LINE_BYTES = 1 << 20
KINDS = {".txt": "txt", ".jsonl": "jsonl", ".csv": "csv", ".tsv": "tsv"}
#: Whisper's language codes (a folder with one of these names is a language)
WHISPER_LANGS = frozenset([
    "en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv", "it", "id", "hi", "fi",
    "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no", "th", "ur", "hr", "bg", "lt", "la", "mi", "ml",
    "cy", "sk", "te", "fa", "lv", "bn", "sr", "az", "sl", "kn", "et", "mk", "br", "eu", "is", "hy", "ne", "mn", "bs",
    "kk", "sq", "sw", "gl", "mr", "pa", "si", "km", "sn", "yo", "so", "af", "oc", "ka", "be", "tg", "sd", "gu", "am",
    "yi", "lo", "uz", "fo", "ht", "ps", "tk", "nn", "mt", "sa", "lb", "my", "bo", "tl", "mg", "as", "tt", "haw",
    "ln", "ha", "ba", "jw", "su", "yue",
])
_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


class CorpusError(ValueError):
    """The corpus cannot be used (one-line message for the user)."""


@dataclass(frozen=True)
class Utterance:
    """One transcript line: its text, domain and language (``""`` if unknown)."""

    text: str
    domain: str = ""
    lang: str = ""


@dataclass
class CorpusStats:
    """Counters filled while reading (mutable on purpose: it accumulates)."""

    utterances: int = 0
    skipped: Counter = field(default_factory=Counter)
    domains: Counter = field(default_factory=Counter)
    langs: Counter = field(default_factory=Counter)
    files: dict = field(default_factory=dict)  # path -> sha256 hex


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes (as stored, i.e. compressed for ``.gz``)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _kind(path: Path) -> tuple[str | None, bool]:
    suffixes = [s.lower() for s in path.suffixes]
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    if gz:
        suffixes = suffixes[:-1]
    return (KINDS.get(suffixes[-1]) if suffixes else None), gz


def expand_paths(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Files named by ``paths`` (directories walked, sorted), errors for missing ones.

    Each file is read once: a second path to the same file (a symbolic link
    such as ``corpora/maintenance/train.txt -> en/train.txt``, or a file named
    twice) is dropped.  A directory walk skips ``test*`` files and links to them.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _kind(p)[0])
            held_out = [p for p in found if p.name.lower().startswith("test")
                        or p.resolve().name.lower().startswith("test")]  # or a link to such a file
            if held_out:  # held-out splits never enter a map unless named one by one
                log.info("%s: skipping %d held-out file(s) named test*", path, len(held_out))
                found = [p for p in found if p not in held_out]
            if not found:
                raise CorpusError(f"{path}: no .txt/.jsonl/.csv/.tsv files in this directory")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise CorpusError(f"{path}: no such file or directory")
    seen: dict[str, Path] = {}  # real path -> the first path named to it (each one a new Path)
    for p in files:
        first = seen.setdefault(os.path.realpath(p), p)
        if first is not p:
            log.info("%s: same file as %s, read once", p, first)
    return list(seen.values())


def default_domain_lang(path: Path) -> tuple[str, str]:
    """Domain and language guessed from the folders above ``path``."""
    parent = path.resolve().parent
    if parent.name.lower() in WHISPER_LANGS and parent.parent.name:
        return parent.parent.name, parent.name
    return parent.name, ""


def _open_binary(path: Path, gz: bool):
    try:
        f = gzip.open(path, "rb") if gz else open(path, "rb")
        head = f.peek(4096)[:4096] if hasattr(f, "peek") else b""
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        f.close()
        raise CorpusError(f"{path}: looks binary (NUL bytes), not a text corpus")
    return f


def _lines(path: Path, gz: bool, stats: CorpusStats, limit: int | None = None) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a file, decoded and length-checked; bad lines are counted in ``stats``.

    Without ``limit``, a line longer than ``MAX_CHARS`` is skipped (and read no
    further than ``_MAX_BYTES`` at a time); with it, a line longer than ``limit``
    bytes raises :class:`CorpusError` naming the line, after reading at most
    that many bytes of it."""
    f = _open_binary(path, gz)
    number = 0
    try:
        while True:
            try:
                raw = f.readline((limit or _MAX_BYTES) + 1)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise CorpusError(f"{path}: cannot read ({exc})") from exc
            if not raw:
                return
            number += 1
            if len(raw) > (limit or _MAX_BYTES) and not raw.endswith(b"\n"):
                if limit:
                    raise CorpusError(f"{path}:{number}: a line longer than {limit // (1 << 20)} MB "
                                      "(is the file JSON lines, one record a line?)")
                stats.skipped["too long"] += 1
                while raw and not raw.endswith(b"\n"):  # drain the rest of the line
                    raw = f.readline(1 << 20)
                continue
            try:
                line = raw.decode("utf-8-sig" if raw.startswith(b"\xef\xbb\xbf") else "utf-8")
            except UnicodeDecodeError:
                stats.skipped["not UTF-8"] += 1
                continue
            if _CONTROL_RE.search(line):
                stats.skipped["binary"] += 1
                continue
            if not limit and len(line) > MAX_CHARS:
                stats.skipped["too long"] += 1
                continue
            yield number, line.rstrip("\r\n")
    finally:
        f.close()


def _records(path: Path, kind: str, gz: bool, stats: CorpusStats, text_column: str) -> Iterator[tuple]:
    """(text, domain, lang) records of one file; domain/lang may be None."""
    if kind == "jsonl":
        yield from _json_records(path, gz, stats)
        return
    lines = (line for _, line in _lines(path, gz, stats))
    if kind == "txt":
        for line in lines:
            yield line, None, None
    else:
        reader = csv.DictReader(lines, delimiter="\t" if kind == "tsv" else ",")
        if reader.fieldnames is None:
            return
        if text_column not in reader.fieldnames:
            raise CorpusError(f"{path}: no column {text_column!r} (columns: {', '.join(reader.fieldnames)});"
                              " choose one with --text-column")
        for row in reader:
            text = row.get(text_column)
            if text is None:
                stats.skipped["bad CSV row"] += 1
                continue
            yield text, row.get("domain") or None, row.get("lang") or None


def _json_records(path: Path, gz: bool, stats: CorpusStats) -> Iterator[tuple]:
    """(text, domain, lang) of each JSON line; a line that is not a JSON object is an error naming it."""
    for number, line in _lines(path, gz, stats, limit=MAX_LINE_BYTES):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{path}:{number}: not JSON ({exc.msg}: column {exc.colno})") from None
        except (ValueError, RecursionError):  # a number too long to convert, nesting too deep
            raise CorpusError(f"{path}:{number}: not a JSON object") from None
        if not isinstance(obj, dict):
            raise CorpusError(f"{path}:{number}: a JSON {type(obj).__name__}, not an object with a \"text\"")
        text = obj.get("text")
        if not isinstance(text, str):
            stats.skipped["bad JSON line"] += 1
        elif len(text) > MAX_CHARS:
            stats.skipped["too long"] += 1
        else:
            yield text, _str_or_none(obj.get("domain")), _str_or_none(obj.get("lang"))


def _str_or_none(value) -> str | None:
    return value if isinstance(value, str) and value else None


def read_corpus(paths: Iterable[str | os.PathLike], *, text_column: str = "text",
                stats: CorpusStats | None = None) -> Iterator[Utterance]:
    """Stream the utterances of files and directories (see module docstring).

    Raises :class:`CorpusError` for missing or unreadable inputs; the caller
    checks ``stats.utterances`` for an empty corpus (see :func:`check_nonempty`).
    """
    stats = stats if stats is not None else CorpusStats()
    for path in expand_paths(paths):
        kind, gz = _kind(path)
        kind = kind or "txt"
        domain, lang = default_domain_lang(path)
        stats.files[str(path)] = file_sha256(path)
        for text, dom, lg in _records(path, kind, gz, stats, text_column):
            text = " ".join(text.split())
            if not text:
                stats.skipped["empty"] += 1
                continue
            utt = Utterance(text, dom or domain, lg or lang)
            stats.utterances += 1
            stats.domains[utt.domain] += 1
            stats.langs[utt.lang] += 1
            yield utt
    bad = {k: v for k, v in stats.skipped.items() if k != "empty"}
    if bad:
        log.warning("skipped %d corpus lines (%s)", sum(bad.values()),
                    ", ".join(f"{v} {k}" for k, v in sorted(bad.items())))


def check_nonempty(stats: CorpusStats) -> None:
    """Raise :class:`CorpusError` when reading produced no utterance, or skipped more lines than it read
    (not UTF-8, binary, too long, bad records: the input is not a transcript file)."""
    detail = ", ".join(f"{v} {k}" for k, v in sorted(stats.skipped.items()))
    if stats.utterances == 0:
        raise CorpusError("the corpus has no usable utterances" + (f" ({detail} lines skipped)" if detail else ""))
    bad = {k: v for k, v in sorted(stats.skipped.items()) if k != "empty"}
    n_bad = sum(bad.values())
    if n_bad > stats.utterances:
        raise CorpusError(f"the corpus is mostly not text: {n_bad} of {n_bad + stats.utterances} lines skipped "
                          f"({', '.join(f'{v} {k}' for k, v in bad.items())}); check the input files")
