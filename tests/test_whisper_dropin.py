"""tokenmap.WhisperModel is a drop-in for faster-whisper's WhisperModel."""

import threading

import numpy as np
import pytest
from faster_whisper.audio import decode_audio

pytestmark = pytest.mark.model

FILES = ["en-agent-pass.flac", "en-basic-pbx-ivr-main.flac", "en-conf-getpin.flac", "en-tt-weasels.flac"]


@pytest.fixture(scope="module")
def long_audio(data_dir):
    """About 34 s of speech: two 30-second windows, the second conditioned on the first."""
    return np.concatenate([decode_audio(str(data_dir / f)) for f in FILES])


@pytest.fixture(scope="module")
def plain(base_model_dir):
    from faster_whisper import WhisperModel

    return WhisperModel(str(base_model_dir), device="cpu", compute_type="float32", cpu_threads=2)


@pytest.fixture(scope="module")
def spec(base_model_dir):
    """tokenmap's model on faster-whisper's encoder (CTranslate2), so that its segments must be faster-whisper's."""
    from tokenmap import WhisperModel

    return WhisperModel(str(base_model_dir), device="cpu", compute_type="float32", cpu_threads=2, encoder="ctranslate2")


def run(model, audio, **kw):
    # temperature 0 only: the fallback's sampling draws from CTranslate2's random
    # state, which depends on the model's call history (beam fallback: below)
    kw.setdefault("temperature", 0.0)
    segments, info = model.transcribe(audio, beam_size=1, **kw)
    return [(s.start, s.end, s.text, round(s.avg_logprob, 3), [(w.word, w.start, w.end) for w in s.words or []])
            for s in segments], info.language


@pytest.mark.parametrize("kw", [
    dict(language="en"),
    dict(language="en", without_timestamps=True, word_timestamps=True),
    dict(vad_filter=True, condition_on_previous_text=True),  # language detected
])
def test_long_form_same_segments(plain, spec, long_audio, kw):
    expected = run(plain, long_audio, **kw)
    got = run(spec, long_audio, **kw)
    assert got == expected
    stats = spec.last_stats()
    assert stats["windows"] >= 2 and stats["fallbacks"] == 0


def test_beam_search_falls_back_to_generate(plain, spec, data_dir):
    audio = decode_audio(str(data_dir / "en-conf-getpin.flac"))
    segs_p, _ = plain.transcribe(audio, beam_size=2, language="en")
    segs_s, _ = spec.transcribe(audio, beam_size=2, language="en")
    assert [s.text for s in segs_s] == [s.text for s in segs_p]
    assert spec.last_stats()["fallbacks"] >= 1


def test_concurrent_transcriptions_match_serial(spec, data_dir):
    audios = [decode_audio(str(data_dir / f)) for f in FILES]
    serial = [run(spec, a, language="en")[0] for a in audios]
    results = [None] * len(audios)

    def work(i):
        results[i] = run(spec, audios[i], language="en")[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(audios))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == serial
