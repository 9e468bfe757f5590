"""tokenmap.hooks: faster-whisper's module functions answer with tokenmap's steps within tokenmap's calls only."""

import faster_whisper.transcribe as fw_transcribe
import faster_whisper.vad as fw_vad
import numpy as np
import pytest
from faster_whisper.audio import decode_audio

from tokenmap import hooks
from tokenmap.vad import PiecewiseVad
from tokenmap.windows import Session

CHUNKS = [{"start": 1, "end": 3}, {"start": 6, "end": 8}]


def assert_stock():
    """faster-whisper's own answers, as if tokenmap had never run."""
    assert hooks._CALL.get() is None
    assert not isinstance(fw_vad.get_vad_model(), PiecewiseVad)
    assert fw_vad.get_vad_model() is hooks.STOCK["get_vad_model"]()
    chunks, _ = fw_transcribe.collect_chunks(np.arange(10.0), CHUNKS)
    stock, _ = hooks.STOCK["collect_chunks"](np.arange(10.0), CHUNKS)
    assert [c.tolist() for c in chunks] == [c.tolist() for c in stock]
    assert fw_transcribe.get_compression_ratio("Thank you.") == hooks.STOCK["get_compression_ratio"]("Thank you.")


def test_each_hook_answers_tokenmaps_step_within_its_call_and_faster_whispers_outside():
    hooks.install()
    hooks.install()  # once: the stock functions are faster-whisper's, not an earlier hook
    assert all(f.__module__.startswith("faster_whisper") for f in hooks.STOCK.values())
    call = Session(ratios={"Thank you.": 38.4})
    assert_stock()
    with hooks.within(call):
        assert isinstance(fw_vad.get_vad_model(), PiecewiseVad)
        chunks, _ = fw_transcribe.collect_chunks(np.arange(10.0), CHUNKS)
        assert np.concatenate(chunks).tolist() == [1.0, 2.0, 6.0, 7.0]
        assert fw_transcribe.get_compression_ratio(" Thank you.") == 38.4
        assert fw_transcribe.get_compression_ratio("Thank you.") < 2.4  # answered once
    assert_stock()
    assert list(hooks.each_within(call, iter([1, 2]))) == [1, 2] and call.ratios == {}
    assert_stock()


@pytest.mark.model
def test_stock_faster_whisper_runs_as_stock_in_the_thread_tokenmap_ran_in(base_model_dir, fw_model, data_dir):
    from tokenmap import WhisperModel

    model = WhisperModel(str(base_model_dir), compute_type="int8", cpu_threads=2, session_cache=False)
    audio = decode_audio(str(data_dir / "en-agent-pass.flac"))
    before = [(s.text, s.start, s.end) for s in fw_model.transcribe(audio, beam_size=1, vad_filter=True)[0]]
    segments, _ = model.transcribe(audio, language="en", vad_filter=True)
    first = next(segments)  # a tokenmap call under way, its segments still lazy
    assert first.text and hooks._CALL.get() is None
    assert_stock()
    after = [(s.text, s.start, s.end) for s in fw_model.transcribe(audio, beam_size=1, vad_filter=True)[0]]
    list(segments)
    assert_stock()
    assert after == before
