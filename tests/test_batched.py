"""tokenmap.BatchedInferencePipeline: faster-whisper's batched pipeline, features computed batch by batch."""

import numpy as np
import pytest
from faster_whisper.audio import decode_audio

from tokenmap.batched import ChunkCapture, LazyBatches

FILES = ["en-agent-pass.flac", "en-basic-pbx-ivr-main.flac", "en-conf-getpin.flac", "fr-conf-getpin.flac"]


def test_a_batch_is_what_the_whole_stack_would_hold_and_lets_its_chunks_go():
    from faster_whisper.feature_extractor import FeatureExtractor

    from tokenmap.features import WindowedExtractor

    rng = np.random.default_rng(0)
    chunks = [rng.normal(0, 0.1, 16000 * s).astype(np.float32) for s in (4, 29, 12)]
    capture = ChunkCapture(WindowedExtractor(FeatureExtractor()))
    placeholders = [capture.add(c) for c in chunks]
    assert all(p.dtype == bool and p.shape == (80, 2) for p in placeholders)
    whole = np.stack([np.pad(f, ((0, 0), (0, 3000 - f.shape[1])))
                      for f in (FeatureExtractor()(c)[..., :-1] for c in chunks)])
    batches = LazyBatches(capture)
    np.testing.assert_array_equal(np.concatenate([batches[0:2], batches[2:3]]), whole)
    assert capture.chunks == [None, None, None]


@pytest.fixture(scope="module")
def model(base_model_dir):
    from tokenmap import WhisperModel

    return WhisperModel(str(base_model_dir), compute_type="int8", cpu_threads=2, session_cache=False)


@pytest.fixture(scope="module")
def audio(data_dir):
    """About 70 s of prompts back to back: several chunks for VAD to batch."""
    return np.concatenate([decode_audio(str(data_dir / f)) for f in FILES] * 2)


def segments(pipeline, audio, **kw):
    segs, info = pipeline.transcribe(audio, batch_size=2, **kw)
    return ([(s.start, s.end, s.text, tuple(s.tokens), tuple((w.word, w.start, w.end) for w in s.words or ()))
             for s in segs], (info.language, round(info.language_probability, 4), info.duration_after_vad))


@pytest.mark.model
@pytest.mark.parametrize("kw", [
    dict(language="en"),
    dict(),  # language detected on the chunks' features, as faster-whisper joins them
    dict(language="en", word_timestamps=True, without_timestamps=False),
    dict(language="en", clip_timestamps=[{"start": 0.0, "end": 11.0}, {"start": 11.0, "end": 25.0}]),
])
def test_the_same_segments_as_faster_whispers_pipeline(model, audio, kw):
    import faster_whisper

    from tokenmap import BatchedInferencePipeline

    ours = segments(BatchedInferencePipeline(model=model), audio, **kw)
    theirs = segments(faster_whisper.BatchedInferencePipeline(model=model), audio, **kw)
    assert ours == theirs and ours[0]


@pytest.mark.model
def test_another_model_gets_faster_whispers_pipeline_unchanged(fw_model, data_dir):
    from tokenmap import BatchedInferencePipeline

    segs, info = BatchedInferencePipeline(model=fw_model).transcribe(str(data_dir / "en-agent-pass.flac"),
                                                                     batch_size=2, language="en")
    assert "password" in " ".join(s.text for s in segs).lower()
