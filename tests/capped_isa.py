"""Every test marked ``model`` again as on each lower CPU kind this CPU can stand in for (``make test`` runs this).

The same int8 model gives other numbers on other CPUs (the kernels differ), so a suite that passes on one kind
can fail on another. Caps set in the environment before OpenVINO and CTranslate2 load (so in a subprocess) make
their kernels those of a lesser CPU:

* on a CPU with AVX-512, ``AVX2``: an AVX2-only CPU (no VNNI, no bfloat16), where bf16 and int8-weight OpenVINO
  models fail to compile and the full-int8 encoder is never built. ``ONEDNN_MAX_CPU_ISA`` caps oneDNN (OpenVINO's
  kernels, and CTranslate2's GEMMs where it uses oneDNN), ``CT2_FORCE_CPU_ISA`` CTranslate2's own vector code;
* on a CPU with AMX, ``AVX512_CORE_BF16``: AVX-512 with VNNI and bfloat16 but no AMX.

On an Intel CPU CTranslate2 runs Intel MKL, which ``ONEDNN_MAX_CPU_ISA`` does not cap: ``CT2_USE_MKL=0`` makes it
run oneDNN, as it does on the AMD CPUs that are the lower kinds (AMD Zen 3 for AVX2, Zen 4 for AVX-512 BF16).

Left out of the capped runs, to keep ``make test`` within about 20 minutes on 2 cores: the files in
:data:`MECHANICS`, whose model tests check processes, memory and the benchmark's plumbing (a worker killed or
hung, page faults, a bench run's files), each against the same engine in the same run, not what a kernel computes.

Exits with the first failing run's status; prints what it ran and how long it took.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

MECHANICS = ("tests/test_worker_faults.py", "tests/test_memory.py", "tests/test_cli_bench.py",
             "tests/test_bench_stock.py", "tests/test_model_projection.py")


def cpu_fields() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo (``flags``, ``vendor_id``, ...); none where it is missing."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                key, sep, value = line.partition(":")
                if sep:
                    fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def caps(flags: set[str], vendor: str = "") -> list[dict[str, str]]:
    """The environments of the lower kinds a CPU with ``flags`` (from ``vendor``) stands in for, highest first."""
    out = []
    if {"amx_int8", "amx_bf16"} & flags:
        out.append({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"})
    if "avx512f" in flags:
        out.append({"ONEDNN_MAX_CPU_ISA": "AVX2", "CT2_FORCE_CPU_ISA": "AVX2"})
    if vendor == "GenuineIntel":
        out = [dict(env, CT2_USE_MKL="0") for env in out]
    return out


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    fields = cpu_fields()
    found = caps(set(fields.get("flags", "").split()), fields.get("vendor_id", ""))
    if not found:
        print("capped model tests: this CPU has no kind below it to stand in for (AVX2 or less)")
        return 0
    for cap in found:
        named = " ".join(f"{k}={v}" for k, v in cap.items())
        print(f"== the model tests with {named}", flush=True)
        started = time.monotonic()
        ignore = [f"--ignore={path}" for path in MECHANICS]
        status = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "model",
                                  *ignore], cwd=root, env=dict(os.environ, **cap))
        print(f"== {named}: {time.monotonic() - started:.0f} s", flush=True)
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
