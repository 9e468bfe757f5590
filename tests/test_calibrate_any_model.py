"""`tokenmap calibrate` on a CTranslate2 Whisper folder that is not base: a tiny random model of
large-v3's kind (128 mel bins, 51866 tokens with <|yue|>), built by benchmarks/model_shapes.py."""

import json

import pytest


@pytest.mark.model
def test_large_v3_vocabulary_shifts_ids_after_the_languages(tiny_v3, base_model_dir):
    from tokenmap.decode.special import SpecialTokens

    base, v3 = SpecialTokens.from_model_dir(str(base_model_dir)), SpecialTokens.from_model_dir(str(tiny_v3))
    assert v3.vocab_size == 51866 and v3.sot == base.sot and v3.eot == base.eot
    assert v3.no_timestamps == base.no_timestamps + 1
    vocab = json.loads((tiny_v3 / "vocabulary.json").read_text(encoding="utf-8"))
    assert vocab[50358:50361] == ["<|yue|>", "<|translate|>", "<|transcribe|>"]
    config = json.loads((tiny_v3 / "config.json").read_text(encoding="utf-8"))
    assert len(config["lang_ids"]) == 100 and max(config["suppress_ids"]) == 50363
    assert json.loads((tiny_v3 / "preprocessor_config.json").read_text())["feature_size"] == 128


@pytest.mark.model
def test_calibrate_any_model_folder(tiny_v3):
    from click.testing import CliRunner

    from tokenmap.decode.calibration import calibrate, calibration_prompt
    from tokenmap.decode.special import SpecialTokens
    from tokenmap_cli.cmd_calibrate import calibrate as command

    assert calibration_prompt(SpecialTokens.from_model_dir(str(tiny_v3)), True) == [50258, 50259, 50360]
    cost = calibrate(tiny_v3, "int8", threads=2, max_tokens=2, reps=1)
    assert len(cost.batch_ms) == 2 and cost.step_ms > 0
    result = CliRunner().invoke(command, ["--model", str(tiny_v3), "--max-tokens", "2", "--reps", "1"])
    assert result.exit_code == 0, result.output
    assert "saved" in result.output
