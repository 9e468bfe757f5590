"""The capped run (tests/capped_isa.py): which lower CPU kinds each CPU stands in for, and with what caps."""

from pathlib import Path

from capped_isa import MECHANICS, caps


def test_each_cpu_stands_in_for_the_kinds_below_it():
    amx = {"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8", "amx_bf16"}
    assert caps(amx, "AuthenticAMD") == [{"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"},
                                         {"ONEDNN_MAX_CPU_ISA": "AVX2", "CT2_FORCE_CPU_ISA": "AVX2"}]
    assert caps({"avx2", "avx512f", "avx512_vnni"}, "AuthenticAMD") == [
        {"ONEDNN_MAX_CPU_ISA": "AVX2", "CT2_FORCE_CPU_ISA": "AVX2"}]
    assert caps({"avx2", "avx_vnni"}, "GenuineIntel") == []  # nothing below AVX2 to stand in for


def test_on_intel_ctranslate2_leaves_mkl_which_the_onednn_cap_does_not_reach():
    assert all(env["CT2_USE_MKL"] == "0" for env in caps({"avx2", "avx512f", "amx_int8"}, "GenuineIntel"))


def test_what_the_capped_runs_leave_out_exists():
    root = Path(__file__).resolve().parent.parent
    assert all((root / path).is_file() for path in MECHANICS)
