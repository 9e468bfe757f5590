"""The engine check: the fork's decoder-step API or one clear error."""

import types

import pytest

from tokenmap import engine


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
        __version__="4.8.5", models=types.SimpleNamespace(Whisper=Whisper, WhisperDecoderState=State)
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


def test_engine_info_reports_versions():
    info = engine.engine_info()
    assert info["step API"] == "present"
    assert info["faster-whisper"] != "not installed"
