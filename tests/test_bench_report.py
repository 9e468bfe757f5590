"""docs/BENCHMARKS.md is written by `make bench-report` from results/kept/ and nothing else.

Regenerating it into a temporary file must give the committed file byte for byte; the report stays
under 500 lines; the adapter turns a `tokenmap bench` run into table files the report accepts.
"""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_report", ROOT / "benchmarks" / "report.py")
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)


def test_benchmarks_md_regenerates_byte_for_byte(tmp_path):
    out, readme = tmp_path / "BENCHMARKS.md", tmp_path / "README.md"
    readme.write_bytes((ROOT / "README.md").read_bytes())
    assert report.main(["-o", str(out), "--readme", str(readme)]) == 0
    assert out.read_bytes() == (ROOT / "docs" / "BENCHMARKS.md").read_bytes(), \
        "docs/BENCHMARKS.md differs from results/kept/: run `make bench-report` and commit both"
    assert readme.read_bytes() == (ROOT / "README.md").read_bytes(), \
        "README.md's how-fast table differs from its kept table: run `make bench-report` and commit both"
    assert len(out.read_text(encoding="utf-8").splitlines()) <= 500
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= 200


def test_every_table_names_its_source():
    for t in report.load_tables(report.KEPT):
        for key in ("command", "commit", "date", "model", "compute_type", "encoder_auto"):
            assert t[key], f"{t['_file']}: empty {key}"
        assert len(t["date"]) == 10 and t["date"][4] == "-", t["_file"]


def test_the_document_speaks_of_the_product():
    text = (ROOT / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8").lower()
    for words in ("this session", "today", "the day before", "worktree", "not committed", "of the morning"):
        assert words not in text, words


def test_a_table_with_a_wrong_row_is_refused(tmp_path):
    for name in ("sections.json", "tried.json", "intro.md", "method.md"):
        (tmp_path / name).write_text((report.KEPT / name).read_text(encoding="utf-8"), encoding="utf-8")
    table = {"section": "Intel Xeon with AMX", "order": 1, "title": "t", "command": "c", "commit": "abc1234",
             "date": "2026-11-28", "model": "base", "compute_type": "int8", "encoder_auto": "e",
             "columns": ["a", "b"], "rows": [["only one"]]}
    (tmp_path / "x.json").write_text(json.dumps(table), encoding="utf-8")
    with pytest.raises(ValueError, match="row of 1 cells"):
        report.render(tmp_path)
    table["rows"] = [["x", 1.5]]
    (tmp_path / "x.json").write_text(json.dumps(table), encoding="utf-8")
    text = report.render(tmp_path)
    assert "| x | 1.5 |" in text and "`c` (2026-11-28, git abc1234; base, int8" in text


def _run() -> dict:
    summary = {"n": 2, "S": 1.2, "S_vs_stock": 1.1, "A_r": 0.5, "A_l": 1.5, "identity": 1.0, "wer": 0.1}
    systems = {s: dict(summary) for s in ("greedy", "tokenmap", "oracle", "distil-spec", "stock-e2e",
                                           "tokenmap-e2e", "stock-defaults-e2e")}
    spread = {"min": 1.0, "max": 1.4, "mean": 1.2, "std": 0.2, "argmin": "a/en", "argmax": "b/en"}
    return {"machine": {"command": "tokenmap bench --quick", "git_commit": "abc1234", "date": "2026-11-28T14:00:00"},
            "options": {"model": "base", "compute_type": "int8", "threads": 2, "reps": 3, "e2e_reps": 1},
            "manifest": "bench-data/quick.jsonl", "utterances": 2,
            "aggregates": {"systems": systems, "groups": {"set": {"telephony": systems}, "task": {"a/en": systems}},
                           "fairness": {"U": 0.1, "S_spread": spread},
                           "map_modes": {"tokenmap": {"U": 0.1, "S_spread": spread},
                                         "tokenmap-balanced": {"U": 0.05, "S_spread": spread}}}}


def test_keep_writes_tables_the_report_takes(tmp_path):
    for name in ("sections.json", "tried.json", "intro.md", "method.md"):
        (tmp_path / name).write_text((report.KEPT / name).read_text(encoding="utf-8"), encoding="utf-8")
    paths = report.keep_run(_run(), "Intel Xeon with AMX", 100, "quick", "OpenVINO bf16", ["shared cores"], tmp_path)
    assert sorted(p.name for p in paths) == ["quick-decoder.json", "quick-e2e-wer.json", "quick-e2e.json",
                                             "quick-fairness.json", "quick-tasks.json"]
    text = report.render(tmp_path)
    assert "faster-whisper's defaults (untuned, beam 5)" in text and "`tokenmap-balanced`" in text
    assert "distil-spec (tiny.en drafts for base)" in text and "- shared cores" in text


def test_cpu_kind_names_the_sections():
    amd = "vendor_id : AuthenticAMD\ncpu family : 25\nmodel : {}\nflags : avx2 {}\n"
    assert report.cpu_kind(amd.format(17, "avx512f avx512_bf16")) == "AMD EPYC Zen 4 (AVX-512 BF16/VNNI)"
    assert report.cpu_kind(amd.format(1, "")) == "AMD EPYC Zen 3 (AVX2)"
    assert report.cpu_kind("vendor_id : GenuineIntel\nflags : avx2 amx_tile\n") == "Intel Xeon with AMX"
    kinds = {s["section"] for s in json.loads((report.KEPT / "sections.json").read_text())["sections"]}
    assert {"AMD EPYC Zen 4 (AVX-512 BF16/VNNI)", "AMD EPYC Zen 3 (AVX2)", "Intel Xeon with AMX"} <= kinds
