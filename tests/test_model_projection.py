"""The arithmetic of benchmarks/model_projection.py: contexts, cost lookups, the base scaling, and a
replayed window that drafts the truth."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("tokenmap_model_projection", ROOT / "benchmarks" / "model_projection.py")
mp = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = mp
_spec.loader.exec_module(mp)

ROW = {"model": "m", "compute_type": "int8", "prefill": 20.0, "encoder_5s": 10.0, "encoder_30s": 60.0,
       "prefill_5s": 4.0, "prefill_30s": 20.0}


@pytest.fixture
def shape(tmp_path, monkeypatch):
    from tokenmap.decode.cost import calibration_path

    monkeypatch.setenv("TOKENMAP_CALIBRATION_DIR", str(tmp_path / "cal"))
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    path = calibration_path(model_dir, "int8", 2)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"step_ms": 10.0, "batch_ms": [10.0, 11.0, 12.0, 13.0, 14.0], "prefill_ms": 20.0,
                                "loop_ms": 1.0}))
    return mp.Shape("m", model_dir, "int8", ROW)


def test_context_follows_the_auto_rule():
    assert mp.context_s(0.5) == 5.0
    assert mp.context_s(3.0) == 7.0
    assert mp.context_s(29.0) == 30.0


def test_costs_interpolate_between_measured_contexts(shape):
    assert shape.encoder_ms() == 60.0
    assert shape.encoder_ms(17.5) == pytest.approx(35.0)
    assert shape.prefill_ms(5.0) == 4.0
    # generate: prefill, then (step - Python of a step) per token, EOT included
    assert shape.stock_decoder_ms(9) == pytest.approx(20.0 + 10 * 9.0)


def test_missing_calibration_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENMAP_CALIBRATION_DIR", str(tmp_path / "none"))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(SystemExit, match="tokenmap calibrate --model"):
        mp.Shape("m", tmp_path, "float32", ROW)


def test_scaling_by_base_keeps_unmeasured_keys():
    raw = {"a": 2.0, "b": 3.0}
    assert mp.scaled(raw, {"a": 1.0, "b": 1.5}, {"a": 0.5}) == {"a": 1.0, "b": 3.0}


@pytest.mark.model
def test_a_window_drafted_right_costs_fewer_passes_than_greedy(shape):
    from tokenmap.decode.gate import WindowGate
    from tokenmap.decode.special import SpecialTokens
    from tokenmap.models import resolve_model

    special = SpecialTokens.from_model_dir(str(resolve_model("base", download=False)))
    truth = [special.timestamp_begin] + [440, 1029, 1467, 257, 1728] * 4 + [special.timestamp_begin + 50]
    row = {"token_ids": truth, "audio_s": 2.0}
    ctl = WindowGate(shape.cost)
    ms, greedy, drafted, accepted = mp.replay_file(ctl, None, row, shape, special, True, 30.0)
    assert greedy == pytest.approx(20.0 + shape.cost.batch(2) + 10.0 * len(truth))
    assert drafted >= accepted > 0  # prompt lookup finds the repeats
    assert ms < greedy
