"""Audio recall: the index file, the drafter, and exactness with recalled drafts."""

import numpy as np
import pytest

from tokenmap.decode.drafters import default_drafter
from tokenmap.decode.reference import greedy_decode
from tokenmap.decode.rules import SpecialTokens
from tokenmap.decode.speculative import decode_window
from tokenmap.maps.mapfile import load_maps
from tokenmap.maps.schema import MapFormatError
from tokenmap.recall import RecallDrafter, RecallIndex, fingerprint, new_index, segments

TB = 100  # timestamp_begin of the toy examples
KW = dict(beam_size=1, max_length=448, return_scores=True, return_no_speech_prob=True,
          suppress_blank=True, suppress_tokens=[-1], max_initial_timestamp_index=50)


def toy_frames(seed: int = 0) -> np.ndarray:
    """A 30 s "encoder output" of 8 dimensions whose every second sounds different."""
    rng = np.random.default_rng(seed)
    return np.repeat(rng.normal(size=(30, 8)), 50, axis=0).astype(np.float32)


def toy_index(frames) -> RecallIndex:
    index = RecallIndex.empty({"fingerprint": "f" * 64, "vocab_size": 2000, "encoder": "e", "model": "toy"})
    assert index.add_window(frames, [TB, 7, 8, TB + 60, TB + 60, 9, TB + 110], TB) == 2
    return index


def test_segments_pair_each_text_with_its_timestamps():
    assert segments([TB, 7, 8, TB + 60, TB + 60, 9, TB + 110], TB) == [(TB, [7, 8], TB + 60),
                                                                      (TB + 60, [9], TB + 110)]
    assert segments([TB, 7, 8], TB) == []  # unfinished: no closing timestamp
    assert segments([TB, TB + 5, 7, TB + 9], TB) == [(TB + 5, [7], TB + 9)]


def test_fingerprint_is_a_unit_vector_and_needs_a_second_of_frames():
    frames = toy_frames()
    v = fingerprint(frames, 100)
    assert v.shape == (5 * 8,) and np.linalg.norm(v) == pytest.approx(1.0)
    assert fingerprint(frames, 1451) is None and fingerprint(frames, -1) is None


def test_drafter_recalls_whole_segments_at_segment_starts():
    frames = toy_frames()
    drafter = RecallDrafter(toy_index(frames), frames, TB)
    assert drafter.draft([TB], 20) == [7, 8, TB + 60]  # window start
    assert drafter.draft([TB, 7, 8, TB + 60], 20) == [TB + 60, 9, TB + 110]  # after a closing timestamp
    assert drafter.draft([TB, 7, 8, TB + 60, TB + 60], 20) == [9, TB + 110]  # after an opening one
    assert drafter.draft([TB, 7], 20) == []  # inside a segment: the map's turn
    assert drafter.draft([TB], 2) == [7, 8]
    assert drafter.draft([], 20) == [7, 8]  # without timestamps: the text heard at the start
    shifted = RecallDrafter(toy_index(frames), np.roll(frames, 250, axis=0), TB)  # the same audio 5 s later
    assert shifted.draft([TB + 250], 20) == [7, 8, TB + 310]  # closing moves with the opening


def test_drafter_stays_silent_on_audio_it_never_heard():
    drafter = RecallDrafter(toy_index(toy_frames(0)), toy_frames(1), TB)
    assert drafter.draft([TB], 20) == []
    empty = RecallIndex.empty({})
    assert RecallDrafter(empty, toy_frames(0), TB).draft([TB], 20) == []


def test_index_round_trip_and_checks(tmp_path):
    frames = toy_frames()
    path = tmp_path / "toy.trec"
    index = toy_index(frames)
    index.save(path)
    with pytest.raises(FileExistsError):
        index.save(path)
    loaded = RecallIndex.load(path, fingerprint="f" * 64, encoder="e")
    assert len(loaded) == 2 and loaded.header["kind"] == "recall"
    assert RecallDrafter(loaded, frames, TB).draft([TB], 20) == [7, 8, TB + 60]
    with pytest.raises(MapFormatError, match="another model's encoder"):
        RecallIndex.load(path, encoder="other")
    with pytest.raises(MapFormatError, match="another tokenizer"):
        RecallIndex.load(path, fingerprint="0" * 64)
    with pytest.raises(MapFormatError, match="not a token map: give it with --recall"):
        load_maps(path)
    data = bytearray(path.read_bytes())
    data[-40] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(MapFormatError, match="checksum"):
        RecallIndex.load(path)


def test_a_token_map_is_not_a_recall_index(telephony_map):
    with pytest.raises(MapFormatError, match="not a recall index"):
        RecallIndex.load(telephony_map)


@pytest.fixture(scope="module")
def engine(base_model_dir):
    import ctranslate2

    return ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="float32", intra_threads=2)


@pytest.mark.model
def test_recalled_drafts_keep_greedy_output_and_save_passes(engine, base_model_dir, data_dir, encode, tokenizer):
    special = SpecialTokens.from_model_dir(str(base_model_dir))
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    prompt = [special.sot, vocab["<|en|>"], vocab["<|transcribe|>"]]
    index = new_index(base_model_dir, tokenizer)
    heard = {}
    for name in ("en-agent-pass.flac", "en-conf-getpin.flac", "en-basic-pbx-ivr-main.flac"):
        enc = encode(engine, data_dir / name)
        ref = greedy_decode(engine, enc, prompt, special, **KW)
        index.add_window(np.asarray(enc)[0], ref.tokens, special.timestamp_begin)
        heard[name] = (enc, ref)
    assert len(index) >= 4
    for name, (enc, ref) in heard.items():
        drafter = default_drafter(None, special.timestamp_begin, eot=special.eot, recall=index, audio=enc)
        result = decode_window(engine, enc, prompt, special, drafter, **KW)
        assert result.tokens == ref.tokens
        assert result.score == pytest.approx(ref.score, abs=2e-4)
        assert result.stats.accepted >= len(ref.tokens) // 2
        assert result.stats.passes < len(ref.tokens) // 2
    enc = encode(engine, data_dir / "en-tt-weasels.flac")  # never recorded: recall stays out of the way
    drafter = default_drafter(None, special.timestamp_begin, eot=special.eot, recall=index, audio=enc)
    assert decode_window(engine, enc, prompt, special, drafter, **KW).tokens == \
        greedy_decode(engine, enc, prompt, special, **KW).tokens


@pytest.fixture(scope="module")
def tokenizer(base_model_dir):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(base_model_dir / "tokenizer.json"))
