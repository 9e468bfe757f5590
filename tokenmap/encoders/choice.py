"""Which engine encodes: whichever compiles here and measured fastest on this CPU.

``encoder`` (``WhisperModel(encoder=...)``, ``--encoder``) is one of :data:`ENCODERS`:

* ``"auto"`` (default): per audio length, the fastest measured here among CTranslate2 and the OpenVINO
  precisions this CPU can run (:func:`openvino_candidates`; one that fails to compile or run is left out).
  Measured once per model shape, compute type, thread count, CPU and oneDNN cap, and kept beside the cost
  curves (``tokenmap calibrate --encoder`` measures again). CTranslate2 keeps a length unless OpenVINO takes
  at most :data:`MARGIN` of its time;
* ``"openvino"``: OpenVINO at its fastest measured precision; ``"openvino:<precision>"`` forces one;
* ``"ctranslate2"``: CTranslate2, as faster-whisper encodes: stock CTranslate2 in its worker where
  ``make stock-encoder`` installed it (``"stock"``), else the fork in process (``"fork"``).

Example::

    >>> parse("openvino:int8-full"), parse("ctranslate2"), parse("auto")
    (('openvino', 'int8-full'), ('ctranslate2', None), ('auto', None))
"""

from __future__ import annotations

import json
import logging
import os
import platform
import signal
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tokenmap.decode.cost import calibration_path, write_json
from tokenmap.encoders.base import Choice, StockEncoder, describe
from tokenmap.encoders.openvino import (
    PRECISIONS,
    EncoderUnavailable,
    OpenVINOEncoder,
    has_bf16,
    int8_units,
    openvino_available,
)
from tokenmap.encoders.quantize import nncf_missing
from tokenmap.runtime import memory
from tokenmap.runtime.stock_worker import StockWorkerError, stock_dir, stock_installed

logger = logging.getLogger("tokenmap")

ENGINES = ("auto", "openvino", "ctranslate2", "fork", "stock")
#: every value ``encoder`` takes (the command line's choices)
ENCODERS = ENGINES[:2] + tuple(f"openvino:{p}" for p in PRECISIONS) + ENGINES[2:]
LENGTHS = (1000, 3000)  # mel frames measured: a 10 s context and a 30 s window
BOUNDARY = 2000  # windows of up to this many frames take the short length's winner
MARGIN = 0.95  # OpenVINO must take at most this share of CTranslate2's time to be chosen


def parse(requested: str) -> tuple[str, str | None]:
    """``(engine, precision or None)`` of an ``encoder`` value; ValueError (one line) for anything else."""
    engine, _, precision = str(requested).partition(":")
    if engine not in ENGINES or (precision and (engine != "openvino" or precision not in PRECISIONS)):
        raise ValueError(f"encoder must be one of {', '.join(ENGINES)} (or openvino:{'|'.join(PRECISIONS)}), "
                         f"not {requested!r}")
    return engine, precision or None


@dataclass(frozen=True)
class EncoderPlan:
    """What encodes each window length, and why: ``choices`` sorted by ``max_frames``."""

    choices: tuple[Choice, ...]
    reason: str

    def engines(self) -> set[str]:
        return {c.engine for c in self.choices}


def openvino_candidates() -> tuple[str, ...]:
    """The OpenVINO precisions worth timing on this CPU: f32 and int8 weights, bf16 where OpenVINO reports
    bfloat16, full int8 where the CPU has int8 matrix instructions and NNCF can build it."""
    out = ["openvino:f32", "openvino:int8"]
    if has_bf16():
        out.append("openvino:bf16")
    if int8_units():
        if nncf_missing() is None:
            out.append("openvino:int8-full")
        else:
            logger.info("no full-int8 encoder: %s", nncf_missing())
    return tuple(out)


def cpu_identity() -> str:
    """The CPU's model name and flags, as this machine reports them, and oneDNN's ISA cap if one is set (what a
    measurement is valid for)."""
    fields = {}
    with suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name") or platform.processor() or platform.machine()
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA")
    return f"{name} | {' '.join(sorted(fields.get('flags', '').split()))}" + (f" | oneDNN cap {cap}" if cap else "")


def measurement_path(model_dir: Path, compute_type: str, threads: int) -> Path:
    """Where the encoder timings of this model, compute type, thread count, CTranslate2 setting
    (:func:`ct2_setting`) and oneDNN cap are kept."""
    path = calibration_path(Path(model_dir), compute_type, threads)
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA")
    setting = "".join(c if c.isalnum() else "-" for c in ct2_setting() + (f"-cap-{cap}" if cap else ""))
    return path.with_name(f"{path.stem}-encoders-{setting}.json")


def ctranslate2_engine() -> str:
    """``"stock"`` when ``make stock-encoder`` installed stock CTranslate2 for the worker, else ``"fork"``."""
    return "stock" if stock_installed() else "fork"


def measure(model_dir: Path, compute_type: str, threads: int, ct2=None, reps: int = 3,
            lengths=LENGTHS, candidates=None, running=None) -> dict:
    """Median milliseconds per encode of each candidate at each length in ``lengths``, interleaved: the
    ``candidates`` (default :func:`openvino_candidates`) that compile and run here, and ``"ctranslate2"``,
    ``ct2`` (the CTranslate2 encoder that would run; default: the stock worker, or the fork's model).
    ``running(name)`` is called before each encode. Returns ``{"cpu", "openvino", "ctranslate2",
    "candidates", "unavailable": {candidate: why}, "ms": {candidate: {frames: ms}}}``. In process: an engine
    that crashes takes the process with it (:func:`measure_apart` survives that)."""
    import ctranslate2
    import openvino as ov

    if ct2 is None and ctranslate2_engine() == "stock":
        ct2 = StockEncoder(model_dir, compute_type, threads)
    elif ct2 is None:
        ct2 = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type=compute_type,
                                         intra_threads=threads)
    candidates = openvino_candidates() if candidates is None else tuple(candidates)
    running = running or (lambda name: None)
    engines, unavailable, n_mels = {}, {}, getattr(ct2, "n_mels", 80)
    for name in candidates:
        try:
            enc = OpenVINOEncoder(model_dir, name.split(":")[1], threads)
        except EncoderUnavailable as exc:
            unavailable[name] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            logger.info("%s left out: %s", name, unavailable[name])
            continue
        engines[name], n_mels = enc.encode_array, enc.n_mels
    engines["ctranslate2"] = lambda x: ct2.encode(ctranslate2.StorageView.from_array(x))
    rng = np.random.default_rng(0)
    ms: dict[str, dict[str, list]] = {name: {} for name in engines}
    for frames in lengths:
        features = (rng.standard_normal((1, n_mels, frames)) * 0.5).astype(np.float32)
        for name, fn in engines.items():
            running(name)
            fn(features)  # warm-up: the first call at a length allocates
        for _ in range(reps):  # interleaved, so drift hits every engine alike
            for name, fn in engines.items():
                running(name)
                started = time.perf_counter()
                fn(features)
                ms[name].setdefault(str(frames), []).append(1000 * (time.perf_counter() - started))
    medians = {name: {f: round(float(np.median(v)), 2) for f, v in per.items()} for name, per in ms.items()}
    return {"cpu": cpu_identity(), "openvino": ov.__version__, "ctranslate2": ct2_setting(), "threads": threads,
            "compute_type": compute_type, "measured": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "candidates": list(candidates), "unavailable": unavailable, "ms": medians}


def measure_apart(model_dir: Path, compute_type: str, threads: int, reps: int = 3, command=None) -> dict:
    """:func:`measure` in a child process (``command``: its argument list before the candidates; default
    :mod:`tokenmap.encoders.timing`). An engine that crashes the child is left out as unavailable and the others
    are measured again, so choosing an encoder never takes the caller's process down."""
    command = command or [sys.executable, "-m", "tokenmap.encoders.timing", str(model_dir), compute_type,
                          str(threads), str(reps)]
    candidates, crashed = list(openvino_candidates()), {}
    while True:
        child = subprocess.run([*command, *candidates], capture_output=True, text=True)
        lines = child.stdout.splitlines()
        if child.returncode == 0 and lines and lines[-1].startswith("{"):
            data = json.loads(lines[-1])
            data["unavailable"].update(crashed)
            data["candidates"] = list(openvino_candidates())
            return data
        last = next((line.split(" ", 1)[1] for line in reversed(lines) if line.startswith("running ")), None)
        if last not in candidates:  # not an OpenVINO candidate's crash: nothing to leave out
            why = (child.stderr.strip().splitlines() or [f"exit status {child.returncode}"])[-1]
            raise RuntimeError(f"timing the encoders failed: {why}")
        status = -child.returncode
        crashed[last] = (f"crashed the process that ran it ({signal.Signals(status).name})" if
                         status in signal.valid_signals() else f"ended the process that ran it ({child.returncode})")
        logger.warning("encoder %s left out: %s", last, crashed[last])
        candidates.remove(last)


def ct2_setting() -> str:
    """What CTranslate2's encoder speed depends on besides the CPU: the engine, and in this process the
    malloc policy (:mod:`tokenmap.runtime.memory`; the stock worker always has it)."""
    engine = ctranslate2_engine()
    return engine if engine == "stock" else f"fork, malloc {memory.status or 'default'}"


def load_measurement(model_dir: Path, compute_type: str, threads: int) -> dict | None:
    """The kept measurement for this CPU, OpenVINO version and CTranslate2 setting, or None."""
    import openvino as ov

    path = measurement_path(model_dir, compute_type, threads)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (data.get("cpu"), data.get("openvino"), data.get("ctranslate2"), data.get("candidates")) != (
            cpu_identity(), ov.__version__, ct2_setting(), list(openvino_candidates())):
        return None
    return data


def measurement(model_dir: Path, compute_type: str, threads: int) -> dict:
    """The kept encoder measurement for this CPU (:func:`load_measurement`), measured and kept first if there is
    none (:func:`measure_apart`)."""
    data = load_measurement(model_dir, compute_type, threads)
    if data is None:
        logger.info("measuring the encoder engines once on this CPU (kept in %s; `tokenmap calibrate --encoder` "
                    "measures again)", measurement_path(model_dir, compute_type, threads))
        data = measure_apart(model_dir, compute_type, threads)
        save_measurement(model_dir, compute_type, threads, data)
    return data


def save_measurement(model_dir: Path, compute_type: str, threads: int, data: dict) -> Path:
    """Write ``data`` (from :func:`measure`) where :func:`load_measurement` finds it, atomically."""
    return write_json(measurement_path(model_dir, compute_type, threads), data)


def measured_openvino(ms: dict) -> list[str]:
    """The OpenVINO precisions a measurement's ``ms`` holds (``"openvino:<precision>"``)."""
    return [c for c in ms if c.startswith("openvino:")]


def plan_from_measurement(data: dict, ct2: str, compute_type: str) -> EncoderPlan:
    """Per measured length, the fastest engine; CTranslate2 unless OpenVINO takes at most :data:`MARGIN`
    of its time. Lengths up to :data:`BOUNDARY` frames follow the shortest measured length."""
    ms = data["ms"]
    choices, words = [], []
    lengths = sorted(int(f) for f in ms["ctranslate2"])
    openvino = measured_openvino(ms)
    if not openvino:
        return EncoderPlan((Choice(ct2, compute_type),), "ctranslate2: no OpenVINO precision runs on this CPU")
    for i, frames in enumerate(lengths):
        best = min(openvino, key=lambda c: ms[c][str(frames)])
        ov_ms, ct_ms = ms[best][str(frames)], ms["ctranslate2"][str(frames)]
        upto = BOUNDARY if i < len(lengths) - 1 else 3000
        choices.append(Choice("openvino", best.split(":")[1], upto) if ov_ms <= MARGIN * ct_ms else
                       Choice(ct2, compute_type, upto))
        words.append(f"{frames // 100} s: {best} {ov_ms:.0f} ms, ctranslate2 {ct_ms:.0f} ms")
    merged = [c for i, c in enumerate(choices) if i == len(choices) - 1 or
              (c.engine, c.precision) != (choices[i + 1].engine, choices[i + 1].precision)]
    return EncoderPlan(tuple(merged), "measured on this CPU (" + "; ".join(words) + ")")


def choose(requested: str, model_dir: Path, compute_type: str, threads: int) -> EncoderPlan:
    """The :class:`EncoderPlan` for ``requested`` (see the module's docstring)."""
    engine, precision = parse(requested)
    ct2 = ctranslate2_engine()  # the CTranslate2 engine's name: stock or fork
    if engine in ("fork", "stock"):
        if engine == "stock" and ct2 != "stock":
            raise StockWorkerError(f"no stock CTranslate2 in {stock_dir()}; run `make stock-encoder`")
        return EncoderPlan((Choice(engine, compute_type),), f"ctranslate2 {compute_type} ({engine}, asked for)")
    if engine == "ctranslate2":
        return EncoderPlan((Choice(ct2, compute_type),), f"ctranslate2 {compute_type} (asked for)")
    missing = openvino_available()
    if missing:
        if engine == "openvino":
            raise RuntimeError(missing)
        return EncoderPlan((Choice(ct2, compute_type),), f"ctranslate2: {missing}")
    if engine == "openvino" and precision is not None:
        return EncoderPlan((Choice("openvino", precision),), f"openvino {precision} (asked for)")
    data = measurement(model_dir, compute_type, threads)
    return _fastest_openvino(data) if engine == "openvino" else plan_from_measurement(data, ct2, compute_type)


def _fastest_openvino(data: dict) -> EncoderPlan:
    """The OpenVINO precision measured fastest on 30 s windows."""
    ms = data["ms"]
    frames = str(max(LENGTHS))
    timed = measured_openvino(ms)
    if not timed:
        raise EncoderUnavailable("no OpenVINO precision compiles on this CPU: "
                                 + "; ".join(f"{c}: {why}" for c, why in data.get("unavailable", {}).items()))
    best = min(timed, key=lambda c: ms[c][frames])
    precision = best.split(":")[1]
    return EncoderPlan((Choice("openvino", precision),),
                       f"openvino {precision} (fastest OpenVINO precision measured here: {ms[best][frames]:.0f} ms "
                       "a 30 s window)")


def plan_summary(plan: EncoderPlan) -> str:
    """One line: what encodes each length (:func:`~tokenmap.encoders.base.describe`), then why."""
    return f"{describe(plan.choices)}: {plan.reason}"
