"""Without the engine fork (stock CTranslate2, e.g. macOS, Windows, Linux ARM), tokenmap is plain faster-whisper.

Nothing is uninstalled: the loaded engine is made to look like stock CTranslate2
by hiding its decoder-step API from tokenmap's check.
"""

import json
import logging

import pytest
from click.testing import CliRunner

from tokenmap.runtime import engine
from tokenmap_cli.main import cli

pytestmark = pytest.mark.model

FILES = ["en-agent-pass.flac", "en-conf-getpin.flac"]


@pytest.fixture()
def stock_engine(monkeypatch, caplog):
    """The step API looks missing, on a platform without fork wheels; warnings start afresh."""
    monkeypatch.setattr(engine, "missing_step_api", lambda *a: ["prefill", "forward_batch"])
    monkeypatch.setattr(engine, "fork_wheel_available", lambda *a: False)
    monkeypatch.setattr(engine, "platform_name", lambda: "Darwin arm64")
    monkeypatch.setattr(engine, "_warned", set())
    caplog.set_level(logging.WARNING, logger="tokenmap")
    return caplog


def _fork_warnings(caplog):
    return [r for r in caplog.records if "ctranslate2-crisperwhisper" in r.getMessage()]


def _text(segments) -> str:
    return "".join(s.text for s in segments).strip()


def test_whisper_model_decodes_as_plain_faster_whisper(stock_engine, base_model_dir, telephony_map, fw_model,
                                                       data_dir):
    from tokenmap import WhisperModel

    models = [WhisperModel(str(base_model_dir), token_map=str(telephony_map), compute_type="int8", cpu_threads=2)
              for _ in range(2)]
    model = models[0]
    assert model.drafting is False
    assert model.model.drafting is None
    for name in FILES:
        audio = str(data_dir / name)
        segments, _ = model.transcribe(audio, language="en")  # greedy by default, as with the fork
        expected, _ = fw_model.transcribe(audio, language="en", beam_size=1)
        assert _text(segments) == _text(expected)
        assert model.last_stats()["drafted"] == 0 and model.last_stats()["windows"] == 0
    warnings = _fork_warnings(stock_engine)
    assert len(warnings) == 1, "one warning per process, however many models"
    assert "manylinux x86-64" in warnings[0].getMessage() and engine.FIX_COMMAND in warnings[0].getMessage()


@pytest.mark.parametrize("with_map", [True, False])
def test_cli_transcribe_works_without_the_fork(stock_engine, telephony_map, fw_model, data_dir, tmp_path, with_map):
    maps = ["--map", str(telephony_map)] if with_map else []
    files = [str(data_dir / name) for name in FILES]
    result = CliRunner().invoke(cli, ["transcribe", "--threads", "2", "-l", "en", "-f", "json", "-o", str(tmp_path),
                                      *maps, *files])
    assert result.exit_code == 0, result.output
    for name in FILES:
        ours = json.loads((tmp_path / name.replace(".flac", ".json")).read_text())
        expected, _ = fw_model.transcribe(str(data_dir / name), language="en", beam_size=1, vad_filter=True)
        assert ours["text"] == _text(expected)
        assert "drafted" not in ours.get("stats", {})
    assert "drafted" not in result.stderr and "RTF" in result.stderr
    # drafting was asked for only with --map: then it says once why it is off
    assert len(_fork_warnings(stock_engine)) == (1 if with_map else 0)
