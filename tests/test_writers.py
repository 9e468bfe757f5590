import json

import pytest

from tokenmap.writers import FORMATS, MAX_LINE, Segment, SegmentWriter, Transcript, Word, cues, render


@pytest.fixture
def transcript():
    segs = [
        Segment(0.0, 1.25, " Hello there.", (Word(0.0, 0.5, " Hello", 0.9), Word(0.5, 1.25, " there.", 0.8))),
        Segment(3661.5, 3662.0, " Bye\tnow."),
    ]
    return Transcript("a.wav", "en", 3662.0, segs)


def test_srt_and_vtt_clocks(transcript):
    srt = render(transcript, "srt")
    assert "1\n00:00:00,000 --> 00:00:01,250\nHello there.\n" in srt
    assert "01:01:01,500 --> 01:01:02,000" in srt
    vtt = render(transcript, "vtt")
    assert vtt.startswith("WEBVTT\n") and "01:01:01.500 --> 01:01:02.000" in vtt


def test_tsv_is_milliseconds_and_tab_safe(transcript):
    rows = render(transcript, "tsv").splitlines()
    assert rows[0] == "start\tend\ttext"
    assert rows[2] == "3661500\t3662000\tBye now."


def test_json_round_trips(transcript):
    data = json.loads(render(transcript, "json"))
    assert data["text"] == "Hello there. Bye\tnow."
    assert data["segments"][0]["words"][1]["word"] == " there."


def test_txt_and_unknown_format(transcript):
    assert render(transcript, "txt") == "Hello there.\nBye\tnow.\n"
    with pytest.raises(ValueError, match="unknown format"):
        render(transcript, "docx")
    assert set(FORMATS) == {"txt", "srt", "vtt", "json", "tsv"}


def _spoken(text, start=0.0, step=0.5):
    """A segment whose words are ``text``'s, each ``step`` seconds long, from ``start``."""
    words = tuple(Word(start + i * step, start + (i + 1) * step, " " + w, 0.9) for i, w in enumerate(text.split()))
    return Segment(start, words[-1].end + 0.7, " " + text, words)


def test_word_timestamps_make_srt_and_vtt_cues_per_line_of_words():
    long = _spoken("Please enter your password followed by the pound key, then press star to finish.", start=10.0)
    t = Transcript("a.wav", "en", 30.0, [Segment(0.0, 2.0, " No words here."), long])
    srt = render(t, "srt").split("\n\n")
    assert srt[0] == "1\n00:00:00,000 --> 00:00:02,000\nNo words here."  # without words: the segment's times
    lines = [block.splitlines()[2] for block in srt[1:]]
    assert " ".join(lines) == long.text.strip() and len(lines) == 2  # 82 characters: two lines of about 41
    assert all(len(line) <= MAX_LINE for line in lines)
    first = long.words[len(lines[0].split()) - 1]
    assert srt[1].splitlines()[:2] == ["2", f"00:00:10,000 --> 00:00:{first.end:06.3f}".replace(".", ",")]
    assert srt[2].splitlines()[1].endswith(f"--> 00:00:{long.words[-1].end:06.3f}".replace(".", ","))
    vtt = render(t, "vtt")
    assert vtt.count(" --> ") == 3 and "00:00:10.000 --> " in vtt
    # one word longer than a line is a cue of its own
    word = Segment(0.0, 3.0, " " + "x" * 50 + " y", (Word(0.0, 1.0, " " + "x" * 50, 1.0), Word(1.0, 2.0, " y", 1.0)))
    assert [text for _, _, text in cues(word)] == ["x" * 50, "y"]


@pytest.mark.parametrize("fmt", ["txt", "srt", "vtt", "tsv"])
def test_pieces_add_up_to_the_rendered_file(fmt):
    """A file written segment by segment (`tokenmap transcribe -o`) equals the one rendered at the end."""
    segments = [Segment(2.0 * i, 2.0 * i + 1.5, f" Segment\tnumber {i}.") for i in range(3)]
    segments.append(_spoken("a segment with word timestamps long enough for two subtitle lines", start=8.0))
    for n in (0, 1, 4):
        writer = SegmentWriter(fmt)
        streamed = writer.header() + "".join(writer.piece(s) for s in segments[:n])
        assert streamed == render(Transcript("a.wav", "en", 9.0, segments[:n]), fmt)
    with pytest.raises(ValueError, match="segment by segment"):
        SegmentWriter("json")
