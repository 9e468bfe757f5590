"""Cost model: interpolation, saving, persistence."""

import json

import pytest

from tokenmap.decode.cost import DEFAULT, CostModel, calibration_path, interpolate, load_cost_model, save_cost_model


def test_default_matches_engine_notes():
    assert DEFAULT.step_ms == 11.8
    assert [DEFAULT.batch(n) for n in (1, 2, 4, 8, 12, 16, 24)] == [10.7, 13.1, 14.6, 15.4, 16.8, 19.1, 26.0]
    assert DEFAULT.batch(3) == pytest.approx(13.85)
    assert len(DEFAULT.batch_ms) == 32 and DEFAULT.batch(40) > DEFAULT.batch(32)


def test_saving():
    # 2 accepted tokens save two steps; verifying 8 tokens costs 15.4 - 11.8 extra
    assert DEFAULT.saving(2.0, 7) == pytest.approx(2 * 11.8 - (15.4 - 11.8))
    assert DEFAULT.saving(0.0, 1) < 0


def test_interpolate_and_validation():
    assert interpolate({1: 1.0, 3: 3.0}, up_to=4) == (1.0, 2.0, 3.0, 4.0)
    with pytest.raises(ValueError):
        CostModel(0.0, (1.0,))


def test_save_load_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TOKENMAP_CALIBRATION_DIR")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    assert load_cost_model(model) is DEFAULT
    cost = CostModel(5.0, (4.0, 5.0, 6.0))
    path = calibration_path(model, "int8", 2)
    assert path.parent == tmp_path / "cache" / "tokenmap" / "calibration" and path.name.endswith("-int8-2.json")
    save_cost_model(cost, path, {"threads": 2})
    loaded = load_cost_model(model, "int8", 2)
    assert loaded.step_ms == 5.0 and loaded.batch_ms == (4.0, 5.0, 6.0) and "calibrated" in loaded.source
    path.write_text(json.dumps({"step_ms": "x"}))
    assert load_cost_model(model, "int8", 2) is DEFAULT


def test_calibration_dir_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENMAP_CALIBRATION_DIR", str(tmp_path / "curves"))
    model = tmp_path / "model"
    model.mkdir()
    path = calibration_path(model, "float32", 4)
    assert path.parent == tmp_path / "curves" and path.name.endswith("-float32-4.json")
