"""The tokenizer encodes text the way Whisper emits it."""

import json

import pytest

from tokenmap.textok import TextTokenizer, repair_merges


def test_repair_restores_a_missing_merge_at_its_rank():
    vocab = {"a": 0, "b": 1, "c": 2, "ab": 256, "bc": 257, "abc": 258}
    spec = {"model": {"type": "BPE", "vocab": vocab, "merges": ["b c", "ab c"]}}
    assert repair_merges(spec) == ["a b"]
    assert spec["model"]["merges"] == ["a b", "b c", "ab c"]
    assert repair_merges(spec) == []  # complete merges are left alone


def test_repair_keeps_the_pair_form():
    spec = {"model": {"type": "BPE", "vocab": {"x": 0, "y": 1, "xy": 256, "yx": 257}, "merges": [["y", "x"]]}}
    assert repair_merges(spec) == ["x y"]
    assert spec["model"]["merges"] == [["x", "y"], ["y", "x"]]


@pytest.mark.model
def test_base_tokenizer_encodes_like_whisper(base_model_dir):
    """faster-whisper's base tokenizer.json lacks the merge "Ġ t": without the repair
    " the" would be [220, 3322], but Whisper base emits [264] (see the greedy output
    of the committed IVR fixture in test_cli_transcribe)."""
    raw = json.loads((base_model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    tok = TextTokenizer.from_model(base_model_dir)
    assert tok.repairs == (["Ġ t"] if "Ġ t" not in raw["model"]["merges"] else [])
    assert tok.encode("followed by the pound key.") == [6263, 538, 264, 12013, 2141, 13]
    assert tok.encode_batch(["to the that then"]) == [[281, 264, 300, 550]]


@pytest.mark.model
def test_every_whole_word_token_encodes_to_itself(base_model_dir, tiny_model_dir):
    """A word token of the vocabulary (leading space, letters) must encode to its own id."""
    for model_dir in (base_model_dir, tiny_model_dir):
        tok = TextTokenizer.from_model(model_dir)
        vocab = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
        words = [(t, i) for t, i in vocab.items() if t.startswith("Ġ") and t[1:].isascii() and t[1:].isalpha()]
        bad = [t for t, i in words if tok.encode(t[1:]) != [i]]
        assert len(words) > 10_000 and bad == []
