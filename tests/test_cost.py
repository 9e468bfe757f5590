"""Cost model: interpolation, saving, persistence."""

import json

import numpy as np
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


def test_window_saving_counts_the_loops_own_cost():
    cost = CostModel(10.0, (10.0, 12.0, 13.0, 14.0), loop_ms=0.5)
    # no drafts: every token a step of the loop, each 0.5 ms dearer than generate's
    assert cost.window_saving(tokens=20, passes=20, drafts=0, drafted=0) == pytest.approx(-10.0)
    # drafts of 3 kept whole: 5 passes of 4 tokens for 20 tokens
    assert cost.window_saving(tokens=20, passes=5, drafts=5, drafted=15) == pytest.approx(20 * 9.5 - 5 * 14.0)
    # rejected drafts cost their passes on top
    assert cost.window_saving(20, 20, 5, 5) < cost.window_saving(20, 20, 0, 0)


def test_loop_cost_is_saved_and_defaults_for_old_calibrations(tmp_path):
    from tokenmap.decode.cost import LOOP_MS

    cost = CostModel(5.0, (4.0, 6.0, 5.0), loop_ms=0.9)
    assert CostModel.from_json(cost.to_json()) == cost
    assert cost.smoothed().loop_ms == 0.9
    old = {"step_ms": 5.0, "batch_ms": [4.0, 5.0], "source": "measured", "prefill_ms": 60.0}
    assert CostModel.from_json(old).loop_ms == LOOP_MS


@pytest.mark.model
def test_calibration_measures_the_loops_own_cost(base_model_dir):
    from tokenmap.decode.calibration import calibrate

    cost = calibrate(base_model_dir, "int8", threads=2, max_tokens=2, reps=2)
    # what is measured: a pass of each length, the prompt, the loop's own part of a step, and plain generate on
    # the engine that decodes windows without drafts (a token and the prompt); no order among them is promised,
    # a loaded machine can make any of them slower than another
    assert cost.source == "measured" and len(cost.batch_ms) == 2
    measured = [cost.step_ms, *cost.batch_ms, cost.prefill_ms, cost.plain_step_ms]
    assert all(np.isfinite(ms) and ms > 0 for ms in measured), cost
    assert np.isfinite(cost.loop_ms) and cost.loop_ms >= 0.0 and cost.plain_prefill_ms >= 0.0
    # and used: plain generate's token is the measured one (no dearer than the loop's step), and a window's
    # saving weighs it against the loop's measured step
    assert cost.plain_token_ms == min(cost.plain_step_ms, cost.step_ms)
    assert cost.window_saving(20, 20, 0, 0) == pytest.approx(20 * (cost.plain_token_ms - cost.step_ms))
    assert CostModel.from_json(cost.to_json()) == cost


def test_window_saving_weighs_the_loop_against_plain_generate_as_measured():
    loop_only = CostModel(10.0, (10.0, 12.0, 13.0), loop_ms=1.0)  # generate: the step less the loop's part
    assert loop_only.plain_token_ms == 9.0
    faster_plain = CostModel(10.0, (10.0, 12.0, 13.0), loop_ms=1.0, plain_step_ms=7.0, prefill_ms=50.0,
                             plain_prefill_ms=40.0)
    # 20 tokens in 20 passes: against a 7 ms generate the loop loses 60 ms (the prompts are taken as equal)
    assert faster_plain.window_saving(20, 20, 0, 0) == pytest.approx(20 * 7.0 - 20 * 10.0)
    assert faster_plain.window_saving(20, 8, 6, 18) < loop_only.window_saving(20, 8, 6, 18)
    old = {"step_ms": 5.0, "batch_ms": [4.0, 5.0], "source": "measured", "prefill_ms": 60.0, "loop_ms": 0.5}
    assert CostModel.from_json(old).plain_step_ms == 0.0 and CostModel.from_json(old).plain_token_ms == 4.5


def test_the_window_gate_times_plain_generate_and_closes_when_the_loop_is_slower():
    from types import SimpleNamespace

    from tokenmap.decode.gate import WindowGate

    gate = WindowGate(DEFAULT, probe_windows=4)
    window = SimpleNamespace(tokens=20, passes=10, drafts=5, drafted=15, decoder_seconds=0.2)  # drafts pay
    for _ in range(4):  # the first is not timed, then three are
        assert gate.use_speculation()
        gate.record_window(window)
    assert gate.loop_slower() is None and not gate.use_speculation()  # one plain window, to time it
    gate.record_plain(0.1, 20)  # plain generate: 5 ms a token, the loop 10 (another engine, faster here)
    assert gate.saving_ms < 0 < gate.window_saving_ms and gate.loop_slower() is True
    assert [gate.use_speculation() for _ in range(4)] == [False, False, False, True]  # probes, as ever
    gate.record_plain(1.0, 20)  # plain turned slow: the loop wins again
    assert gate.loop_slower() is False and gate.use_speculation()


def test_the_window_gates_clock_weighs_short_and_long_windows_alike():
    """Prompts of 5 tokens in the loop against a plain window of 32: a time a token would find the loop
    1.8 times as slow (its prompt weighs on 5 tokens); over what the calibration expects of each window, the
    loop kept its drafts' saving and the gate stays open, without a window spent timing plain generate."""
    from types import SimpleNamespace

    from tokenmap.decode.gate import WindowGate

    cost = CostModel(11.9, (11.9, 14.8, 15.8, 16.0), prefill_ms=64.0, plain_step_ms=11.45, plain_prefill_ms=73.8)
    gate = WindowGate(cost, probe_windows=4)
    short = SimpleNamespace(tokens=5, passes=3, drafts=2, drafted=4)
    modelled = cost.plain_window_ms(5) - cost.window_saving(5, 3, 2, 4)
    for _ in range(6):
        assert gate.use_speculation()  # the calibration timed plain generate: no window goes to time it
        gate.record_window(SimpleNamespace(**vars(short), decoder_seconds=(modelled + 5.0) / 1000))
    gate.record_plain(cost.plain_window_ms(32) / 1000, 32)
    loop_per_token = (modelled + 5.0) / 5
    assert loop_per_token > 1.7 * cost.plain_window_ms(32) / 32  # a clock a token: the loop "slower"
    assert 0 < gate.saving_ms < gate.window_saving_ms and gate.loop_slower() is False and gate.use_speculation()
    gate.record_plain(0.5 * cost.plain_window_ms(32) / 1000, 32)  # plain generate turned twice as fast
    assert gate.loop_slower() is True and not gate.use_speculation()


def test_a_busy_machine_slows_both_sides_and_keeps_a_losing_map_out():
    """Everything 20 % slower than calibrated, short loop windows and long plain ones: the loop's drafts
    lose a little on the curve (a wrong map), and they still lose at the clock's ratios (a difference
    in ms a window would credit the loop with the long plain windows' larger overrun)."""
    from types import SimpleNamespace

    from tokenmap.decode.gate import WindowGate

    cost = CostModel(11.9, (11.9, 14.8, 15.8, 16.0), prefill_ms=64.0, plain_step_ms=11.45, plain_prefill_ms=73.8)
    gate = WindowGate(cost, probe_windows=4)
    losing = SimpleNamespace(tokens=6, passes=6, drafts=1, drafted=1)
    modelled = cost.plain_window_ms(6) - cost.window_saving(6, 6, 1, 1)
    for _ in range(4):
        gate.record_window(SimpleNamespace(**vars(losing), decoder_seconds=1.2 * modelled / 1000))
    for _ in range(3):
        gate.record_plain(1.2 * cost.plain_window_ms(64) / 1000, 64)
    assert gate.time_ratio("loop") == pytest.approx(1.2) and gate.time_ratio("plain") == pytest.approx(1.2)
    assert gate.window_saving_ms < 0 and gate.saving_ms == pytest.approx(1.2 * gate.window_saving_ms)
    assert gate.loop_slower() is True and not gate.use_speculation()


def test_a_calibration_of_the_other_row_math_asks_for_a_new_one(tmp_path, monkeypatch, caplog):
    from tokenmap.runtime import nativelib

    monkeypatch.setenv("TOKENMAP_CALIBRATION_DIR", str(tmp_path))
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    path = calibration_path(model, "int8", 2)
    now = nativelib.row_math_status()
    other = "not built" if now == "on" else "on"
    for stored, warned in ((now, False), (other, True)):
        save_cost_model(CostModel(5.0, (4.0, 5.0, 6.0)), path, {"row_math": stored})
        caplog.clear()
        with caplog.at_level("WARNING", logger="tokenmap"):
            assert load_cost_model(model, "int8", 2).step_ms == 5.0
        assert ("run `tokenmap calibrate` again" in caplog.text) is warned, stored
