"""``tokenmap doctor``'s ``encoder`` line: the engine each window length runs on, its precision and kernels.

Example::

    >>> encoder_line(model_dir, "int8", 2)                                   # doctest: +SKIP
    'openvino 2026.4.1 bf16 (FullyConnected: brgemm_avx512_amx_bf16; ...): openvino bf16 (this CPU ...)'
"""

from __future__ import annotations

import numpy as np

from tokenmap.encoders.base import describe
from tokenmap.encoders.choice import choose, plan_summary
from tokenmap.encoders.openvino import OpenVINOEncoder

#: the node types whose kernels say where the time goes
HEAVY = ("FullyConnected", "MatMul", "Convolution", "ScaledDotProductAttention")


def openvino_kernels(model_dir, precision: str, threads: int, frames: int = 400) -> dict[str, str]:
    """Per heavy node type, the kernels OpenVINO ran for one ``frames``-frame encode at ``precision``."""
    enc = OpenVINOEncoder(model_dir, precision, threads, perf_count=True)
    kernels: dict[str, list[str]] = {}
    for info in enc.profile(np.zeros((1, enc.n_mels, frames), np.float32)):
        if info.node_type in HEAVY and info.status.name == "EXECUTED" and info.exec_type:
            found = kernels.setdefault(info.node_type, [])
            if info.exec_type not in found:
                found.append(info.exec_type)
    return {node: ", ".join(found) for node, found in kernels.items()}


def encoder_line(model_dir, compute_type: str, threads: int, ct2_report: dict | None = None) -> str:
    """One line: what encodes by default and with which kernels, and why; ``ct2_report``: CTranslate2's CPU
    report (:func:`tokenmap.runtime.report.cpu_report`)."""
    plan = choose("auto", model_dir, compute_type, threads)
    parts = []
    for choice in plan.choices:
        if choice.engine == "openvino":
            import openvino as ov

            kernels = "; ".join(f"{node}: {k}" for node, k in openvino_kernels(model_dir, choice.precision,
                                                                              threads).items())
            parts.append(f"openvino {ov.__version__.split('-')[0]} {choice.precision} ({kernels})")
        else:
            report = ct2_report or {}
            isa = report.get("Selected ISA", "?")
            key = "GEMM_S8 backend" if "int8" in choice.precision else "SGEMM backend"
            gemm = report.get(key, "?")
            parts.append(f"{describe([choice])} (ISA {isa}; GEMM {gemm})")
    return " | ".join(parts) + " -- " + plan_summary(plan)
