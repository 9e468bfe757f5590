"""The loop stop through ``tokenmap.WhisperModel``: on by default, off with ``loop_stop=False``, on a window
crafted to loop (a previous text that repeats one phrase, then audio with no speech: the first of
``conftest.crafted_windows`` that loops on this CPU with the stop off)."""

import pytest

from tokenmap.decode.loops import LoopOptions, compression_ratio

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def model():
    from tokenmap import WhisperModel

    return WhisperModel("base", compute_type="int8", cpu_threads=2, encoder="fork")


def transcript(model, prompt, audio, **kwargs):
    segments, _ = model.transcribe(audio, language="en", initial_prompt=prompt, vad_filter=False, **kwargs)
    return " ".join(s.text.strip() for s in segments), model.last_stats()


def transcript_unstopped(model, prompt, audio, **kwargs):
    model.model.loop = None
    try:
        return transcript(model, prompt, audio, **kwargs)
    finally:
        model.model.loop = LoopOptions()


@pytest.fixture(scope="module")
def looping(model, first_looping):
    """``(description, previous text, samples)``: a crafted window whose transcript, with the stop off, has a
    compression ratio above faster-whisper's threshold (2.4) on this machine."""
    return first_looping(lambda prompt, audio: compression_ratio(
        transcript_unstopped(model, prompt, audio, temperature=0.0)[0]) > 2.4)


def test_the_switch(model):
    from tokenmap import WhisperModel

    assert model.model.loop == LoopOptions()  # on by default
    off = WhisperModel("tiny.en", compute_type="int8", cpu_threads=1, encoder="fork", loop_stop=False)
    assert off.model.loop is None


def test_a_looping_window_is_stopped_with_the_switch_on_and_loops_with_it_off(model, looping):
    description, prompt, audio = looping
    looped, stats_off = transcript_unstopped(model, prompt, audio, temperature=0.0)
    assert compression_ratio(looped) > 2.4 and stats_off["loops_stopped"] == 0, description
    stopped, stats_on = transcript(model, prompt, audio, temperature=0.0)
    assert stats_on["loops_stopped"] >= 1, description
    assert compression_ratio(stopped) < 2.4 and len(stopped) < len(looped) / 2, (description, stopped)
    assert looped.startswith(stopped.rstrip(". ")[:20]), (description, stopped)  # the text before the repetition


def test_the_temperature_fallback_still_runs_on_a_stopped_loop(model, looping):
    """faster-whisper sees the stopped window's compression ratio as the loop's, so it samples again."""
    description, prompt, audio = looping
    calls = []
    inner = model.model.generate

    def counting(features, prompts, **kwargs):
        calls.append(kwargs.get("sampling_temperature", 0.0) if kwargs.get("sampling_topk", 1) != 1 else 0.0)
        return inner(features, prompts, **kwargs)

    model.model.generate = counting
    try:
        transcript(model, prompt, audio, temperature=(0.0, 0.2))
    finally:
        del model.model.generate
    assert calls[0] == 0.0 and 0.2 in calls, description


def test_no_false_alarm_on_the_committed_real_clips_end_to_end(model, data_dir):
    from tokenmap.audio import load_audio

    for clip in sorted(data_dir.glob("*.flac")):
        segments, _ = model.transcribe(load_audio(str(clip)), language=clip.name[:2])
        text = " ".join(s.text for s in segments)
        assert text.strip() and model.last_stats()["loops_stopped"] == 0, clip.name
