"""Decoder precision: int8 throughout by default; ``exact`` decodes an int8 model with a float32 copy,
and map decoding then gives that configuration's plain output."""

import numpy as np
import pytest

from tokenmap.assembly import Model, ModelOptions
from tokenmap.decode.plain import PlainDecoder
from tokenmap.encoders import CTranslate2Encoder
from tokenmap.runtime.precision import decoder_compute_type, describe

KW = dict(beam_size=1, max_length=448, return_scores=True, return_no_speech_prob=True,
          suppress_blank=True, suppress_tokens=[-1], max_initial_timestamp_index=50)
FILES = ["en-agent-pass.flac", "en-basic-pbx-ivr-main.flac", "en-conf-getpin.flac", "en-ss-noservice.flac",
         "en-tt-weasels.flac", "en-vm-record-prepend.flac", "es-conf-getpin.flac", "fr-conf-getpin.flac"]


@pytest.mark.parametrize("compute_type, requested, exact, expected", [
    ("int8", "auto", False, "int8"), ("int8", None, False, "int8"), ("int8", "auto", True, "float32"),
    ("int8", None, True, "float32"), ("int8_float32", "auto", True, "float32"), ("int16", "auto", True, "float32"),
    ("float32", "auto", True, "float32"), ("default", "auto", True, "default"),
    ("int8", "same", True, "int8"), ("float32", "int8", False, "int8"),
])
def test_decoder_compute_type(compute_type, requested, exact, expected):
    assert decoder_compute_type(compute_type, requested, exact) == expected


def test_describe_names_the_exact_and_the_fast_mode():
    assert "float32 decoder" in describe("int8", exact=True) and "plain transcript" in describe("int8", exact=True)
    assert "differ" in describe("int8") and "--exact" in describe("int8")


def _model(encoder, decoder, special=None, compute_type="float32"):
    """A :class:`Model` of ``encoder`` (a ``ctranslate2.models.Whisper``-like object) and ``decoder``, no drafters."""
    from types import SimpleNamespace

    special = special or SimpleNamespace(sot=1, eot=2)
    return Model(CTranslate2Encoder(encoder, "int8"), PlainDecoder(decoder), None, special=special,
                 tokenizer=None, model_dir=None, options=ModelOptions(threads=2), decoder_compute_type=compute_type)


def test_a_model_routes_encode_and_decoder_calls():
    class Fake:
        def __init__(self, name):
            self.name, self.n_mels = name, 80

        def encode(self, features, to_cpu=False):
            return (self.name, features)

        def generate(self, enc, prompts):
            return (self.name, enc)

    model = _model(Fake("enc"), Fake("dec"))
    out = model.encode("mel")
    assert out == ("enc", "mel")
    assert model.generate(out, [[1]]) == ("dec", ("enc", "mel"))
    assert model.n_mels == 80 and model.decoder_compute_type == "float32"


def _prompt(base_model_dir, lang):
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(base_model_dir / "tokenizer.json")).get_vocab(with_added_tokens=True)
    return [vocab["<|startoftranscript|>"], vocab[f"<|{lang}|>"], vocab["<|transcribe|>"]]


def _encode(engine, path):
    import ctranslate2
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor

    feats = FeatureExtractor()(decode_audio(str(path)))[:, :3000]
    feats = np.pad(feats, ((0, 0), (0, 3000 - feats.shape[1])))[None]
    return engine.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(feats)))


@pytest.fixture(scope="module")
def split(base_model_dir):
    import ctranslate2

    from tokenmap.decode.special import SpecialTokens
    from tokenmap.runtime.precision import load_decoder

    encoder = ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="int8", intra_threads=2)
    return _model(encoder, load_decoder(str(base_model_dir), "float32", device="cpu", cpu_threads=2),
                  SpecialTokens.from_model_dir(str(base_model_dir)))


@pytest.mark.model
@pytest.mark.parametrize("name", FILES)
def test_drafts_keep_the_split_configurations_greedy_output(split, base_model_dir, data_dir, name):
    """Oracle drafts (whole output in one pass), drafts wrong from the 3rd token on, and no drafts."""
    from tokenmap.decode.drafters import FixedDrafter
    from tokenmap.decode.special import SpecialTokens
    from tokenmap.decode.speculative import decode_window

    special = SpecialTokens.from_model_dir(str(base_model_dir))
    enc = _encode(split, data_dir / name)
    prompt = _prompt(base_model_dir, name[:2])
    ref = split.generate(enc, [prompt], **KW)[0]
    tokens = list(ref.sequences_ids[0])
    assert len(tokens) >= 5
    wrong = tokens[:2] + [t + 1 for t in tokens[2:]]
    for draft in (tokens + [special.eot], wrong, []):
        got = decode_window(split.decoder, enc, prompt, special, FixedDrafter(draft), **KW)
        assert got.tokens == tokens
        assert got.score == pytest.approx(ref.scores[0], abs=2e-3)
        assert got.no_speech_prob == pytest.approx(ref.no_speech_prob, abs=1e-4)


@pytest.mark.model
def test_int8_model_decodes_at_int8_by_default_and_with_a_float32_copy_when_exact(base_model_dir, data_dir):
    from faster_whisper.audio import decode_audio

    from tokenmap import WhisperModel
    from tokenmap.runtime.threads import blas_single_thread
    from tokenmap.transcriber import load_model

    exact = WhisperModel(str(base_model_dir), device="cpu", compute_type="int8", cpu_threads=2, exact=True)
    assert exact.decoder_compute_type == "float32"
    assert exact.model.decoder.compute_type == "float32"
    fast = WhisperModel(str(base_model_dir), device="cpu", compute_type="int8", cpu_threads=2, encoder="fork")
    assert fast.decoder_compute_type == "int8" and fast.model.encoder.model is fast.model.decoder
    assert fast.model.decoder.compute_type.startswith("int8")
    plain = load_model(str(base_model_dir), compute_type="int8", threads=2, exact=True)  # no map, same configuration
    assert isinstance(plain.model, Model) and plain.model.decoder.compute_type == "float32"
    audio = decode_audio(str(data_dir / "en-basic-pbx-ivr-main.flac"))

    def text(model):
        # numpy's BLAS on one thread, as tokenmap's transcribe holds it: faster-whisper's own transcribe (plain)
        # otherwise computes features about 1e-7 apart, which the int8 encoder can turn into another word
        with blas_single_thread():
            segments, _ = model.transcribe(audio, language="en", beam_size=1, temperature=0.0)
            return [(s.start, s.end, s.text) for s in segments]

    assert text(exact) == text(plain)
    assert exact.last_stats()["windows"] >= 1


def test_float32_decoder_has_its_own_built_in_cost_curve(tmp_path):
    from tokenmap.decode.cost import DEFAULT, DEFAULT_FLOAT32, load_cost_model

    assert load_cost_model(tmp_path, "float32", 2) is DEFAULT_FLOAT32
    assert load_cost_model(tmp_path, "int8", 2) is DEFAULT
    assert DEFAULT_FLOAT32.batch(17) > 5 * DEFAULT_FLOAT32.step_ms > DEFAULT.batch(17)


@pytest.mark.model  # resolves the packaged model directory (loads nothing)
def test_calibrate_measures_the_decoders_precision(monkeypatch, tmp_path):
    from click.testing import CliRunner

    import tokenmap.decode.calibration as calibration
    import tokenmap.decode.cost as cost
    from tokenmap_cli.main import cli

    seen = []

    def fake(model_dir, compute_type, threads, max_tokens, reps, progress=None):
        seen.append(compute_type)
        return cost.CostModel(1.0, (1.0,) * max_tokens)

    monkeypatch.setattr(calibration, "calibrate", fake)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("TOKENMAP_CALIBRATION_DIR")
    runner = CliRunner()
    assert runner.invoke(cli, ["calibrate", "--max-tokens", "2", "--exact"]).exit_code == 0
    assert runner.invoke(cli, ["calibrate", "--max-tokens", "2"]).exit_code == 0
    assert seen == ["float32", "int8"]
    assert sorted(p.name.split("-")[1] for p in (tmp_path / "tokenmap" / "calibration").glob("*.json")) == \
        ["float32", "int8"]


def test_doctor_shows_the_encoder_and_decoder_choice_and_why(monkeypatch, tmp_path):
    import json

    from click.testing import CliRunner

    from tokenmap.runtime.engine import drafting_off_reason
    from tokenmap_cli.main import cli

    if drafting_off_reason() is not None:
        pytest.skip("needs the engine fork")
    import openvino

    import tokenmap.encoders.report as report
    from tokenmap.encoders.choice import Choice, EncoderPlan

    info = json.loads(CliRunner().invoke(cli, ["doctor", "--json"]).stdout)
    assert info["encoder"].startswith(("ctranslate2 ", "openvino "))  # what --encoder auto runs here
    assert "measured on this CPU" in info["encoder"] or "bfloat16" in info["encoder"]
    assert "int8 encoder and decoder" in info["decoder (--compute-type int8)"]
    assert "float32 decoder" in info["decoder (--exact)"]
    plan = EncoderPlan((Choice("stock", "int8", 2000), Choice("openvino", "f32", 3000)), "measured on this CPU (..)")
    monkeypatch.setattr(report, "choose", lambda *args: plan)
    monkeypatch.setattr(report, "openvino_kernels", lambda *args: {"FullyConnected": "gemm_mlas_f32"})
    line = report.encoder_line(tmp_path, "int8", 2, {"Selected ISA": "AVX2", "GEMM_S8 backend": "DNNL"})
    assert line == (f"ctranslate2 stock int8 (ISA AVX2; GEMM DNNL) | openvino {openvino.__version__.split('-')[0]} "
                    "f32 (FullyConnected: gemm_mlas_f32) -- ctranslate2 stock int8 up to 20 s, openvino f32 up to "
                    "30 s: measured on this CPU (..)")
