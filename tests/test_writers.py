import json

import pytest

from tokenmap.writers import FORMATS, Segment, Transcript, Word, render


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
