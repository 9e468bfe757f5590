"""Transcript writers: txt, srt, vtt, json, tsv.

Each writer takes a :class:`Transcript` and returns the file's text. Times are seconds (float) in the data;
SRT writes them ``HH:MM:SS,mmm``, VTT ``HH:MM:SS.mmm``, TSV integer milliseconds (as openai/whisper does).
SRT and VTT write one cue per segment, or per line of its words when it has word timestamps (:func:`cues`).
txt, srt, vtt and tsv are a header followed by one piece per segment, so a :class:`SegmentWriter` can write a
file segment by segment as it is decoded.

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
import math
from dataclasses import asdict, dataclass, field

FORMATS = ("txt", "srt", "vtt", "json", "tsv")
#: the formats a :class:`SegmentWriter` writes segment by segment (json needs the whole transcript)
STREAMED = ("txt", "srt", "vtt", "tsv")
#: characters a subtitle line built from word timestamps holds at most (a common subtitle line length)
MAX_LINE = 42


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


def cues(segment: Segment, max_chars: int = MAX_LINE) -> list[tuple[float, float, str]]:
    """``(start, end, text)`` of each subtitle cue of ``segment``: the segment itself, or with word
    timestamps one cue per line of its words: as few lines as hold ``max_chars`` characters each (more
    when one word is longer), of about equal length.

    >>> words = tuple(Word(i, i + 0.5, w, 1.0) for i, w in enumerate([" Please", " enter", " the", " pin."]))
    >>> cues(Segment(0.0, 4.0, " Please enter the pin.", words), max_chars=12)
    [(0, 1.5, 'Please enter'), (2, 3.5, 'the pin.')]
    """
    if not segment.words:
        return [(segment.start, segment.end, segment.text.strip())]

    def text(words) -> str:
        return "".join(w.word for w in words).strip()

    target = len(text(segment.words)) / math.ceil(len(text(segment.words)) / max_chars or 1)
    lines: list[list[Word]] = [[]]
    for word in segment.words:
        line = lines[-1]
        if line and (len(text(line)) >= target or len(text(line + [word])) > max_chars):
            lines.append([word])
        else:
            line.append(word)
    return [(line[0].start, line[-1].end, text(line)) for line in lines]


class SegmentWriter:
    """One file of a streamed format (:data:`STREAMED`), written segment by segment: :meth:`header`, then
    :meth:`piece` of each segment in order; together they equal :func:`render` of the transcript."""

    def __init__(self, fmt: str):
        if fmt not in STREAMED:
            raise ValueError(f"{fmt} is not written segment by segment; choose from {', '.join(STREAMED)}")
        self.fmt = fmt
        self.cue_count = 0  # srt numbers its cues from 1

    def header(self) -> str:
        return {"vtt": "WEBVTT\n", "tsv": "start\tend\ttext\n"}.get(self.fmt, "")

    def piece(self, segment: Segment) -> str:
        if self.fmt == "txt":
            return segment.text.strip() + "\n"
        if self.fmt == "tsv":
            text = segment.text.strip().replace("\t", " ")
            return f"{int(round(segment.start * 1000))}\t{int(round(segment.end * 1000))}\t{text}\n"
        out = []
        for start, end, text in cues(segment):
            if self.fmt == "vtt":
                out.append(f"\n{_clock(start, '.')} --> {_clock(end, '.')}\n{text}\n")
            else:
                self.cue_count += 1
                gap = "\n" if self.cue_count > 1 else ""
                out.append(f"{gap}{self.cue_count}\n{_clock(start, ',')} --> {_clock(end, ',')}\n{text}\n")
        return "".join(out)


def render(transcript: Transcript, fmt: str) -> str:
    """The text of ``transcript`` in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "json":
        return json.dumps({**asdict(transcript), "text": transcript.text}, ensure_ascii=False, indent=1) + "\n"
    if fmt in STREAMED:
        writer = SegmentWriter(fmt)
        return writer.header() + "".join(writer.piece(s) for s in transcript.segments)
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
