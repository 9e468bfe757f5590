"""`tokenmap doctor` says which process-wide settings tokenmap applied, and how to opt out."""

import os
import subprocess
import sys

from tokenmap.runtime import engine, memory, report, threads


def test_the_line_names_each_setting_applied_and_its_opt_out(monkeypatch):
    monkeypatch.setattr(memory, "status", "applied")
    monkeypatch.setattr(threads, "status", "applied")
    line = report.runtime_settings()
    assert "for the whole process" in line
    assert "TOKENMAP_MALLOC=default" in line and "TOKENMAP_THREAD_WAIT=default" in line
    assert "one arena" in line and "OMP_WAIT_POLICY=ACTIVE" in line


def test_only_what_was_applied_is_listed(monkeypatch):
    monkeypatch.setattr(memory, "status", "off")
    monkeypatch.setattr(threads, "status", "applied")
    line = report.runtime_settings()
    assert "TOKENMAP_THREAD_WAIT=default" in line and "malloc" not in line
    monkeypatch.setattr(threads, "status", "user")
    assert report.runtime_settings() == "none applied by tokenmap in this process (malloc: off, thread wait: user)"


def test_doctor_info_always_has_the_line(monkeypatch):
    monkeypatch.setattr(engine, "_import_ctranslate2", lambda: (_ for _ in ()).throw(engine.EngineError("absent")))
    assert report.doctor_info()["runtime settings"] == report.runtime_settings()


def _line_in_a_fresh_process(**extra) -> str:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MALLOC_", "TOKENMAP_", "OMP_", "GOMP_")) and k != "GLIBC_TUNABLES"}
    env.update(extra)
    script = "import tokenmap, tokenmap.runtime.report as r; print(r.runtime_settings())"
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_fresh_process_reports_what_its_import_did():
    line = _line_in_a_fresh_process()
    assert "TOKENMAP_THREAD_WAIT=default" in line and "TOKENMAP_MALLOC" not in line  # malloc only when asked
    if sys.platform.startswith("linux") and memory._glibc() is not None:
        assert "TOKENMAP_MALLOC=default" in _line_in_a_fresh_process(TOKENMAP_MALLOC="tokenmap")
    off = _line_in_a_fresh_process(TOKENMAP_MALLOC="default", TOKENMAP_THREAD_WAIT="default")
    assert off == "none applied by tokenmap in this process (malloc: not asked for, thread wait: off)"
