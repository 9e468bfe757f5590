"""The encoder tests again as on the lower CPU kinds this CPU can stand in for (``make test`` runs this).

oneDNN's ``ONEDNN_MAX_CPU_ISA``, set before OpenVINO and CTranslate2 load (so in a subprocess), makes their
kernels those of a lesser CPU:

* on a CPU with AVX-512, ``AVX2``: an AVX2-only CPU (no VNNI, no bfloat16), where bf16 and int8-weight
  models fail to compile and the full-int8 encoder is never built;
* on a CPU with AMX, ``AVX512_CORE_BF16``: AVX-512 with VNNI and bfloat16 but no AMX.

Exits with the first failing run's status; prints what it ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = ["tests/test_encoders.py", "tests/test_openvino_encoder.py"]


def cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return set(next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), []))
    except OSError:
        return set()


def caps(flags: set[str]) -> list[str]:
    """The oneDNN caps of the lower kinds ``flags`` covers, highest first."""
    out = []
    if {"amx_int8", "amx_bf16"} & flags:
        out.append("AVX512_CORE_BF16")
    if "avx512f" in flags:
        out.append("AVX2")
    return out


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    found = caps(cpu_flags())
    if not found:
        print("capped encoder tests: this CPU has no kind below it to stand in for (AVX2 or less)")
        return 0
    for cap in found:
        print(f"== the encoder tests with ONEDNN_MAX_CPU_ISA={cap}", flush=True)
        env = dict(os.environ, ONEDNN_MAX_CPU_ISA=cap)
        status = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS],
                                 cwd=root, env=env)
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
