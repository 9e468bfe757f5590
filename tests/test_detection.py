"""Language detection shares its encoder pass with the first window (tokenmap.windows)."""


import numpy as np
import pytest
from faster_whisper.audio import decode_audio

from tokenmap import whisper
from tokenmap.runtime.threads import blas_single_thread
from tokenmap.windows import first_window


def test_first_window_drops_only_the_padding_frame_of_a_one_window_file():
    assert first_window(np.zeros((80, 3001))).shape == (80, 3000)
    assert first_window(np.zeros((80, 3002))).shape == (80, 3002)  # longer: the first 3000 frames already agree
    assert first_window(np.zeros((80, 1))).shape == (80, 1)


@pytest.fixture(scope="module")
def model(base_model_dir):
    from tokenmap import WhisperModel

    # the fork encodes and decodes, as in faster-whisper's own model (fw_model), so languages and their
    # probabilities can be held to faster-whisper's on every CPU
    return WhisperModel(str(base_model_dir), compute_type="int8", cpu_threads=2, session_cache=False,
                        encoder="fork")


def texts(segments):
    return [s.text for s in segments]


@pytest.mark.model
@pytest.mark.parametrize("name, language", [("fr-conf-getpin.flac", "fr"), ("en-basic-pbx-ivr-main.flac", "en")])
def test_a_short_file_is_encoded_once_and_transcribed_as_with_its_language(model, data_dir, name, language):
    before = model.shared_encodes
    segments, info = model.transcribe(str(data_dir / name))
    detected = texts(segments)
    assert info.language == language and model.shared_encodes == before + 1
    segments, _ = model.transcribe(str(data_dir / name), language=language)  # the same file again: encoded again
    assert texts(segments) == detected and model.shared_encodes == before + 1


@pytest.mark.model
def test_nothing_is_shared_beyond_the_first_window_of_one_call(model, data_dir, monkeypatch):
    encoder = model.model.encoder
    calls = []
    real = encoder.encode
    monkeypatch.setattr(encoder, "encode", lambda *a, **k: calls.append(1) or real(*a, **k))
    path = str(data_dir / "fr-conf-getpin.flac")
    list(model.transcribe(path)[0])
    assert len(calls) == 1  # detection and the window: one pass
    list(model.transcribe(path, language="fr")[0])
    assert len(calls) == 2  # a second call encodes its window itself
    model.detect_language(decode_audio(path))
    list(model.transcribe(path, language="fr")[0])
    assert len(calls) == 4  # a direct detect_language is faster-whisper's: nothing kept for transcribe


@pytest.mark.model
def test_detection_agrees_with_faster_whisper(model, fw_model, data_dir):
    """faster-whisper's own detection (its window keeps the padding frame) finds the same language with
    nearly the same probability; ``detect_language`` called directly is faster-whisper's."""
    audio = decode_audio(str(data_dir / "es-conf-getpin.flac"))
    _, info = model.transcribe(audio)
    _, theirs = fw_model.transcribe(audio, beam_size=1)
    assert info.language == theirs.language == "es"
    assert abs(info.language_probability - theirs.language_probability) < 0.05
    assert model.detect_language(audio)[0] == "es"


@pytest.mark.model
def test_a_near_tie_is_decided_by_faster_whispers_own_window(model, fw_model, data_dir, monkeypatch):
    """Below ``CONFIDENT`` the first window's answer is not taken: faster-whisper's detection runs on its
    own window (its usual second pass), and the first window is still encoded once."""
    monkeypatch.setattr(whisper, "CONFIDENT", 1.01)
    audio = decode_audio(str(data_dir / "es-conf-getpin.flac"))
    before = model.shared_encodes
    segments, info = model.transcribe(audio)
    assert texts(segments) and model.shared_encodes == before + 1
    with blas_single_thread():  # tokenmap's features are computed so; two threads differ by about 1e-7
        _, theirs = fw_model.transcribe(audio, beam_size=1)
    assert (info.language, round(info.language_probability, 3)) == (theirs.language,
                                                                    round(theirs.language_probability, 3))


@pytest.mark.model
def test_what_one_model_kept_is_never_offered_to_another(model, base_model_dir, data_dir):
    from tokenmap import WhisperModel

    other = WhisperModel(str(base_model_dir), compute_type="int8", cpu_threads=2, session_cache=False)
    segments, _ = model.transcribe(str(data_dir / "fr-conf-getpin.flac"))  # detected, first window kept
    session = model.last_session
    assert session.first is not None and model.session.first is None and other.session.first is None
    list(segments)
    assert session.first is None  # taken by the window
