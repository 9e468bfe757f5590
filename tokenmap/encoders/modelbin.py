"""Read a CTranslate2 ``model.bin`` without CTranslate2: its variables as numpy arrays.

CTranslate2's versioned binary format (``ModelSpec._serialize``, ``src/models/model.cc``); version 6::

    uint32  binary version
    string  spec name            (uint16 length with the NUL, bytes, NUL)   version >= 2
    uint32  spec revision                                                     version >= 2
    uint32  number of variables
      string  name
      uint8   rank, then rank x uint32 dimensions
      uint8   dtype id: float32, int8, int16, int32, float16, bfloat16      (version >= 4)
      uint32  number of bytes, then the bytes (little endian)
    uint32  number of aliases                                                 version >= 3
      string  alias name, string  name of the variable it stands for

Identical arrays are stored once and the others recorded as aliases, which :func:`read_model_bin` resolves.

Example::

    >>> import io, struct
    >>> def s(text): return struct.pack("<H", len(text) + 1) + text.encode() + b"\\0"
    >>> blob = (struct.pack("<I", 6) + s("WhisperSpec") + struct.pack("<II", 3, 1)
    ...         + s("a/bias") + struct.pack("<BIBI", 1, 2, 0, 8) + struct.pack("<2f", 1.0, 2.0)
    ...         + struct.pack("<I", 1) + s("b/bias") + s("a/bias"))
    >>> spec = read_model_bin(io.BytesIO(blob))
    >>> spec.name, spec.revision, spec.variables["b/bias"].tolist()
    ('WhisperSpec', 3, [1.0, 2.0])
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np

#: dtype ids of CTranslate2's ``DataType`` enum, in order
DTYPES = ("float32", "int8", "int16", "int32", "float16", "bfloat16")
SUPPORTED_VERSIONS = range(1, 7)


class ModelFileError(ValueError):
    """``model.bin`` is not a CTranslate2 model this reader understands (one line, with the file)."""


@dataclass
class ModelSpec:
    """What ``model.bin`` holds: ``variables`` by name (aliases resolved), ``aliases`` (alias -> name)."""

    version: int
    name: str
    revision: int
    variables: dict[str, np.ndarray] = field(repr=False)
    aliases: dict[str, str] = field(default_factory=dict)

    def float32(self, name: str) -> np.ndarray:
        """Variable ``name`` as float32; a quantized weight is scaled back with its ``*_scale`` variable."""
        value = self.variables[name]
        if value.dtype in (np.int8, np.int16):
            scale = self.variables.get(name + "_scale")
            if scale is None:
                raise ModelFileError(f"{name} is {value.dtype} but the file has no {name}_scale")
            scale = scale.astype(np.float32)
            return value.astype(np.float32) / scale.reshape(scale.shape + (1,) * (value.ndim - scale.ndim))
        return value.astype(np.float32)


class _Reader:
    def __init__(self, stream):
        self.stream = stream

    def take(self, size: int) -> bytes:
        data = self.stream.read(size)
        if len(data) != size:
            raise ModelFileError(f"the file ends {size - len(data)} bytes early")
        return data

    def unpack(self, fmt: str):
        values = struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))
        return values[0] if len(values) == 1 else values

    def string(self) -> str:
        raw = self.take(self.unpack("H"))
        return raw.rstrip(b"\0").decode("utf-8")


def _array(raw: bytes, dtype_name: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype_name == "bfloat16":  # numpy has none: widen the 16 high bits to float32
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=np.dtype(dtype_name).newbyteorder("<")).reshape(shape)


def read_model_bin(source) -> ModelSpec:
    """The variables of ``source`` (a path to ``model.bin``, a model directory, or a binary stream)."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            path = os.path.join(path, "model.bin")
        try:
            with open(path, "rb") as stream:
                return read_model_bin(stream)
        except ModelFileError as exc:
            raise ModelFileError(f"{path}: {exc}") from None
    reader = _Reader(source)
    version = reader.unpack("I")
    if version not in SUPPORTED_VERSIONS:
        raise ModelFileError(f"binary version {version} is not one of {SUPPORTED_VERSIONS.start}-"
                             f"{SUPPORTED_VERSIONS.stop - 1} (a newer CTranslate2 wrote it?)")
    name, revision = (reader.string(), reader.unpack("I")) if version >= 2 else ("", 1)
    variables: dict[str, np.ndarray] = {}
    for _ in range(reader.unpack("I")):
        key = reader.string()
        shape = tuple(reader.unpack("I") for _ in range(reader.unpack("B")))
        if version >= 4:
            type_id = reader.unpack("B")
            if type_id >= len(DTYPES):
                raise ModelFileError(f"{key} has an unknown dtype id {type_id}")
            dtype_name = DTYPES[type_id]
        else:  # older files give the item size: 4 float32, 2 int16, 1 int8
            dtype_name = {4: "float32", 2: "int16", 1: "int8"}[reader.unpack("B")]
        variables[key] = _array(reader.take(reader.unpack("I")), dtype_name, shape)
    aliases = {}
    if version >= 3:
        for _ in range(reader.unpack("I")):
            alias, target = reader.string(), reader.string()
            aliases[alias] = target
    for alias, target in aliases.items():
        while target in aliases and target not in variables:
            target = aliases[target]
        if target not in variables:
            raise ModelFileError(f"alias {alias} points at {target}, which the file does not hold")
        variables[alias] = variables[target]
    return ModelSpec(version, name, revision, variables, aliases)
