"""What ``tokenmap doctor`` prints: the engine, the platform, the host settings and the CPU, as one dict
(:func:`doctor_info`; the command prints it as a table or as JSON).

Example::

    >>> info = doctor_info()                                    # doctest: +SKIP
    >>> info["drafting"]                                        # doctest: +SKIP
    'on'
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys

from tokenmap.runtime import engine, memory, nativelib, packing, threads
from tokenmap.runtime.precision import describe


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cpu_report(model_dir, timeout: float = 120.0) -> dict:
    """CTranslate2's own CPU report (ISA, GEMM backends), which it prints when it first loads a model with
    ``CT2_VERBOSE=1``: ``model_dir`` is loaded once in a child process."""
    code = (
        "import ctranslate2; "
        f"ctranslate2.models.Whisper({str(model_dir)!r}, device='cpu', compute_type='int8')"
    )
    env = dict(os.environ, CT2_VERBOSE="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": str(exc)}
    report = {}
    for line in proc.stderr.splitlines():
        text = re.sub(r"^\[.*?\]\s*\[ctranslate2\]\s*\[thread \d+\]\s*\[info\]\s*", "", line).strip()
        if text.startswith("CPU:"):
            report["cpu"] = text[4:].strip()
        elif ":" in text and text.startswith("- "):
            key, _, value = text[2:].partition(":")
            report[key.strip()] = value.strip()
    return report


def doctor_info(model_dir=None, encoder_line=None) -> dict:
    """Everything `tokenmap doctor` prints, as a dict: with ``model_dir``, CTranslate2's CPU report and
    ``encoder_line(model_dir, compute_type, threads, cpu_report)`` (:func:`tokenmap.encoders.report.encoder_line`)."""
    info = {
        "platform": engine.platform_name(),
        "fork wheel for this platform": (
            f"yes ({engine.FORK_WHEELS})" if engine.fork_wheel_available()
            else f"no ({engine.FORK_DIST} ships {engine.FORK_WHEELS} wheels only)"
        ),
        "python": sys.version.split()[0],
        "ctranslate2 (module)": "not importable",
        "ctranslate2-crisperwhisper (dist)": _version(engine.FORK_DIST),
        "ctranslate2 (stock dist)": _version("ctranslate2"),
        "faster-whisper": _version("faster-whisper"),
        "numpy": _version("numpy"),
        "tokenizers": _version("tokenizers"),
        "runtime settings": runtime_settings(),
    }
    try:
        ct2 = engine._import_ctranslate2()
    except engine.EngineError as exc:
        info["step API"] = str(exc)
        info["drafting"] = "off: ctranslate2 is not importable"
        return info
    info["ctranslate2 (module)"] = ct2.__version__
    missing = engine.missing_step_api(ct2)
    if not missing:
        info["step API"] = "present"
    elif engine.fork_wheel_available():
        info["step API"] = f"MISSING {', '.join(missing)}; fix: {engine.FIX_COMMAND}"
    else:
        info["step API"] = f"missing {', '.join(missing)} (stock CTranslate2; no fork wheel for this platform)"
    reason = engine.drafting_off_reason()
    info["drafting"] = "on" if reason is None else f"off: {reason.partition(': ')[2]}"
    info["compute types (cpu)"] = ", ".join(sorted(ct2.get_supported_compute_types("cpu")))
    info["threads"] = _thread_report()
    info["thread wait"] = threads.describe()
    info["memory"] = memory.describe()
    info["packed GEMM (fork decoder)"] = packing.describe()
    info["row math (decoding loop)"] = nativelib.describe()
    if reason is None:
        info.update({"encoder": "needs a model (`tokenmap models prepare`)", "decoder (--compute-type int8)":
                     describe("int8"), "decoder (--exact)": describe("int8", exact=True)})
    else:
        info["encoder"] = f"ctranslate2 {ct2.__version__} in process (drafting off: plain faster-whisper)"
    if model_dir is not None:
        report = cpu_report(model_dir)
        info.update({("cpu" if k == "cpu" else f"cpu {k}"): v for k, v in report.items()})
        if reason is None and encoder_line is not None:
            try:
                info["encoder"] = encoder_line(model_dir, "int8", engine.default_threads(), report)
            except Exception as exc:  # doctor reports; it never stops on what it inspects
                info["encoder"] = f"could not be chosen: {exc}"
    return info


def runtime_settings() -> str:
    """One line for ``tokenmap doctor``: the process-wide settings tokenmap applied here, each with the variable
    that turns it off (they reach a host program's own threads and allocations too)."""
    applied = []
    if memory.status == "applied":
        applied.append(f"glibc malloc: one arena, no mmap, trim threshold 512 MB, top pad 64 MB "
                       f"({memory.OPT_OUT}=default to leave glibc's defaults)")
    if threads.status == "applied":
        applied.append(f"OMP_WAIT_POLICY=ACTIVE GOMP_SPINCOUNT=100000 in the environment "
                       f"({threads.OPT_OUT}=default to leave OpenMP's defaults)")
    if not applied:
        return (f"none applied by tokenmap in this process (malloc: {memory.status or 'not asked for'}, "
                f"thread wait: {threads.status or 'not run'})")
    return "set by tokenmap for the whole process, not only the engine: " + "; ".join(applied)


def _thread_report() -> str:
    omp = os.environ.get("OMP_NUM_THREADS")
    cores = os.cpu_count() or 1
    return (
        f"{cores} cores visible; OMP_NUM_THREADS={omp or 'unset'}; "
        f"tokenmap uses {engine.default_threads()} intra-op threads unless --threads says otherwise"
    )
