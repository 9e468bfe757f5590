"""The encoder engines: model.bin read without CTranslate2, the OpenVINO graph, its cache, the choice."""

import json
import os
import struct
import sys

import numpy as np
import pytest

from tokenmap.encoders import choice
from tokenmap.encoders.choice import Choice, EncoderPlan, parse, plan_from_measurement
from tokenmap.encoders.modelbin import ModelFileError, read_model_bin
from tokenmap.encoders.openvino_graph import EncoderShape, build_encoder


def random_encoder_variables(n_mels: int = 80, d_model: int = 64, heads: int = 2, layers: int = 2,
                             frames: int = 1500, ffn: int | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """Random variables of a Whisper encoder of this shape, named as in ``model.bin``."""
    rng = np.random.default_rng(seed)
    ffn = ffn or 4 * d_model

    def w(*dims, scale=0.05):
        return (rng.standard_normal(dims) * scale).astype(np.float32)

    v = {"encoder/conv1/weight": w(d_model, n_mels, 3, scale=0.2), "encoder/conv1/bias": w(d_model),
         "encoder/conv2/weight": w(d_model, d_model, 3, scale=0.1), "encoder/conv2/bias": w(d_model),
         "encoder/position_encodings/encodings": w(frames, d_model, scale=0.5),
         "encoder/num_heads": np.array(heads, dtype=np.int16),
         "encoder/layer_norm/gamma": 1 + w(d_model), "encoder/layer_norm/beta": w(d_model)}
    for i in range(layers):
        for scope, out, inp in (("self_attention/linear_0", 3 * d_model, d_model),
                                ("self_attention/linear_1", d_model, d_model),
                                ("ffn/linear_0", ffn, d_model), ("ffn/linear_1", d_model, ffn)):
            v[f"encoder/layer_{i}/{scope}/weight"] = w(out, inp)
            v[f"encoder/layer_{i}/{scope}/bias"] = w(out)
        for scope in ("self_attention/layer_norm", "ffn/layer_norm"):
            v[f"encoder/layer_{i}/{scope}/gamma"] = 1 + w(d_model)
            v[f"encoder/layer_{i}/{scope}/beta"] = w(d_model)
    return v


def reference_encoder(v, features):
    """Whisper's encoder in plain numpy, written from the paper's description (independent of the graph)."""
    from math import erf, sqrt

    gelu = np.vectorize(lambda x: 0.5 * x * (1 + erf(x / sqrt(2))))

    def conv(x, w, b, stride):  # x [C, T], w [O, C, 3], padding 1
        xp = np.pad(x, ((0, 0), (1, 1)))
        steps = range(0, x.shape[1], stride)
        return np.stack([np.einsum("oc k,ck->o".replace(" ", ""), w, xp[:, t:t + 3]) for t in steps], 1) + b[:, None]

    def norm(x, g, b):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * g + b

    heads = int(v["encoder/num_heads"])
    x = gelu(conv(gelu(conv(features, v["encoder/conv1/weight"], v["encoder/conv1/bias"], 1)),
                  v["encoder/conv2/weight"], v["encoder/conv2/bias"], 2)).T
    x = x + v["encoder/position_encodings/encodings"][: x.shape[0]]
    d = x.shape[1]
    layer = 0
    while f"encoder/layer_{layer}/ffn/linear_0/weight" in v:
        p = f"encoder/layer_{layer}/"
        h = norm(x, v[p + "self_attention/layer_norm/gamma"], v[p + "self_attention/layer_norm/beta"])
        qkv = h @ v[p + "self_attention/linear_0/weight"].T + v[p + "self_attention/linear_0/bias"]
        q, k, val = (qkv[:, i * d:(i + 1) * d].reshape(-1, heads, d // heads).transpose(1, 0, 2) for i in range(3))
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(d // heads)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        att = (weights @ val).transpose(1, 0, 2).reshape(-1, d)
        x = x + att @ v[p + "self_attention/linear_1/weight"].T + v[p + "self_attention/linear_1/bias"]
        h = norm(x, v[p + "ffn/layer_norm/gamma"], v[p + "ffn/layer_norm/beta"])
        h = gelu(h @ v[p + "ffn/linear_0/weight"].T + v[p + "ffn/linear_0/bias"])
        x = x + h @ v[p + "ffn/linear_1/weight"].T + v[p + "ffn/linear_1/bias"]
        layer += 1
    return norm(x, v["encoder/layer_norm/gamma"], v["encoder/layer_norm/beta"])


def _compile(model, precision="f32"):
    import openvino as ov

    from tokenmap.encoders.openvino import compile_config

    return ov.Core().compile_model(model, "CPU", compile_config(precision, 2, None))


@pytest.mark.parametrize("frames", [10, 9, 2])
def test_the_graph_equals_a_numpy_encoder(frames):
    v = random_encoder_variables(n_mels=6, d_model=16, heads=4, layers=2, frames=12, seed=frames)
    features = np.random.default_rng(1).standard_normal((6, frames)).astype(np.float32)
    out = _compile(build_encoder(v))({0: features[None]})[0]
    expected = reference_encoder(v, features)
    assert out.shape == (1, (frames + 1) // 2, 16)
    np.testing.assert_allclose(out[0], expected, atol=2e-4)


def test_one_compiled_graph_takes_any_batch_and_length():
    v = random_encoder_variables(n_mels=128, d_model=32, heads=2, layers=1, frames=50)
    compiled = _compile(build_encoder(v))
    features = np.random.default_rng(2).standard_normal((3, 128, 100)).astype(np.float32)
    batch = compiled({0: features})[0]
    for row in range(3):
        np.testing.assert_allclose(batch[row], compiled({0: features[row:row + 1]})[0][0], atol=1e-5)
    assert compiled({0: features[:1, :, :40]})[0].shape == (1, 20, 32)


def test_int8_weights_stay_close_to_float():
    """Where they run: with oneDNN capped below the CPU's ISA (tests/capped_isa.py) OpenVINO picks a compressed
    kernel the cap then refuses, which no real CPU of the capped kind does (the encoder reports it in one line)."""
    v = random_encoder_variables(n_mels=8, d_model=64, heads=2, layers=2, frames=40)
    features = np.random.default_rng(3).standard_normal((1, 8, 60)).astype(np.float32)
    full = _compile(build_encoder(v, "float"))({0: features})[0]
    try:
        int8 = _compile(build_encoder(v, "int8"))({0: features})[0]
    except RuntimeError as exc:
        assert os.environ.get("ONEDNN_MAX_CPU_ISA") and "FullyConnectedCompressed" in str(exc), exc
        return
    cosine = float((full * int8).sum() / np.linalg.norm(full) / np.linalg.norm(int8))
    assert cosine > 0.999 and not np.array_equal(full, int8)


def _string(text):
    return struct.pack("<H", len(text) + 1) + text.encode() + b"\0"


def test_model_bin_aliases_resolve_and_truncation_is_one_line(tmp_path):
    blob = (struct.pack("<I", 6) + _string("WhisperSpec") + struct.pack("<II", 3, 2)
            + _string("encoder/x") + struct.pack("<BIIBI", 2, 2, 2, 4, 8) + np.arange(4, dtype="<f2").tobytes()
            + _string("decoder/q") + struct.pack("<BIBI", 1, 3, 1, 3) + np.array([1, -2, 3], "i1").tobytes()
            + struct.pack("<I", 2) + _string("encoder/conv1/bias") + _string("decoder/q")
            + _string("encoder/y") + _string("encoder/x"))
    path = tmp_path / "model.bin"
    path.write_bytes(blob)
    spec = read_model_bin(tmp_path)
    assert spec.variables["encoder/y"].dtype == np.float16 and spec.variables["encoder/y"].tolist() == [[0, 1], [2, 3]]
    assert spec.variables["encoder/conv1/bias"].tolist() == [1, -2, 3]
    path.write_bytes(blob[:-7])
    with pytest.raises(ModelFileError, match="model.bin: the file ends"):
        read_model_bin(path)
    path.write_bytes(struct.pack("<I", 9) + blob[4:])
    with pytest.raises(ModelFileError, match="binary version 9"):
        read_model_bin(path)


@pytest.mark.model
def test_a_model_written_by_ctranslate2_reads_back_and_encodes_alike(tiny_v3, tmp_path):
    """A random model of large-v3's kind (128 mels; its zero biases stored once, as aliases) written by
    CTranslate2's own converter spec: OpenVINO's encoder of it equals CTranslate2's float32 encoder."""
    import ctranslate2

    from tokenmap.encoders.openvino import OpenVINOEncoder

    spec = read_model_bin(tiny_v3)
    assert spec.version == 6 and spec.name == "WhisperSpec" and "encoder/conv1/bias" in spec.aliases
    assert EncoderShape(spec.variables).as_dict() == {"n_mels": 128, "d_model": 64, "heads": 4, "layers": 2,
                                                      "positions": 1500}
    ct2 = ctranslate2.models.Whisper(str(tiny_v3), device="cpu", compute_type="float32", intra_threads=2)
    enc = OpenVINOEncoder(tiny_v3, "f32", threads=2, cache=tmp_path)
    features = (np.random.default_rng(4).standard_normal((2, 128, 600)) * 0.5).astype(np.float32)
    expected = np.asarray(ct2.encode(ctranslate2.StorageView.from_array(features)))
    np.testing.assert_allclose(np.asarray(enc.encode(features)), expected, atol=2e-3)


def test_parse_names_every_engine():
    assert parse("openvino:bf16") == ("openvino", "bf16") and parse("stock") == ("stock", None)
    for bad in ("gpu", "openvino:f16", "ctranslate2:int8"):
        with pytest.raises(ValueError, match="encoder must be one of"):
            parse(bad)


def _measured(ov_short, ct_short, ov_long, ct_long, int8=None):
    ms = {"openvino:f32": {"1000": ov_short, "3000": ov_long}, "ctranslate2": {"1000": ct_short, "3000": ct_long},
          "openvino:int8": int8 or {"1000": 1e9, "3000": 1e9}}
    return {"ms": ms}


def test_the_plan_keeps_ctranslate2_unless_openvino_is_clearly_faster():
    plan = plan_from_measurement(_measured(96, 100, 300, 700), "stock", "int8")
    assert plan.choices == (Choice("stock", "int8", 2000), Choice("openvino", "f32", 3000))
    assert "10 s: openvino:f32 96 ms, ctranslate2 100 ms" in plan.reason
    plan = plan_from_measurement(_measured(50, 100, 300, 700, {"1000": 40, "3000": 900}), "fork", "int8")
    assert plan.choices == (Choice("openvino", "int8", 2000), Choice("openvino", "f32", 3000))
    slow = plan_from_measurement(_measured(200, 100, 800, 700), "stock", "int8")
    assert slow.choices == (Choice("stock", "int8", 3000),)


class _Timed:
    """A stand-in OpenVINO encoder that takes ``ms[precision]`` milliseconds, or fails to compile."""

    ms = {"f32": 3.0, "int8": 2.0, "bf16": None, "int8-full": 1.0}

    def __init__(self, model_dir, precision, threads):
        if self.ms[precision] is None:
            raise choice.EncoderUnavailable(f"OpenVINO cannot compile the {precision} encoder on this CPU: Softmax")
        self.precision, self.n_mels = precision, 4

    def encode_array(self, features):
        import time

        time.sleep(self.ms[self.precision] * features.shape[-1] / 1000 / 1000)
        return features


class _CT2:
    n_mels = 4

    def encode(self, features):
        import time

        time.sleep(4.0 * np.asarray(features).shape[-1] / 1000 / 1000)


def test_auto_times_what_compiles_and_takes_the_fastest(monkeypatch, tmp_path):
    monkeypatch.setattr(choice, "OpenVINOEncoder", _Timed)
    monkeypatch.setattr(choice, "openvino_candidates", lambda: tuple(
        f"openvino:{p}" for p in _Timed.ms))
    data = choice.measure(tmp_path, "int8", 2, ct2=_CT2(), reps=1, lengths=(100, 300))
    assert set(data["ms"]) == {"openvino:f32", "openvino:int8", "openvino:int8-full", "ctranslate2"}
    assert data["unavailable"] == {"openvino:bf16": "OpenVINO cannot compile the bf16 encoder on this CPU: Softmax"}
    data["ms"] = {name: {"1000": ms["100"], "3000": ms["300"]} for name, ms in data["ms"].items()}
    assert plan_from_measurement(data, "stock", "int8").choices == (Choice("openvino", "int8-full"),)
    assert choice._fastest_openvino(data).choices == (Choice("openvino", "int8-full"),)
    assert choice.choose("openvino:bf16", tmp_path, "int8", 2).choices == (Choice("openvino", "bf16"),)  # forced
    assert choice.choose("openvino:int8-full", tmp_path, "int8", 2).choices == (Choice("openvino", "int8-full"),)


def test_full_int8_is_timed_only_with_int8_matrix_units(monkeypatch):
    from tokenmap.encoders import openvino

    monkeypatch.setattr(choice, "has_bf16", lambda: False)
    monkeypatch.setattr(choice, "nncf_missing", lambda: None)
    monkeypatch.setattr(choice, "int8_units", lambda: False)
    assert choice.openvino_candidates() == ("openvino:f32", "openvino:int8")
    monkeypatch.setattr(choice, "int8_units", lambda: True)
    assert choice.openvino_candidates()[-1] == "openvino:int8-full"
    monkeypatch.setattr(choice, "nncf_missing", lambda: "NNCF is not installed")
    assert "openvino:int8-full" not in choice.openvino_candidates()
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")  # oneDNN capped below VNNI: no int8 units, whatever the CPU
    assert not openvino.int8_units()


def test_auto_measures_once_and_keeps_the_measurement(monkeypatch, tmp_path):
    (tmp_path / "model.bin").write_bytes(b"x")
    calls = []

    def fake_measure(model_dir, compute_type, threads):
        calls.append(threads)
        import openvino as ov

        return dict(_measured(300, 100, 900, 700), cpu=choice.cpu_identity(), openvino=ov.__version__,
                    ctranslate2=choice.ct2_setting(), candidates=list(choice.openvino_candidates()))

    monkeypatch.setattr(choice, "measure_apart", fake_measure)
    first = choice.choose("auto", tmp_path, "int8", 2)
    again = choice.choose("auto", tmp_path, "int8", 2)
    assert first == again and calls == [2] and first.engines() <= {"stock", "fork"}
    path = choice.measurement_path(tmp_path, "int8", 2)
    data = json.loads(path.read_text())
    path.write_text(json.dumps(dict(data, cpu="another CPU")))  # measured elsewhere: measured again here
    choice.choose("auto", tmp_path, "int8", 2)
    assert calls == [2, 2]
    other = "AVX" if os.environ.get("ONEDNN_MAX_CPU_ISA") == "AVX2" else "AVX2"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", other)  # another oneDNN cap: another measurement, kept apart
    choice.choose("auto", tmp_path, "int8", 2)
    assert calls == [2, 2, 2] and choice.measurement_path(tmp_path, "int8", 2) != path


CRASHING_CHILD = """
import json, os, signal, sys
candidates = sys.argv[1:]
for name in candidates:
    print("running", name, flush=True)
    if name == "openvino:bf16":
        os.kill(os.getpid(), signal.SIGSEGV)
print("running ctranslate2", flush=True)
print(json.dumps({"ms": {name: {"3000": 1.0} for name in candidates + ["ctranslate2"]}, "unavailable": {}}))
"""


def test_an_encoder_that_crashes_while_timed_is_left_out_and_the_others_are_timed_again(monkeypatch, tmp_path):
    """The timing runs in a child: a candidate that kills it (by construction here) is named unavailable."""
    monkeypatch.setattr(choice, "openvino_candidates", lambda: ("openvino:f32", "openvino:bf16", "openvino:int8"))
    data = choice.measure_apart(tmp_path, "int8", 2, command=[sys.executable, "-c", CRASHING_CHILD])
    assert set(data["ms"]) == {"openvino:f32", "openvino:int8", "ctranslate2"}
    assert data["unavailable"] == {"openvino:bf16": "crashed the process that ran it (SIGSEGV)"}
    assert data["candidates"] == ["openvino:f32", "openvino:bf16", "openvino:int8"]  # what a kept one is valid for
    with pytest.raises(RuntimeError, match="timing the encoders failed: .*boom"):
        choice.measure_apart(tmp_path, "int8", 2, command=[sys.executable, "-c", "raise SystemExit('boom')"])


def test_without_openvino_auto_falls_back_and_openvino_fails_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(choice, "openvino_available", lambda: "openvino is not installed; pip install openvino")
    assert choice.choose("auto", tmp_path, "int8", 2).engines() <= {"stock", "fork"}
    with pytest.raises(RuntimeError, match="pip install openvino"):
        choice.choose("openvino", tmp_path, "int8", 2)


def test_routed_encoder_and_plan_lines():
    plan = EncoderPlan((Choice("stock", "int8", 2000), Choice("openvino", "f32", 3000)), "measured")
    assert choice.plan_summary(plan) == "ctranslate2 stock int8 up to 20 s, openvino f32 up to 30 s: measured"


def test_quantizing_keeps_the_named_layers_float_and_the_output_near_float():
    """The full-int8 recipe on a small random encoder of Whisper's layout: activations quantized
    (FakeQuantize nodes) except into the float layers, the output close to the float one."""
    from tokenmap.encoders.quantize import FLOAT_LAYERS, calibration_windows, quantize_encoder

    v = random_encoder_variables(n_mels=80, d_model=64, heads=2, layers=2, frames=1500)
    windows = calibration_windows(80, limit=4)
    quantized = quantize_encoder(build_encoder(v), 80, windows=windows)
    ops = {op.get_friendly_name(): op for op in quantized.get_ops()}
    assert sum(op.get_type_name() == "FakeQuantize" for op in ops.values()) >= 8
    kept = [name for name in ops if any(name == f or name.endswith("/" + f) for f in FLOAT_LAYERS)]
    assert len(kept) == len(FLOAT_LAYERS)  # conv2, layer 0's QKV and attention output projections
    for name in kept:
        producer = ops[name].input_value(0).get_node()
        assert producer.get_type_name() != "FakeQuantize", name
    features = windows[0][:, :, :600]
    full, int8 = _compile(build_encoder(v))({0: features})[0], _compile(quantized)({0: features})[0]
    cosine = float((full * int8).sum() / np.linalg.norm(full) / np.linalg.norm(int8))
    assert 0.98 < cosine < 1.0


def test_widening_scales_activation_ranges_and_leaves_weights_alone():
    import openvino as ov
    import openvino.opset13 as ops

    from tokenmap.encoders.quantize import widen_activation_ranges

    def bounds(lo, hi):
        return [ops.constant(np.float32(v)) for v in (lo, hi, lo, hi)]

    x = ops.parameter([1, 4], np.float32, name="x")
    acts = ops.fake_quantize(x, *bounds(-1.0, 2.0), 256)
    weight = ops.fake_quantize(ops.constant(np.ones((4, 4), np.float32)), *bounds(-3.0, 3.0), 255)
    model = ov.Model([ops.matmul(acts, weight, False, True).output(0)], [x])
    widen_activation_ranges(model, 1.5)
    ranges = {int(op.get_attributes()["levels"]): [float(op.input_value(i).get_node().get_data()) for i in range(1, 5)]
              for op in model.get_ops() if op.get_type_name() == "FakeQuantize"}
    assert ranges == {256: [-1.5, 3.0, -1.5, 3.0], 255: [-3.0, 3.0, -3.0, 3.0]}
    out = _compile(model)({0: np.array([[2.9, -1.4, 0.0, 1.0]], np.float32)})[0]
    assert abs(float(out[0, 0]) - 2.5) < 0.15  # 2.9 and -1.4 pass unclipped (clipped: 2.0 - 1.0 + 0 + 1 = 2.0)


def test_without_nncf_the_full_int8_encoder_is_unavailable_in_one_line(monkeypatch, tmp_path):
    from tokenmap.encoders import openvino

    monkeypatch.setattr(openvino.quantize, "nncf_missing", lambda: "NNCF is not installed; pip install nncf")
    (tmp_path / "model.bin").write_bytes(b"")
    monkeypatch.setattr(openvino, "read_model_bin", lambda path: pytest.fail("nothing is read before NNCF is there"))
    with pytest.raises(openvino.EncoderUnavailable, match="int8-full encoder cannot be built: NNCF is not installed"):
        openvino.OpenVINOEncoder(tmp_path, "int8-full", threads=2, cache=tmp_path)
