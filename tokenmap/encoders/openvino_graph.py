"""Whisper's encoder as an OpenVINO model, built with the graph API from a CTranslate2 ``model.bin``.

The arrays of :func:`tokenmap.encoders.modelbin.read_model_bin` become constants of the graph CTranslate2
itself runs for ``encode``::

    features [batch, n_mels, T]
      -> conv1 (kernel 3, pad 1) + GELU -> conv2 (kernel 3, stride 2, pad 1) + GELU
      -> transpose to [batch, T/2, d_model] + the first T/2 position encodings
      -> n pre-norm layers: x + attention(norm(x)); x + ffn(norm(x))
      -> final layer norm: [batch, T/2, d_model]

``T`` and ``batch`` are dynamic; the shape (n_mels, depth, width, heads) is read from the file. ``weights="int8"``
stores the linear layers as int8 with one scale per output row (OpenVINO's weight-decompression pattern).

Example::

    >>> spec = read_model_bin(model_dir)                                          # doctest: +SKIP
    >>> [str(p.get_partial_shape()) for p in build_encoder(spec.variables).inputs]  # doctest: +SKIP
    ['[?,80,?]']
"""

from __future__ import annotations

import numpy as np

EPSILON = 1e-5  # Whisper's layer norm


class EncoderShape:
    """The shape of the encoder a variable dict describes: mels, width, heads, depth, positions."""

    def __init__(self, variables: dict[str, np.ndarray]):
        conv1 = variables["encoder/conv1/weight"]
        self.d_model, self.n_mels = int(conv1.shape[0]), int(conv1.shape[1])
        self.heads = int(np.asarray(variables["encoder/num_heads"]).reshape(-1)[0])
        self.layers = sum(1 for k in variables if k.startswith("encoder/layer_") and k.endswith("linear_0/weight")
                          and "self_attention" in k)
        self.positions = int(variables["encoder/position_encodings/encodings"].shape[0])

    def as_dict(self) -> dict:
        return {"n_mels": self.n_mels, "d_model": self.d_model, "heads": self.heads, "layers": self.layers,
                "positions": self.positions}


class _Builder:
    """Turns named arrays into graph nodes; ``weights`` says how linear layers store theirs."""

    def __init__(self, get, weights: str):
        import openvino.opset13 as ops

        self.get = get  # name -> float32 array
        self.weights = weights
        self.ops = ops

    def const(self, array) -> object:
        return self.ops.constant(np.ascontiguousarray(array, dtype=np.float32))

    def linear(self, x, scope: str):
        ops = self.ops
        weight = self.get(f"{scope}/weight")
        if self.weights == "int8":
            scale = np.maximum(np.abs(weight).max(axis=1, keepdims=True), 1e-12) / 127.0
            q = np.clip(np.rint(weight / scale), -127, 127).astype(np.int8)
            w = ops.multiply(ops.convert(ops.constant(q), "f32"), self.const(scale))
        else:
            w = self.const(weight)
        y = ops.matmul(x, w, transpose_a=False, transpose_b=True)
        y.set_friendly_name(scope)  # the quantizer's ignored scope names layers by these
        return ops.add(y, self.const(self.get(f"{scope}/bias")))

    def norm(self, x, scope: str):
        ops = self.ops
        axes = ops.constant(np.array([-1], dtype=np.int64))
        y = ops.mvn(x, axes, normalize_variance=True, eps=EPSILON, eps_mode="inside_sqrt")
        return ops.add(ops.multiply(y, self.const(self.get(f"{scope}/gamma"))), self.const(self.get(f"{scope}/beta")))

    def conv(self, x, scope: str, stride: int):
        ops = self.ops
        y = ops.convolution(x, self.const(self.get(f"{scope}/weight")), [stride], [1], [1], [1])
        y.set_friendly_name(scope)
        bias = self.get(f"{scope}/bias")
        return ops.gelu(ops.add(y, self.const(bias.reshape(1, -1, 1))), "erf")

    def attention(self, x, scope: str, heads: int, d_model: int):
        ops = self.ops
        qkv = self.linear(self.norm(x, f"{scope}/layer_norm"), f"{scope}/linear_0")
        split_shape = ops.constant(np.array([0, 0, heads, d_model // heads], dtype=np.int64))
        q, k, v = (ops.transpose(ops.reshape(part, split_shape, special_zero=True), [0, 2, 1, 3])
                   for part in ops.split(qkv, ops.constant(np.int64(-1)), 3).outputs())
        attended = ops.scaled_dot_product_attention(q, k, v, causal=False)
        merged = ops.reshape(ops.transpose(attended, [0, 2, 1, 3]),
                             ops.constant(np.array([0, 0, d_model], dtype=np.int64)), special_zero=True)
        return ops.add(x, self.linear(merged, f"{scope}/linear_1"))

    def ffn(self, x, scope: str):
        ops = self.ops
        hidden = ops.gelu(self.linear(self.norm(x, f"{scope}/layer_norm"), f"{scope}/linear_0"), "erf")
        return ops.add(x, self.linear(hidden, f"{scope}/linear_1"))


def build_encoder(variables, weights: str = "float", get=None):
    """An ``openvino.Model`` of the encoder in ``variables`` (name -> array), whose linear layers store
    ``weights`` as ``"float"`` or ``"int8"``; ``get(name) -> float32 array`` reads a variable (pass
    :meth:`~tokenmap.encoders.modelbin.ModelSpec.float32` to undo a quantized file's scales)."""
    import openvino as ov

    if weights not in ("float", "int8"):
        raise ValueError(f"weights must be 'float' or 'int8', not {weights!r}")
    get = get or (lambda name: np.asarray(variables[name], dtype=np.float32))
    shape = EncoderShape(variables)
    b = _Builder(get, weights)
    ops = b.ops
    features = ops.parameter([-1, shape.n_mels, -1], np.float32, name="features")
    x = b.conv(b.conv(features, "encoder/conv1", 1), "encoder/conv2", 2)
    x = ops.transpose(x, [0, 2, 1])  # [batch, T/2, d_model]
    frames = ops.gather(ops.shape_of(x), ops.constant(np.array([1], dtype=np.int64)), ops.constant(np.int64(0)))
    positions = ops.slice(b.const(get("encoder/position_encodings/encodings")),
                          ops.constant(np.array([0], dtype=np.int64)), frames,
                          ops.constant(np.array([1], dtype=np.int64)), ops.constant(np.array([0], dtype=np.int64)))
    x = ops.add(x, positions)
    for i in range(shape.layers):
        x = b.attention(x, f"encoder/layer_{i}/self_attention", shape.heads, shape.d_model)
        x = b.ffn(x, f"encoder/layer_{i}/ffn")
    x = b.norm(x, "encoder/layer_norm")
    x.output(0).get_tensor().set_names({"encoder_output"})
    return ov.Model([x.output(0)], [features], "whisper_encoder")

