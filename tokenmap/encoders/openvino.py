"""Whisper's encoder on OpenVINO: built once from ``model.bin``, cached, compiled for this CPU.

:class:`OpenVINOEncoder` answers ``encode(features) -> StorageView`` like CTranslate2's. The graph
(:mod:`tokenmap.encoders.openvino_graph`) is written once per model and weight format as OpenVINO IR under
``~/.cache/tokenmap/openvino/`` with float16 weights; OpenVINO's compiled-model cache beside it keeps what it
compiled for this CPU and precision. Precisions (:data:`PRECISIONS`):

* ``"bf16"``: OpenVINO's default on CPUs with AMX or AVX512_BF16; ``"f32"``: float32 arithmetic;
* ``"int8"``: linear weights stored as int8 with a scale per row, computed at the CPU's best float precision;
* ``"int8-full"``: weights and activations in int8 (:mod:`tokenmap.encoders.quantize`), for CPUs with int8
  matrix instructions.

OpenVINO may list a precision it cannot compile or run (BF16 with oneDNN capped at AVX2), so
:class:`OpenVINOEncoder` compiles and runs one tiny window when it opens and turns a failure into
:class:`EncoderUnavailable` (one line), which the choice (:mod:`tokenmap.encoders.choice`) skips.

Example::

    >>> enc = OpenVINOEncoder(model_dir, precision="bf16", threads=2)   # doctest: +SKIP
    >>> enc.encode(features).shape                                      # doctest: +SKIP
    [1, 1500, 512]
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from contextlib import suppress
from pathlib import Path

import numpy as np

from tokenmap.encoders import quantize
from tokenmap.encoders.base import Encoder
from tokenmap.encoders.modelbin import read_model_bin
from tokenmap.encoders.openvino_graph import EncoderShape, build_encoder

logger = logging.getLogger("tokenmap")

FORMAT_VERSION = 2  # of the cached IR: bump when the graph changes
PRECISIONS = ("bf16", "f32", "int8", "int8-full")
#: the IR each precision compiles: float weights, int8 weights, or weights and activations in int8
WEIGHTS = {"bf16": "float", "f32": "float", "int8": "int8", "int8-full": "int8-full"}
#: oneDNN ISA caps (ONEDNN_MAX_CPU_ISA) below which there are no int8 matrix instructions
NO_INT8_UNITS = ("SSE41", "AVX", "AVX2", "AVX512_CORE")


class EncoderUnavailable(RuntimeError):
    """This precision cannot run on this CPU or installation (one line that says why)."""


def openvino_available() -> str | None:
    """Why OpenVINO cannot encode here (a one-line reason), or None when it can."""
    try:
        import openvino  # noqa: F401
    except ImportError as exc:
        return f"openvino is not installed ({exc}); pip install openvino"
    return None


@functools.lru_cache(maxsize=1)
def has_bf16() -> bool:
    """True when OpenVINO computes in bfloat16 on this CPU by default: its ``OPTIMIZATION_CAPABILITIES`` list
    ``BF16`` (AMX or AVX512_BF16)."""
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def int8_units() -> bool:
    """True when the CPU has int8 matrix instructions OpenVINO's int8 kernels need (AVX512_VNNI, AVX-VNNI or
    AMX) and ``ONEDNN_MAX_CPU_ISA`` does not cap oneDNN below them."""
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
    if cap in NO_INT8_UNITS:
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            flags = next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), [])
    except OSError:
        return False
    return bool({"avx512_vnni", "avx_vnni", "amx_int8"} & set(flags))


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/tokenmap/openvino`` (default ``~/.cache/tokenmap/openvino``)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(root) / "tokenmap" / "openvino"


def model_key(model_dir: Path, weights: str) -> str:
    """A name for ``model_dir``'s encoder in ``weights`` format: its ``model.bin`` path, size and time."""
    path = (Path(model_dir) / "model.bin").resolve()
    stat = path.stat()
    recipe = f"|recipe {quantize.RECIPE}" if weights == "int8-full" else ""
    digest = hashlib.sha256(f"{FORMAT_VERSION}|{path}|{stat.st_size}|{stat.st_mtime_ns}|{weights}{recipe}".encode())
    return f"{Path(model_dir).name}-{weights}-{digest.hexdigest()[:16]}"


def cached_ir(model_dir: Path, weights: str, root: Path | None = None, force: bool = False) -> Path:
    """The encoder's IR (``encoder.xml``) for ``model_dir`` in ``weights`` format (a value of :data:`WEIGHTS`),
    built if missing (or ``force``) in a temporary directory renamed into place, so a crash never leaves half
    a model and two processes building at once both end with a whole one."""
    import openvino as ov

    target = (root or cache_root()) / model_key(model_dir, weights)
    xml = target / "encoder.xml"
    if xml.is_file() and (target / "meta.json").is_file() and not force:
        return xml
    missing = quantize.nncf_missing() if weights == "int8-full" else None
    if missing:
        raise RuntimeError(missing)
    if weights == "int8-full":  # a minute, once: say so where the command line shows it
        logger.warning("building the full-int8 OpenVINO encoder of %s once (about a minute; kept in %s)",
                       Path(model_dir).name, target)
    else:
        logger.info("building the OpenVINO encoder of %s (%s weights) into %s", model_dir, weights, target)
    spec = read_model_bin(Path(model_dir) / "model.bin")
    model = build_encoder(spec.variables, "int8" if weights == "int8" else "float", get=spec.float32)
    if weights == "int8-full":
        model = quantize.quantize_encoder(model, EncoderShape(spec.variables).n_mels)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        ov.save_model(model, str(tmp / "encoder.xml"), compress_to_fp16=True)
        meta = {"format": FORMAT_VERSION, "source": str((Path(model_dir) / "model.bin").resolve()),
                "weights": weights, "openvino": ov.__version__, "shape": EncoderShape(spec.variables).as_dict()}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        if force and target.exists():
            shutil.rmtree(target)
        with suppress(OSError):  # another process put a whole one there first
            tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return xml


def compile_config(precision: str, threads: int, cache_dir: Path | None) -> dict:
    """OpenVINO's CPU settings for ``precision`` on ``threads`` threads, latency first."""
    if precision not in PRECISIONS:
        raise ValueError(f"OpenVINO precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    config = {"INFERENCE_NUM_THREADS": int(threads), "PERFORMANCE_HINT": "LATENCY"}
    if precision == "f32":
        config["INFERENCE_PRECISION_HINT"] = "f32"
    if cache_dir is not None:
        config["CACHE_DIR"] = str(cache_dir)
    return config


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith(("Exception from", "Check "))), lines[0] if lines
                else type(exc).__name__)[:200]


class OpenVINOEncoder(Encoder):
    """``encode(features) -> StorageView`` on OpenVINO at ``precision`` (one of :data:`PRECISIONS`), from
    ``model_dir``'s own weights. Thread-safe: an encode takes an idle infer request from the encoder's pool
    (a new one when every request is busy) and puts it back when done."""

    engine = "openvino"

    def __init__(self, model_dir, precision: str = "f32", threads: int = 2, cache: Path | None = None,
                 perf_count: bool = False):
        import openvino as ov

        reason = openvino_available()
        if reason:
            raise RuntimeError(reason)
        self.model_dir = Path(model_dir)
        self.precision = precision
        self.threads = threads
        self.perf_count = perf_count
        root = cache or cache_root()
        config = compile_config(precision, threads, root / "compiled")
        try:
            self.ir = cached_ir(self.model_dir, WEIGHTS[precision], root)
        except RuntimeError as exc:  # NNCF missing or failing: this precision only
            raise EncoderUnavailable(f"the OpenVINO {precision} encoder cannot be built: {_first_line(exc)}") from exc
        if perf_count:
            config["PERF_COUNT"] = True
        try:
            self.compiled = ov.Core().compile_model(str(self.ir), "CPU", config)
        except RuntimeError as exc:
            raise EncoderUnavailable(f"OpenVINO cannot compile the {precision} encoder on this CPU: "
                                     f"{_first_line(exc)}") from exc
        self.inference_precision = str(self.compiled.get_property("INFERENCE_PRECISION_HINT"))
        meta = json.loads((self.ir.parent / "meta.json").read_text(encoding="utf-8"))
        self.n_mels = int(meta["shape"]["n_mels"])
        self.max_frames = 2 * int(meta["shape"]["positions"])
        self.version = ov.__version__
        self._idle: list = []  # infer requests no encode is using
        self._lock = threading.Lock()
        try:  # some kernels fail only when first run (int8 weights with oneDNN capped below the CPU's ISA)
            self.encode_array(np.zeros((1, self.n_mels, 4), np.float32))
        except RuntimeError as exc:
            raise EncoderUnavailable(f"OpenVINO cannot run the {precision} encoder on this CPU: "
                                     f"{_first_line(exc)}") from exc

    def encode(self, features, to_cpu: bool = False):
        import ctranslate2

        return ctranslate2.StorageView.from_array(self.encode_array(features))

    def encode_array(self, features) -> np.ndarray:
        """Encoder output as a float32 array ``[batch, frames / 2, d_model]``."""
        return self._infer(features)[0]

    def profile(self, features) -> list:
        """OpenVINO's profiling records of one encode of ``features`` (needs ``perf_count=True``)."""
        return list(self._infer(features)[1])

    def _infer(self, features) -> tuple[np.ndarray, list]:
        """The encoder output of ``features`` and the profiling records of the request that ran it."""
        array = np.ascontiguousarray(np.asarray(features), dtype=np.float32)
        if array.ndim == 2:
            array = array[None]
        if array.ndim != 3 or array.shape[1] != self.n_mels or not 0 < array.shape[2] <= self.max_frames:
            raise ValueError(f"features of shape {array.shape}, not [batch, {self.n_mels}, 1-{self.max_frames}]")
        with self._lock:
            request = self._idle.pop() if self._idle else self.compiled.create_infer_request()
        try:
            request.infer({0: array})
            output = np.array(request.get_output_tensor(0).data, copy=True)
            return output, request.profiling_info if self.perf_count else []
        finally:
            with self._lock:
                self._idle.append(request)
