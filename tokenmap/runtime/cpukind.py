"""The CPU kind this machine is, as docs/BENCHMARKS.md names its sections, and what the kept results
measured on that kind lead a user to expect (the last line of ``tokenmap doctor``).

``expected.json`` beside this module is written by ``benchmarks/report.py`` from results/kept/ (one line
per measured CPU kind), so the installed package carries the figures without the benchmarks folder.

Example::

    >>> cpu_kind("vendor_id : GenuineIntel\\nflags : avx2 amx_tile\\n")
    'Intel Xeon with AMX'
    >>> expectation("Some CPU", {}).split(":")[0]
    'not measured on this CPU kind (Some CPU)'
"""

from __future__ import annotations

import json
from pathlib import Path

EXPECTED = Path(__file__).with_name("expected.json")


def cpu_kind(cpuinfo: str | None = None) -> str:
    """This machine's CPU kind as results/kept/sections.json names kinds, from /proc/cpuinfo (or ``cpuinfo``)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    info = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), value.strip())
    flags = set(info.get("flags", "").split())
    if "amx_tile" in flags:
        return "Intel Xeon with AMX"
    if info.get("vendor_id") == "AuthenticAMD":
        family, model = int(info.get("cpu family", 0) or 0), int(info.get("model", 0) or 0)
        zen = {23: "Zen 2", 26: "Zen 5"}.get(family) or ("Zen 3" if family == 25 and (model < 16 or 32 <= model < 96)
                                                        else "Zen 4" if family == 25 else f"family {family}")
        isa = "AVX-512 BF16/VNNI" if "avx512_bf16" in flags else "AVX-512" if "avx512f" in flags else "AVX2"
        return f"AMD EPYC {zen} ({isa})"
    return "Intel Xeon or Core without AMX (AVX2 or AVX-512)"


def expectation(kind: str | None = None, expected: dict | None = None) -> str:
    """One line a user can act on: what the kept results measured on this CPU kind for short files, or
    how to measure it where nothing was."""
    kind = cpu_kind() if kind is None else kind
    if expected is None:  # the kept expectation per CPU kind, ``{kind: line}``
        try:
            expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            expected = {}
    return expected.get(kind) or (f"not measured on this CPU kind ({kind}): run `make bench-quick` from a "
                                  "checkout, then `make bench-report`")
