"""The loop stop through ``tokenmap.WhisperModel``: on by default, off with ``loop_stop=False``, on a window
crafted to loop (12 s of faint noise after a prompt of "Thank you." said three times; base int8 loops there
with the CTranslate2 encoder on the machines measured)."""

import numpy as np
import pytest

from tokenmap.decode.loops import LoopOptions, compression_ratio

pytestmark = pytest.mark.model

PROMPT = " Thank you. Thank you. Thank you."


@pytest.fixture(scope="module")
def model():
    from tokenmap import WhisperModel

    return WhisperModel("base", compute_type="int8", cpu_threads=2, encoder="fork")


@pytest.fixture(scope="module")
def noise():
    return (0.003 * np.random.default_rng(0).standard_normal(16000 * 12)).astype(np.float32)


def transcript(model, audio, **kwargs):
    segments, _ = model.transcribe(audio, language="en", initial_prompt=PROMPT, vad_filter=False, **kwargs)
    return " ".join(s.text.strip() for s in segments), model.last_stats()


def test_the_switch(model):
    from tokenmap import WhisperModel

    assert model.model.loop == LoopOptions()  # on by default
    off = WhisperModel("tiny.en", compute_type="int8", cpu_threads=1, encoder="fork", loop_stop=False)
    assert off.model.loop is None


def test_a_looping_window_is_stopped_with_the_switch_on_and_loops_with_it_off(model, noise):
    model.model.loop = None
    try:
        looped, stats_off = transcript(model, noise, temperature=0.0)
    finally:
        model.model.loop = LoopOptions()
    assert compression_ratio(looped) > 2.4 and stats_off["loops_stopped"] == 0  # the crafted window loops
    stopped, stats_on = transcript(model, noise, temperature=0.0)
    assert stats_on["loops_stopped"] >= 1
    assert compression_ratio(stopped) < 2.4 and len(stopped) < len(looped) / 4
    assert looped.startswith(stopped.rstrip(". ")[:20])  # the text up to where the repetition began


def test_the_temperature_fallback_still_runs_on_a_stopped_loop(model, noise):
    """faster-whisper sees the stopped window's compression ratio as the loop's, so it samples again."""
    calls = []
    inner = model.model.generate

    def counting(features, prompts, **kwargs):
        calls.append(kwargs.get("sampling_temperature", 0.0) if kwargs.get("sampling_topk", 1) != 1 else 0.0)
        return inner(features, prompts, **kwargs)

    model.model.generate = counting
    try:
        transcript(model, noise, temperature=(0.0, 0.2))
    finally:
        del model.model.generate
    assert calls[0] == 0.0 and 0.2 in calls


def test_no_false_alarm_on_the_committed_real_clips_end_to_end(model, data_dir):
    from tokenmap.audio import load_audio

    for clip in sorted(data_dir.glob("*.flac")):
        segments, _ = model.transcribe(load_audio(str(clip)), language=clip.name[:2])
        text = " ".join(s.text for s in segments)
        assert text.strip() and model.last_stats()["loops_stopped"] == 0, clip.name
