"""The encoder in full int8: weights and activations, by NNCF's static post-training quantization.

Where the CPU has int8 matrix instructions (AVX512_VNNI, AVX-VNNI or AMX), OpenVINO runs a quantized encoder's
linear layers and attention on int8 kernels; without them int8 falls back to slow generic kernels, and
``auto`` keeps another engine. The recipe:

* SmoothQuant with alpha 0.7 on the matrix products: lower alphas leave the attention's output projections with
  too coarse an input scale on short, padded speech, higher ones move too much of the activations' range into
  the weights;
* three layers stay in float (:data:`FLOAT_LAYERS`): conv2, layer 0's QKV projection and layer 0's attention
  output projection;
* calibration on :func:`calibration_windows`: synthesized speech shipped with the package (``calibration/*.flac``,
  made by ``benchmarks/make_calibration_audio.py``), laid out as the encoder meets it, plus noise, tones and silence;
* every activation quantizer's range widened to :data:`ACTIVATION_RANGE_SCALE` times what calibration saw
  (:func:`widen_activation_ranges`): real speech drives activations past the calibration's min-max, and a
  clipped activation costs the transcript more than a coarser step.

NNCF is needed only to build the model, which takes about a minute for base and is cached like the float IR
(:func:`tokenmap.encoders.openvino.cached_ir`).

Example::

    >>> windows = calibration_windows(n_mels=80, limit=3)
    >>> [w.shape for w in windows]
    [(1, 80, 3000), (1, 80, 1000), (1, 80, 3000)]
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import numpy as np

logger = logging.getLogger("tokenmap")

CALIBRATION_DIR = Path(__file__).with_name("calibration")
SAMPLE_RATE = 16_000
SMOOTH_QUANT_ALPHA = 0.7
#: layers whose inputs stay in float, by name or by the end of a name (``"ffn/linear_1"``: every layer's)
FLOAT_LAYERS = ("encoder/conv2", "encoder/layer_0/self_attention/linear_0", "encoder/layer_0/self_attention/linear_1")
#: activation ranges are the calibration's min-max times this (:func:`widen_activation_ranges`)
ACTIVATION_RANGE_SCALE = 2.0
#: the recipe's version, part of the cached model's name: bump it when the recipe changes
RECIPE = 6
#: frames of the windows the encoder meets: a 30 s window and a 10 s audio context
LENGTHS = (3000, 1000)


def nncf_missing() -> str | None:
    """Why the full-int8 encoder cannot be built here (one line), or None."""
    try:
        import nncf  # noqa: F401
    except ImportError as exc:
        return f"NNCF is not installed ({exc}): pip install nncf"
    return None


@functools.lru_cache(maxsize=1)
def _speech() -> tuple[np.ndarray, ...]:
    from faster_whisper.audio import decode_audio

    clips = sorted(CALIBRATION_DIR.glob("*.flac"))
    if not clips:
        raise FileNotFoundError(f"no calibration audio in {CALIBRATION_DIR}")
    return tuple(decode_audio(str(path), sampling_rate=SAMPLE_RATE) for path in clips)


def _audio_windows(rng: np.random.Generator) -> list[tuple[np.ndarray, int]]:
    """(audio, frames) pairs: each clip alone (padded, as a short file is), clips run together to fill 30 s and
    10 s, at several gains with a little noise, then noise, tones and silence."""
    speech = _speech()
    out: list[tuple[np.ndarray, int]] = []
    for i, clip in enumerate(speech):  # one short utterance, then padding: the commonest window
        for frames in LENGTHS:
            out.append((clip * (0.3 + 0.7 * ((i + frames) % 3) / 2), frames))
    order = rng.permutation(len(speech))
    joined = np.concatenate([speech[i] for i in order])
    for frames, count in ((LENGTHS[0], 8), (LENGTHS[1], 10)):
        size = frames * SAMPLE_RATE // 100
        for k in range(count):
            start = int(rng.integers(0, max(1, len(joined) - size)))
            piece = joined[start:start + size] * float(rng.uniform(0.2, 1.0))
            piece = piece + rng.standard_normal(piece.shape).astype(np.float32) * float(rng.uniform(0, 0.01))
            out.append((piece, frames))
    seconds = np.arange(LENGTHS[0] * SAMPLE_RATE // 100) / SAMPLE_RATE
    for level in (0.001, 0.02, 0.1):
        out.append((rng.standard_normal(seconds.shape) * level, LENGTHS[0]))
    for hz in (440.0, 1000.0):
        out.append((0.3 * np.sin(2 * np.pi * hz * seconds), LENGTHS[0]))
    out.append((np.zeros(SAMPLE_RATE), LENGTHS[0]))
    out.append((np.zeros(SAMPLE_RATE), LENGTHS[1]))
    return out


def calibration_windows(n_mels: int = 80, limit: int | None = None, seed: int = 0) -> list[np.ndarray]:
    """Log-mel windows ``[1, n_mels, frames]`` (float32) to calibrate on, as faster-whisper computes them."""
    from faster_whisper.feature_extractor import FeatureExtractor

    extractor = FeatureExtractor(feature_size=n_mels)
    windows = []
    for audio, frames in _audio_windows(np.random.default_rng(seed))[:limit]:
        mel = extractor(np.asarray(audio, dtype=np.float32))[:, :frames]
        mel = np.pad(mel, ((0, 0), (0, frames - mel.shape[1])))  # faster-whisper pads a window with zeros
        windows.append(mel[None].astype(np.float32))
    return windows


def quantize_encoder(model, n_mels: int, windows: list[np.ndarray] | None = None):
    """``model`` (the float ``openvino.Model`` of :func:`~tokenmap.encoders.openvino_graph.build_encoder`) with its
    weights and activations quantized to int8, calibrated on ``windows`` (default :func:`calibration_windows`);
    raises RuntimeError (one line) when NNCF is missing."""
    missing = nncf_missing()
    if missing:
        raise RuntimeError(missing)
    import nncf
    from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters, AdvancedSmoothQuantParameters

    windows = calibration_windows(n_mels) if windows is None else windows
    names = {op.get_friendly_name() for op in model.get_ops()}
    ignored = sorted(name for name in names if any(name == f or name.endswith("/" + f) for f in FLOAT_LAYERS))
    logger.info("quantizing the encoder to int8 on %d calibration windows (NNCF %s)", len(windows), nncf.__version__)
    nncf.set_log_level(logging.WARNING)  # its progress bars stay; its per-layer notes go
    quantized = nncf.quantize(
        model, nncf.Dataset(windows), model_type=nncf.ModelType.TRANSFORMER, subset_size=len(windows),
        ignored_scope=nncf.IgnoredScope(names=ignored, validate=False),
        advanced_parameters=AdvancedQuantizationParameters(
            smooth_quant_alphas=AdvancedSmoothQuantParameters(matmul=SMOOTH_QUANT_ALPHA)))
    return widen_activation_ranges(quantized, ACTIVATION_RANGE_SCALE)


def widen_activation_ranges(model, factor: float):
    """``model`` with every activation quantizer's input and output range multiplied by ``factor`` (in place):
    fewer activations clipped, each step coarser. Weights' quantizers (255 levels, or a constant input) keep
    theirs."""
    import openvino.opset13 as ops

    for op in model.get_ops():
        if op.get_type_name() != "FakeQuantize" or op.get_attributes()["levels"] != 256:
            continue
        if op.input_value(0).get_node().get_type_name() == "Constant":
            continue
        for i in range(1, 5):
            bound = op.input_value(i).get_node().get_data() * factor
            op.input(i).replace_source_output(ops.constant(bound.astype(np.float32)).output(0))
    return model
