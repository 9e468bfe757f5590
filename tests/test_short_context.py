"""Short audio context: which frames are encoded, what the guard rejects, and the guarded path end to end."""

import re

import jiwer
import pytest

from tokenmap.context import AudioContext
from tokenmap.decode.guarding import Guard, compression_ratio, repeated_run

TB = 50364  # <|0.00|> of the multilingual vocabulary
OK = dict(seconds=2.0, score=-0.2, no_speech_prob=0.01, finished=True, timestamp_begin=TB, text="Hello there.")


def test_context_frames_cover_the_audio_and_margin_within_the_window():
    ctx = AudioContext("auto", margin_s=2.0, min_s=0.0)
    assert ctx.frames(1.0) == 300 and ctx.frames(3.333) == 534  # even, rounded up
    assert AudioContext("auto", margin_s=2.0, min_s=10.0).frames(1.0) == 1000
    assert ctx.frames(28.0) is None and ctx.frames(29.99) is None  # 30 s anyway: the full window
    capped = AudioContext("auto", margin_s=2.0, min_s=0.0, max_s=24.0)
    assert capped.frames(22.0) == 2400 and capped.frames(22.1) is None  # past max_s: the full window
    assert AudioContext("auto", margin_s=2.0, max_s=30.0).frames(27.0) == 2900
    assert AudioContext("full").frames(1.0) is None
    with pytest.raises(ValueError, match="one of full, auto"):
        AudioContext("short")
    with pytest.raises(ValueError, match=">= 0"):
        AudioContext("auto", margin_s=-1)


@pytest.mark.parametrize("change, reason", [
    (dict(finished=False), "no end of text"),
    (dict(tokens=[TB, 400, TB + 160]), "past the audio"),
    (dict(seconds=0.8, tokens=[TB, 400, TB + 130]), "past the audio"),
    (dict(text="la la la la la la la la la la la la la la la la la la la la"), "repetitive text"),
    (dict(tokens=[TB, 1, 2, 1, 2, 1, 2, TB + 50], text="Hi."), "a repeated phrase"),
    (dict(score=-2.0), "low log-probability"),
    (dict(no_speech_prob=0.9, score=-2.0), "no speech"),
    (dict(tokens=[TB] + list(range(100, 140)) + [TB + 50], text="x"), "more text than the audio"),
])
def test_guard_names_each_failure_of_a_short_context(change, reason):
    kw = dict(OK, **{k: v for k, v in change.items() if k != "tokens"})
    tokens = change.get("tokens", [TB, 400, 500, TB + 50])
    assert reason in (Guard().reason(tokens, **kw) or "")


def test_guard_accepts_a_plain_decode():
    assert Guard().reason([TB, 400, 500, 600, TB + 90], **OK) is None
    assert Guard().reason([TB, 400, TB + 100], **dict(OK, seconds=0.7)) is None  # closed at 2.00 s, as Whisper does
    assert Guard().reason([TB, 400, TB + 100], **dict(OK, no_speech_prob=0.9)) is None  # confident text is kept
    assert compression_ratio("Please enter your password.") < 1.5
    assert repeated_run([5, 5, 5, 5]) == 4 and repeated_run([1, 2, 3, 4]) == 1


@pytest.fixture(scope="module")
def fork_model(base_model_dir):
    from tokenmap import WhisperModel
    from tokenmap.runtime.engine import drafting_off_reason

    if drafting_off_reason() is not None:
        pytest.skip("needs the engine fork")
    return WhisperModel(str(base_model_dir), device="cpu", compute_type="int8", cpu_threads=2, encoder="fork")


def _decode(model, path, **kw):
    segments, _ = model.transcribe(str(path), language="en", vad_filter=False, temperature=0.0, **kw)
    return [(s.start, s.end, s.text, tuple(s.tokens)) for s in segments], model.last_stats()


@pytest.mark.model
def test_auto_context_encodes_a_short_window_and_keeps_a_clean_prompt(fork_model, data_dir):
    full, full_stats = _decode(fork_model, data_dir / "en-agent-pass.flac")
    short, stats = _decode(fork_model, data_dir / "en-agent-pass.flac", audio_context="auto")
    assert full_stats["short_windows"] == 0 and stats["short_windows"] == 1 and stats["guarded"] == 0
    # the short context is another encoding of the audio: it may change a word against 30 s (README), not more
    words = [_words(" ".join(s[2] for s in decoded)) for decoded in (short, full)]
    assert "password" in words[0] and _word_errors(*words) <= 1, [s[2] for s in short + full]
    assert all(end <= 3.3 + 0.5 for _, end, _, _ in short)


def _words(text: str) -> list[str]:
    return re.sub(r"[^\w\s']", " ", text.lower()).split()


def _word_errors(hyp: list[str], ref: list[str]) -> int:
    out = jiwer.process_words(" ".join(ref), " ".join(hyp))
    return out.substitutions + out.deletions + out.insertions


@pytest.mark.model
def test_a_rejected_short_window_is_decoded_again_with_the_full_context(base_model_dir, data_dir):
    from tokenmap import WhisperModel

    # exact: a float32 decoder, whose output does not depend on what was drafted
    model = WhisperModel(str(base_model_dir), device="cpu", compute_type="int8", cpu_threads=2, encoder="fork",
                         exact=True)
    path = data_dir / "en-basic-pbx-ivr-main.flac"
    full, _ = _decode(model, path)
    engine = model.model
    engine.guard = Guard(logprob=0.0)  # every window fails: the full context decides
    try:
        short, stats = _decode(model, path, audio_context=AudioContext("auto", margin_s=1.0, min_s=0.0, max_s=30.0))
    finally:
        engine.guard = Guard()
    assert stats["short_windows"] == stats["guarded"] >= 1
    assert short == full  # token for token, timestamps included


@pytest.mark.model
def test_auto_context_works_through_the_stock_encoder_worker(base_model_dir, data_dir):
    from tokenmap import WhisperModel
    from tokenmap.runtime.engine import drafting_off_reason
    from tokenmap.runtime.stock_worker import stock_installed

    if drafting_off_reason() is not None or not stock_installed():
        pytest.skip("needs the engine fork and `make stock-encoder`")
    model = WhisperModel(str(base_model_dir), device="cpu", compute_type="int8", cpu_threads=2, encoder="stock",
                         audio_context="auto")
    short, stats = _decode(model, data_dir / "en-conf-getpin.flac")
    assert stats["short_windows"] == 1
    assert "conference" in short[0][2].lower()


@pytest.mark.model
def test_cli_transcribe_audio_context_auto_says_so(data_dir):
    from click.testing import CliRunner

    from tokenmap_cli.main import cli

    result = CliRunner().invoke(cli, ["transcribe", "--audio-context", "auto", "--no-vad", "-l", "en",
                                      "--encoder", "fork", str(data_dir / "en-conf-getpin.flac")])
    assert result.exit_code == 0, result.output
    assert "conference" in result.stdout.lower()
    assert "short audio context on 1 window(s)" in result.stderr
