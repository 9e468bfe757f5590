"""Transcript writers: txt, srt, vtt, json, tsv.

Each writer takes a :class:`Transcript` and returns the file's text. Times are
seconds (float) in the data and formatted per format: SRT ``HH:MM:SS,mmm``,
VTT ``HH:MM:SS.mmm``, TSV integer milliseconds (as openai/whisper writes it).

Example::

    >>> t = Transcript(path="a.wav", language="en", duration=2.0,
    ...                segments=[Segment(0.0, 1.5, " Hello there.")])
    >>> print(render(t, "srt"))
    1
    00:00:00,000 --> 00:00:01,500
    Hello there.
    <BLANKLINE>
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

FORMATS = ("txt", "srt", "vtt", "json", "tsv")


@dataclass(frozen=True)
class Word:
    start: float
    end: float
    word: str
    probability: float


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str
    words: tuple[Word, ...] = ()
    avg_logprob: float = 0.0
    no_speech_prob: float = 0.0


@dataclass(frozen=True)
class Transcript:
    """The result for one audio file; ``stats`` holds decoder statistics."""

    path: str
    language: str
    duration: float
    segments: list[Segment]
    language_probability: float = 1.0
    stats: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segments).strip()


def _clock(seconds: float, sep: str) -> str:
    ms = max(0, int(round(seconds * 1000)))
    hours, ms = divmod(ms, 3_600_000)
    minutes, ms = divmod(ms, 60_000)
    secs, ms = divmod(ms, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{sep}{ms:03d}"


def _txt(t: Transcript) -> str:
    return "".join(s.text.strip() + "\n" for s in t.segments)


def _srt(t: Transcript) -> str:
    blocks = []
    for i, s in enumerate(t.segments, 1):
        blocks.append(f"{i}\n{_clock(s.start, ',')} --> {_clock(s.end, ',')}\n{s.text.strip()}\n")
    return "\n".join(blocks)


def _vtt(t: Transcript) -> str:
    blocks = ["WEBVTT\n"]
    for s in t.segments:
        blocks.append(f"{_clock(s.start, '.')} --> {_clock(s.end, '.')}\n{s.text.strip()}\n")
    return "\n".join(blocks)


def _tsv(t: Transcript) -> str:
    rows = ["start\tend\ttext"]
    for s in t.segments:
        text = s.text.strip().replace("\t", " ")
        rows.append(f"{int(round(s.start * 1000))}\t{int(round(s.end * 1000))}\t{text}")
    return "\n".join(rows) + "\n"


def _json(t: Transcript) -> str:
    data = asdict(t)
    data["text"] = t.text
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


_WRITERS = {"txt": _txt, "srt": _srt, "vtt": _vtt, "json": _json, "tsv": _tsv}


def render(transcript: Transcript, fmt: str) -> str:
    """The text of ``transcript`` in format ``fmt`` (one of :data:`FORMATS`)."""
    try:
        return _WRITERS[fmt](transcript)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}") from None
