"""tokenmap.WhisperModel is a drop-in for faster-whisper's WhisperModel."""

import contextlib
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
    """tokenmap's model on faster-whisper's engine (the fork, which ``plain`` runs: encoder and plain windows), so
    that its segments must be faster-whisper's. ``"ctranslate2"`` would encode and decode plain windows with stock
    CTranslate2 in its worker where it is installed: another build, whose numbers may differ on another CPU."""
    from tokenmap import WhisperModel

    return WhisperModel(str(base_model_dir), device="cpu", compute_type="float32", cpu_threads=2, encoder="fork")


def run(model, audio, one_blas_thread=True, **kw):
    # temperature 0 only: the fallback's sampling draws from CTranslate2's random
    # state, which depends on the model's call history (beam fallback: below).
    # numpy's BLAS on one thread, as tokenmap's transcribe holds it: faster-whisper's own (plain) otherwise
    # computes features about 1e-7 apart
    from tokenmap.runtime.threads import blas_single_thread

    kw.setdefault("temperature", 0.0)
    with blas_single_thread() if one_blas_thread else contextlib.nullcontext():
        segments, info = model.transcribe(audio, beam_size=1, **kw)
        segments = list(segments)
    return [(s.start, s.end, s.text, [(w.word, w.start, w.end) for w in s.words or []]) for s in segments], \
        [s.avg_logprob for s in segments], info.language


def assert_same(got, expected):
    """Segments (times, text, words) and language equal; the mean log-probability to 1e-3 (float32: the drafting
    loop's batched logits equal the step logits to about 1e-5, so a rounded value may round the other way)."""
    assert (got[0], got[2]) == (expected[0], expected[2])
    assert got[1] == pytest.approx(expected[1], abs=1e-3)


@pytest.mark.parametrize("kw", [
    dict(language="en"),
    dict(language="en", without_timestamps=True, word_timestamps=True),
    dict(vad_filter=True, condition_on_previous_text=True),  # language detected
])
def test_long_form_same_segments(plain, spec, long_audio, kw):
    expected = run(plain, long_audio, **kw)
    got = run(spec, long_audio, **kw)
    assert_same(got, expected)
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
    serial = [run(spec, a, one_blas_thread=False, language="en") for a in audios]
    results = [None] * len(audios)

    def work(i):
        results[i] = run(spec, audios[i], one_blas_thread=False, language="en")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(audios))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, expected in zip(results, serial):
        assert_same(got, expected)
