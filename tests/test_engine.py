"""The engine check: the fork's decoder-step API or one clear error; without it, plain decoding."""

import json
import logging
import types

import pytest
from click.testing import CliRunner

from tokenmap.runtime import engine, report
from tokenmap_cli.main import cli


def _fake_ct2(with_api: bool):
    class Whisper:
        pass

    class State:
        pass

    if with_api:
        for name in engine.STEP_API:
            setattr(Whisper, name, lambda *a: None)
        State.truncate_to_step = lambda *a: None
    return types.SimpleNamespace(
        __version__="4.8.5", models=types.SimpleNamespace(Whisper=Whisper, WhisperDecoderState=State),
        get_supported_compute_types=lambda device: {"int8", "float32"},
    )


def test_stock_ctranslate2_raises_with_the_fix(monkeypatch):
    monkeypatch.setattr(engine, "_import_ctranslate2", lambda: _fake_ct2(False))
    with pytest.raises(engine.EngineError) as err:
        engine.require_step_api()
    assert "--force-reinstall --no-deps ctranslate2-crisperwhisper" in str(err.value)
    assert "forward_batch" in str(err.value)


def test_fork_passes(monkeypatch):
    monkeypatch.setattr(engine, "_import_ctranslate2", lambda: _fake_ct2(True))
    assert engine.missing_step_api() == []


def test_installed_engine_is_the_fork():
    ct2 = engine.require_step_api()
    assert hasattr(ct2.models.Whisper, "forward_batch_greedy")


def test_doctor_info_reports_versions():
    info = report.doctor_info()
    assert info["step API"] == "present"
    assert info["faster-whisper"] != "not installed"


@pytest.mark.parametrize("system, machine, wheel", [
    ("Linux", "x86_64", True), ("Linux", "aarch64", False), ("Darwin", "arm64", False),
    ("Darwin", "x86_64", False), ("Windows", "AMD64", False),
])
def test_fork_wheels_exist_for_linux_x86_64_only(system, machine, wheel):
    assert engine.fork_wheel_available(system, machine) is wheel


def _stock_laptop(monkeypatch, where="Darwin arm64"):
    """Stock CTranslate2 on a platform the fork has no wheel for."""
    monkeypatch.setattr(engine, "_import_ctranslate2", lambda: _fake_ct2(False))
    monkeypatch.setattr(engine, "fork_wheel_available", lambda *a: False)
    monkeypatch.setattr(engine, "platform_name", lambda: where)
    monkeypatch.setattr(report, "cpu_report", lambda *a, **k: {})
    monkeypatch.setattr(engine, "_warned", set())


def test_drafting_off_is_said_once_with_the_fork_and_its_install_command(monkeypatch, caplog):
    _stock_laptop(monkeypatch)
    caplog.set_level(logging.WARNING, logger="tokenmap")
    assert engine.warn_drafting_off() is False
    assert engine.warn_drafting_off() is False
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert "ctranslate2-crisperwhisper" in message and "manylinux x86-64" in message
    assert "no wheel for Darwin arm64" in message and "plain faster-whisper" in message
    assert engine.FIX_COMMAND in message


def test_fork_present_means_drafting_on_without_a_warning(monkeypatch, caplog):
    monkeypatch.setattr(engine, "_import_ctranslate2", lambda: _fake_ct2(True))
    monkeypatch.setattr(engine, "_warned", set())
    caplog.set_level(logging.WARNING, logger="tokenmap")
    assert engine.drafting_off_reason() is None
    assert engine.warn_drafting_off() is True
    assert not caplog.records


def test_doctor_on_a_platform_without_fork_wheels_says_why_and_succeeds(monkeypatch):
    _stock_laptop(monkeypatch)
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["platform"] == "Darwin arm64"
    assert info["fork wheel for this platform"].startswith("no (ctranslate2-crisperwhisper ships manylinux x86-64")
    assert info["drafting"].startswith("off: ") and "no wheel for Darwin arm64" in info["drafting"]
    assert info["step API"].startswith("missing ")


def test_doctor_where_stock_shadows_the_fork_fails_with_the_fix(monkeypatch):
    _stock_laptop(monkeypatch, where="Linux x86_64")
    monkeypatch.setattr(engine, "fork_wheel_available", lambda *a: True)
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    assert result.exit_code == 1, result.output
    info = json.loads(result.stdout)
    assert info["fork wheel for this platform"] == "yes (manylinux x86-64)"
    assert engine.FIX_COMMAND in info["step API"]
    assert "stock CTranslate2 has shadowed the fork" in info["drafting"]
