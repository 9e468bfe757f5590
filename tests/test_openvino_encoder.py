"""The OpenVINO encoder on the real model: its output, its cache, and every path that encodes through it."""

import numpy as np
import pytest

from tokenmap.encoders.choice import measured_openvino, measurement
from tokenmap.encoders.openvino import EncoderUnavailable, OpenVINOEncoder, cached_ir

pytestmark = pytest.mark.model

KW = dict(beam_size=1, max_length=448, return_scores=True, return_no_speech_prob=True,
          suppress_blank=True, suppress_tokens=[-1], max_initial_timestamp_index=50)


def _features(data_dir, name, frames=3000):
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor

    mel = FeatureExtractor()(decode_audio(str(data_dir / name)))[:, :frames]
    return np.pad(mel, ((0, 0), (0, frames - mel.shape[1])))[None].astype(np.float32)


@pytest.fixture(scope="module")
def ct2_float32(base_model_dir):
    import ctranslate2

    return ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="float32", intra_threads=2)


@pytest.fixture(scope="module")
def ov_f32(base_model_dir):
    return OpenVINOEncoder(base_model_dir, "f32", threads=2)


def runnable_here(base_model_dir) -> set[str]:
    """The OpenVINO precisions that ran here when ``auto`` timed them (in a child process: one that compiles
    here may still crash when it runs, and is then left out)."""
    return {name.split(":")[1] for name in measured_openvino(measurement(base_model_dir, "int8", 2)["ms"])}


@pytest.fixture(scope="module")
def runnable(base_model_dir):
    """Every OpenVINO precision ``auto`` timed on this CPU, by name (f32 everywhere)."""
    out = {name: OpenVINOEncoder(base_model_dir, name, threads=2) for name in runnable_here(base_model_dir)}
    assert "f32" in out
    return out


@pytest.mark.parametrize("frames", [3000, 800])
def test_f32_equals_ctranslate2s_float32_encoder(ov_f32, ct2_float32, data_dir, frames):
    import ctranslate2

    features = _features(data_dir, "en-conf-getpin.flac", frames)
    expected = np.asarray(ct2_float32.encode(ctranslate2.StorageView.from_array(features)))
    out = np.asarray(ov_f32.encode(features))
    assert out.shape == expected.shape == (1, frames // 2, 512)
    np.testing.assert_allclose(out, expected, atol=1e-2)


def _cosine(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float((a * b).sum() / np.linalg.norm(a) / np.linalg.norm(b))


#: cosine against OpenVINO float32 that every precision meets on every CPU: float ones (bf16) round only the
#: arithmetic; quantized ones (int8 weights, int8-full) meet what CTranslate2's int8 encoder, the one
#: faster-whisper runs, meets (0.993-0.996 on these clips on AVX2, AVX-512 VNNI and AMX CPUs)
FLOAT_COSINE, QUANTIZED_COSINE = 0.999, 0.99


@pytest.mark.parametrize("frames", [3000, 1000])
def test_every_precision_here_stays_near_float32(runnable, ov_f32, base_model_dir, data_dir, frames):
    """Each OpenVINO precision this CPU runs, on real speech padded as Whisper pads, with CTranslate2's int8
    encoder held to the same bound."""
    import ctranslate2

    ct2 = ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="int8", intra_threads=2)
    for name in ("en-agent-pass.flac", "fr-conf-getpin.flac"):
        features = _features(data_dir, name, frames)
        full = ov_f32.encode_array(features)
        assert _cosine(ct2.encode(ctranslate2.StorageView.from_array(features)), full) >= QUANTIZED_COSINE
        for precision, enc in runnable.items():
            cosine = _cosine(enc.encode_array(features), full)
            bound = FLOAT_COSINE if precision in ("f32", "bf16") else QUANTIZED_COSINE
            assert cosine >= bound, (name, precision, enc.inference_precision, cosine)


def test_auto_opens_an_encoder_that_runs_here(base_model_dir, data_dir):
    """``auto`` measures what compiles on this CPU (or under its oneDNN cap) and opens an encoder that runs."""
    import ctranslate2

    from tokenmap.encoders import open_encoder
    from tokenmap.encoders.choice import choose

    fork = ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="int8", intra_threads=2)
    encoder = open_encoder("auto", base_model_dir, "int8", 2, fork=fork)
    features = ctranslate2.StorageView.from_array(_features(data_dir, "en-agent-pass.flac"))
    assert np.asarray(encoder.encode(features)).shape == (1, 1500, 512)
    plan = choose("auto", base_model_dir, "int8", 2)
    assert all(c.precision in runnable_here(base_model_dir) for c in plan.choices if c.engine == "openvino")


def test_a_precision_that_cannot_compile_is_one_line(base_model_dir, monkeypatch):
    import openvino as ov

    def refuse(self, *args, **kwargs):
        raise RuntimeError("Exception from src/plugin.cpp:1:\nSupported primitive descriptors list is empty for "
                           "node: Softmax_1 type: Softmax\n")

    monkeypatch.setattr(ov.Core, "compile_model", refuse)
    with pytest.raises(EncoderUnavailable, match=r"cannot compile the bf16 encoder on this CPU: Supported primitive "
                                                  r"descriptors list is empty for node: Softmax_1 type: Softmax$"):
        OpenVINOEncoder(base_model_dir, "bf16", threads=2)


def test_the_cached_ir_is_reused_stores_float16_and_is_rebuilt_only_with_force(base_model_dir, tmp_path, monkeypatch):
    import openvino as ov

    import tokenmap.encoders.openvino as room

    xml = cached_ir(base_model_dir, "float", tmp_path)
    weights = xml.with_suffix(".bin").stat().st_size
    assert 35e6 < weights < 50e6  # base's encoder is 20.6 M parameters: float16, not float32
    types = {op.get_output_element_type(0).get_type_name() for op in ov.Core().read_model(str(xml)).get_ops()
             if op.get_type_name() == "Constant" and op.get_output_size() and op.shape and len(op.shape) == 2}
    assert types == {"f16"}
    def built_again(*args, **kwargs):
        raise RuntimeError("the cached IR was built again")

    monkeypatch.setattr(room, "build_encoder", built_again)
    assert cached_ir(base_model_dir, "float", tmp_path) == xml
    OpenVINOEncoder(base_model_dir, "f32", threads=2, cache=tmp_path)  # compiles from the cache
    with pytest.raises(RuntimeError, match="built again"):
        cached_ir(base_model_dir, "float", tmp_path, force=True)
    assert xml.is_file()  # a failed rebuild leaves the cached model whole


def test_features_of_the_wrong_shape_are_one_clear_error(ov_f32):
    with pytest.raises(ValueError, match=r"not \[batch, 80, 1-3000\]"):
        ov_f32.encode(np.zeros((1, 80, 3002), np.float32))
    with pytest.raises(ValueError, match="not"):
        ov_f32.encode(np.zeros((1, 128, 100), np.float32))


@pytest.mark.parametrize("name", ["en-basic-pbx-ivr-main.flac", "es-conf-getpin.flac"])
def test_drafts_keep_greedy_output_on_openvino_encoder_output(base_model_dir, runnable, data_dir, name):
    """The golden test on the output of every OpenVINO precision this CPU runs: speculative decoding equals
    step-wise greedy decoding (a float32 decoder, whose batched logits equal its step logits), for oracle,
    wrong and empty drafts."""
    import ctranslate2

    from tokenmap.decode.drafters import FixedDrafter
    from tokenmap.decode.rules import greedy_decode
    from tokenmap.decode.special import SpecialTokens
    from tokenmap.decode.speculative import decode_window

    decoder = ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="float32", intra_threads=2)
    special = SpecialTokens.from_model_dir(str(base_model_dir))
    prompt = _prompt(base_model_dir, name[:2])
    for precision, encoder in runnable.items():
        enc = encoder.encode(_features(data_dir, name))
        steps = list(greedy_decode(decoder, enc, prompt, special, **KW).tokens)
        assert len(steps) >= 5 and steps == list(decoder.generate(enc, [prompt], **KW)[0].sequences_ids[0])
        wrong = steps[:2] + [t + 1 for t in steps[2:]]
        for draft in (steps + [special.eot], wrong, []):
            assert decode_window(decoder, enc, prompt, special, FixedDrafter(draft), **KW).tokens == steps, precision


def _prompt(base_model_dir, lang):
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(base_model_dir / "tokenizer.json")).get_vocab(with_added_tokens=True)
    return [vocab["<|startoftranscript|>"], vocab[f"<|{lang}|>"], vocab["<|transcribe|>"]]


@pytest.fixture(scope="module")
def pair(base_model_dir):
    """One model per engine, both float32 end to end, so their transcripts must agree."""
    from tokenmap import WhisperModel

    kw = dict(device="cpu", compute_type="float32", cpu_threads=2, session_cache=False)
    return {e: WhisperModel(str(base_model_dir), encoder=e, **kw) for e in ("fork", "openvino:f32")}


def test_every_transcribe_path_runs_on_openvino(pair, data_dir, monkeypatch):
    """No flags, language detection, word timestamps and the short audio context encode on OpenVINO and
    give the transcript CTranslate2's float32 encoder gives."""
    fork, ov = pair["fork"], pair["openvino:f32"]
    assert ov.encoder_engine == "openvino" and fork.encoder_engine == "fork"
    calls = []
    real = ov.model.encoder.encode
    monkeypatch.setattr(ov.model.encoder, "encode", lambda f, to_cpu=False: calls.append(f.shape) or real(f))
    for name, options in (("en-basic-pbx-ivr-main.flac", {}), ("fr-conf-getpin.flac", {"word_timestamps": True}),
                          ("es-conf-getpin.flac", {"audio_context": "auto"})):
        path = str(data_dir / name)
        out = {}
        for engine, model in pair.items():
            segments, info = model.transcribe(path, **options)
            words = [(w.word, round(w.start, 1)) for s in segments for w in (s.words or [])]
            out[engine] = (info.language, [s.text for s in segments], words)
        assert out["fork"] == out["openvino:f32"], name
    assert calls and any(shape[-1] < 3000 for shape in calls)  # the short context went through OpenVINO too


def test_a_batch_of_windows_is_one_openvino_inference(pair, data_dir, monkeypatch):
    from tokenmap import BatchedInferencePipeline

    ov = pair["openvino:f32"]
    batches = []
    real = ov.model.encoder.encode_array
    monkeypatch.setattr(ov.model.encoder, "encode_array", lambda f: batches.append(np.shape(f)) or real(f))
    audio = np.concatenate([_audio(data_dir, "en-basic-pbx-ivr-main.flac")] * 3)  # several chunks for VAD
    fork_text = [s.text for s in BatchedInferencePipeline(pair["fork"]).transcribe(audio, batch_size=4,
                                                                                   language="en")[0]]
    ov_text = [s.text for s in BatchedInferencePipeline(ov).transcribe(audio, batch_size=4, language="en")[0]]
    assert ov_text == fork_text and max(b[0] for b in batches) > 1


def _audio(data_dir, name):
    from faster_whisper.audio import decode_audio

    return decode_audio(str(data_dir / name))


def test_a_stream_encodes_on_openvino(base_model_dir, data_dir):
    from tokenmap.stream.audio import FileSource
    from tokenmap.stream.live import StreamModel, StreamOptions, StreamTranscriber

    model = StreamModel.load(str(base_model_dir), compute_type="float32", threads=2, encoder="openvino:f32")
    assert model.model.encoder_engine == "openvino"
    st = StreamTranscriber(model, StreamOptions(update_seconds=2.0, language="en"))
    updates = list(st.run(FileSource(_audio(data_dir, "en-agent-pass.flac")).chunks(2.0)))
    assert "password" in (updates[-1].committed_text + updates[-1].tentative_text).lower()
