"""Audio recall: the index file, the drafter, and exactness with recalled drafts."""

import numpy as np
import pytest

from tokenmap.decode.drafters import Heard, default_drafter
from tokenmap.decode.recall import RecallDrafter, new_index
from tokenmap.decode.rules import greedy_decode
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import decode_window
from tokenmap.maps.audio_fingerprints import fingerprint, mel_fingerprint
from tokenmap.maps.mapfile import load_maps, write_map
from tokenmap.maps.recallindex import RecallIndex, segments
from tokenmap.maps.schema import RECALL_VERSION, MapFormatError

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


def toy_mel(seed: int = 0) -> np.ndarray:
    """30 s of "log-mel features" [80, 3000] whose every 100 ms sounds different."""
    rng = np.random.default_rng(seed)
    return np.repeat(rng.normal(size=(80, 300)), 10, axis=1).astype(np.float32)


def test_mel_fingerprint_ignores_level_and_bands_above_4_khz():
    mel = toy_mel()
    v = mel_fingerprint(mel, 120)
    louder = mel + 0.7
    louder[56:] = -1.0  # telephone audio: nothing above 4 kHz
    assert float(v @ mel_fingerprint(louder, 120)) == pytest.approx(1.0, abs=1e-5)
    assert float(v @ mel_fingerprint(mel, 400)) < 0.5
    assert mel_fingerprint(mel, 2901) is None


def test_mel_recalls_a_segment_that_starts_inside_a_window():
    heard = toy_mel(0)
    index = RecallIndex.empty({})
    index.add_window(toy_frames(0), [TB, 7, 8, TB + 60, TB + 60, 9, TB + 110], TB, mel=heard)
    call = toy_mel(1)  # other audio, then the second segment 12 s in, 60 ms after the model's timestamp
    call[:, 1206:1406] = heard[:, 120:320]
    tokens = [TB, 5, TB + 600]  # a closing timestamp at 12.00 s
    assert RecallDrafter(index, toy_frames(1), TB, mel=call).draft(tokens, 20) == [TB + 600, 9, TB + 650]
    assert RecallDrafter(index, toy_frames(1), TB).draft(tokens, 20) == []  # the encoder output alone: no
    assert RecallDrafter(index, toy_frames(1), TB, mel=toy_mel(2)).draft(tokens, 20) == []  # never heard


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
    older = tmp_path / "older.trec"  # an index recorded before mel fingerprints
    write_map(older, loaded.header, {"vectors": np.zeros((1, 40), np.float16), "offsets": np.array([0, 1]),
                                     "tokens": np.array([7], np.uint32)}, version=RECALL_VERSION)
    with pytest.raises(MapFormatError, match="older tokenmap .* record it again"):
        RecallIndex.load(older)
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
        drafter = default_drafter(None, special, recall=index, heard=Heard(audio=enc))
        result = decode_window(engine, enc, prompt, special, drafter, **KW)
        assert result.tokens == ref.tokens
        assert result.score == pytest.approx(ref.score, abs=2e-4)
        assert result.stats.accepted >= len(ref.tokens) // 2
        assert result.stats.passes < len(ref.tokens) // 2
    enc = encode(engine, data_dir / "en-tt-weasels.flac")  # never recorded: recall stays out of the way
    drafter = default_drafter(None, special, recall=index, heard=Heard(audio=enc))
    assert decode_window(engine, enc, prompt, special, drafter, **KW).tokens == \
        greedy_decode(engine, enc, prompt, special, **KW).tokens


@pytest.fixture(scope="module")
def tokenizer(base_model_dir):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(base_model_dir / "tokenizer.json"))


def _features(audio):
    import ctranslate2
    from faster_whisper.feature_extractor import FeatureExtractor

    feats = FeatureExtractor()(audio)[:, :3000]
    feats = np.pad(feats, ((0, 0), (0, 3000 - feats.shape[1])))
    return feats, ctranslate2.StorageView.from_array(np.ascontiguousarray(feats[None]))


@pytest.mark.model
def test_mel_recall_drafts_a_prompt_played_inside_a_call(engine, base_model_dir, data_dir, tokenizer):
    """Two prompts recorded alone, then played back to back: the second one is recalled where it
    starts, inside the window, and the output stays greedy's (float32)."""
    from faster_whisper.audio import decode_audio

    special = SpecialTokens.from_model_dir(str(base_model_dir))
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    prompt = [special.sot, vocab["<|en|>"], vocab["<|transcribe|>"]]
    index = new_index(base_model_dir, tokenizer)
    clips = [decode_audio(str(data_dir / name)) for name in ("en-conf-getpin.flac", "en-agent-pass.flac")]
    for clip in clips:
        mel, feats = _features(clip)
        enc = engine.encode(feats)
        index.add_window(np.asarray(enc)[0], greedy_decode(engine, enc, prompt, special, **KW).tokens,
                         special.timestamp_begin, mel=mel)
    mel, feats = _features(np.concatenate([clips[0], np.zeros(11200, np.float32), clips[1]]))
    enc = engine.encode(feats)
    ref = greedy_decode(engine, enc, prompt, special, **KW)
    assert len(segments(ref.tokens, special.timestamp_begin)) >= 2
    kept = {}
    for name, heard in (("encoder only", None), ("with mel", mel)):
        drafter = default_drafter(None, special, recall=index, heard=Heard(audio=enc, mel=heard))
        result = decode_window(engine, enc, prompt, special, drafter, **KW)
        assert result.tokens == ref.tokens
        assert result.score == pytest.approx(ref.score, abs=2e-4)
        kept[name] = result.stats.accepted
    second = segments(ref.tokens, special.timestamp_begin)[-1][1]
    assert kept["with mel"] >= kept["encoder only"] + len(second), kept
