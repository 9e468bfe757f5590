"""The stock-encoder worker: features in and encoder output out through shared memory."""

import logging
import os

import numpy as np
import pytest

from tokenmap.decode.plain import PlainDecoder
from tokenmap.encoders.base import StockEncoder
from tokenmap.encoders.choice import choose
from tokenmap.runtime.stock_worker import StockWorker, StockWorkerError, stock_dir, stock_installed


@pytest.fixture
def broken_stock(tmp_path):
    """A 'stock CTranslate2' directory whose package fails on import: the worker dies at start."""
    (tmp_path / "ctranslate2").mkdir()
    (tmp_path / "ctranslate2" / "__init__.py").write_text("raise ImportError('broken on purpose')\n")
    return tmp_path


def test_missing_stock_directory_is_one_clear_error(tmp_path):
    with pytest.raises(StockWorkerError, match="make stock-encoder"):
        StockWorker("unused", directory=tmp_path / "nothing")


def test_ctranslate2_encodes_in_the_worker_where_it_is_installed(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENMAP_STOCK_CT2", str(tmp_path / "nothing"))
    assert stock_dir() == tmp_path / "nothing" and not stock_installed()
    assert choose("ctranslate2", tmp_path, "int8", 2).engines() == {"fork"}
    with pytest.raises(StockWorkerError, match="make stock-encoder"):
        choose("stock", tmp_path, "int8", 2)
    (tmp_path / "nothing" / "ctranslate2").mkdir(parents=True)
    (tmp_path / "nothing" / "ctranslate2" / "__init__.py").write_text("")
    assert choose("ctranslate2", tmp_path, "int8", 2).engines() == {"stock"}
    assert choose("fork", tmp_path, "int8", 2).engines() == {"fork"}
    with pytest.raises(ValueError):
        choose("gpu", tmp_path, "int8", 2)


def test_a_dead_worker_falls_back_to_the_fork_once(broken_stock, caplog, fork_stand_in):
    fork = fork_stand_in()
    enc = StockEncoder("unused", directory=broken_stock, fallback=fork)
    features = np.zeros((1, 80, 3000), np.float32)
    with caplog.at_level(logging.WARNING, logger="tokenmap"):
        assert enc.encode(features) == ("fork", (1, 80, 3000))
        assert enc.encode(features) == ("fork", (1, 80, 3000))
    assert fork.calls == 2 and enc.worker.failed
    assert sum("the fork encodes and decodes from now on" in r.getMessage() for r in caplog.records) == 1


def test_waiting_for_a_dead_worker_leaves_the_fallback_to_the_first_encode(broken_stock, fork_stand_in):
    fork = fork_stand_in()
    encoder = StockEncoder("unused", directory=broken_stock, fallback=fork)
    PlainDecoder(fork, encoder.worker, "int8").wait_ready()  # the worker died at start: no exception here
    assert encoder.encode(np.zeros((1, 80, 3000), np.float32)) == ("fork", (1, 80, 3000))


def test_a_dead_worker_without_fallback_raises(broken_stock):
    enc = StockEncoder("unused", directory=broken_stock)
    with pytest.raises(StockWorkerError, match="exited"):
        enc.encode(np.zeros((1, 80, 3000), np.float32))
    enc.close()


@pytest.fixture(scope="module")
def stock_encoder(base_model_dir):
    if not stock_installed():
        pytest.skip(f"no stock CTranslate2 in {stock_dir()}: run `make stock-encoder`")
    enc = StockWorker(base_model_dir, "int8", threads=2)
    yield enc
    enc.close()


@pytest.fixture(scope="module")
def window(data_dir):
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor

    feats = FeatureExtractor()(decode_audio(str(data_dir / "en-basic-pbx-ivr-main.flac")))[:, :3000]
    return np.ascontiguousarray(np.pad(feats, ((0, 0), (0, 3000 - feats.shape[1])))[None], dtype=np.float32)


@pytest.mark.model
def test_wait_ready_returns_once_the_worker_has_its_model(stock_encoder):
    PlainDecoder(None, stock_encoder, "int8").wait_ready()
    assert stock_encoder.version is not None


def test_round_trip_matches_the_forks_encoder(stock_encoder, base_model_dir, window):
    import ctranslate2

    fork = ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="int8", intra_threads=2)
    expected = np.asarray(fork.encode(ctranslate2.StorageView.from_array(window)))
    got = stock_encoder.encode(ctranslate2.StorageView.from_array(window))
    assert stock_encoder.wait_ready().startswith("4.")
    assert np.asarray(got).shape == expected.shape == (1, 1500, 512)
    np.testing.assert_allclose(np.asarray(got), expected, atol=1e-4)
    twice = np.asarray(stock_encoder.encode(window[0]))  # a 2-D array works too; blocks are reused
    np.testing.assert_array_equal(twice, np.asarray(got))
    names = [b.name for b in stock_encoder._blocks.values()]
    assert names and all(os.path.exists(f"/dev/shm/{n.lstrip('/')}") for n in names)


@pytest.mark.model
def test_close_frees_the_shared_memory(base_model_dir, window):
    if not stock_installed():
        pytest.skip(f"no stock CTranslate2 in {stock_dir()}: run `make stock-encoder`")
    enc = StockWorker(base_model_dir, "int8", threads=2)
    enc.encode(window)
    names = [b.name for b in enc._blocks.values()]
    enc.close()
    assert names and not any(os.path.exists(f"/dev/shm/{n.lstrip('/')}") for n in names)
    assert enc._proc.poll() is not None


@pytest.mark.model
def test_stock_encoder_gives_the_same_transcript(stock_encoder, base_model_dir, data_dir):
    """A plain model with the stock encoder transcribes as with the fork's encoder (exact: a float32 decoder,
    whose output does not depend on the draft either), up to what two builds of CTranslate2 may change: stock
    CTranslate2 (``make stock-encoder``) is another release than the fork, whose int8 kernels may give another
    CPU other numbers, so the words are held to at most one error in ten (at least one), as the short audio
    context's are (tests/test_fw_scenarios.py)."""
    import math
    import re

    import jiwer

    from tokenmap.transcriber import load_model, transcribe_file

    stock = load_model(str(base_model_dir), "int8", 2, encoder="stock", exact=True)
    fork = load_model(str(base_model_dir), "int8", 2, encoder="fork", exact=True)
    assert isinstance(stock.model.encoder, StockEncoder) and stock.model.plain.worker is stock.model.encoder.worker
    assert not isinstance(fork.model.encoder, StockEncoder)
    for name, heard in (("en-basic-pbx-ivr-main.flac", "calling"), ("fr-conf-getpin.flac", "code")):
        path = data_dir / name
        ours, theirs = (" ".join(re.sub(r"[^\w\s']", " ", transcribe_file(m, path).text.lower()).split())
                        for m in (stock, fork))
        assert heard in ours.split(), ours
        out = jiwer.process_words(theirs, ours)
        errors = out.substitutions + out.deletions + out.insertions
        assert errors <= max(1, math.ceil(0.1 * len(theirs.split()))), (ours, theirs)


def _similar(a, b) -> float:
    """How alike two token sequences are (difflib's ratio: 1.0 when equal)."""
    import difflib

    return difflib.SequenceMatcher(a=list(a), b=list(b), autojunk=False).ratio()


@pytest.mark.model
def test_generate_in_the_worker_matches_the_forks(stock_encoder, base_model_dir, window):
    """Stock ``generate`` on the output the worker kept from its encode, or on features sent to it, gives
    the same greedy tokens (stock CTranslate2's, as a user's faster-whisper decodes), which transcribe the window as
    the fork does; the plain decoder runs there; a handle the worker no longer keeps sends the output.

    Stock CTranslate2 and the fork are two builds: on some CPUs their int8 kernels differ and a window decodes a
    little differently (seen on an AMD EPYC), so the fork's tokens are held to nearly the same, not the same."""
    import ctranslate2

    fork = ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="int8", intra_threads=2)
    encoded, handle = stock_encoder.encode_held(window)
    prompt = [[50258, 50259, 50359]]
    options = dict(beam_size=1, max_length=448, return_scores=True, return_no_speech_prob=True)
    kept = stock_encoder.generate(encoded, prompt, held=handle, **options)
    sent = stock_encoder.generate(np.asarray(encoded).copy(), prompt, **options)
    expected = fork.generate(encoded, prompt, **options)
    stock_tokens = kept[0].sequences_ids[0]
    assert sent[0].sequences_ids[0] == stock_tokens and len(stock_tokens) >= 20
    assert kept[0].no_speech_prob == pytest.approx(sent[0].no_speech_prob, abs=1e-6)
    assert _similar(stock_tokens, expected[0].sequences_ids[0]) > 0.9, (stock_tokens, expected[0].sequences_ids)
    plain = PlainDecoder(fork, stock_encoder, "int8")
    assert plain.engine == "stock"
    assert plain.on(handle).generate(encoded, prompt, **options)[0].sequences_ids[0] == stock_tokens
    stock_encoder.encode(np.zeros_like(window))  # the worker keeps another output now
    stale = plain.on(handle).generate(encoded, prompt, **options)
    assert stale[0].sequences_ids[0] == stock_tokens
    assert PlainDecoder(fork, stock_encoder, "float32").engine == "fork"  # --exact's decoder


@pytest.mark.model
def test_a_batch_is_encoded_window_by_window_and_decoded_whole(stock_encoder, window):
    """A batch's rows are encoded one call each in the worker (its peak memory is one window's), so each
    row equals that window encoded alone, and ``generate`` on the kept batch decodes every row."""
    batch = np.concatenate([window, np.roll(window, 400, axis=2)])
    alone = [np.asarray(stock_encoder.encode(batch[i: i + 1])).copy() for i in range(2)]
    encoded, handle = stock_encoder.encode_held(batch)
    np.testing.assert_array_equal(np.asarray(encoded), np.concatenate(alone))
    prompts = [[50258, 50259, 50359]] * 2
    results = stock_encoder.generate(encoded, prompts, held=handle, beam_size=1, max_length=448)
    assert len(results) == 2 and all(r.sequences_ids[0] for r in results)


@pytest.mark.model
def test_language_detection_in_the_worker_matches_the_forks(stock_encoder, base_model_dir, window):
    """``detect_language`` of the plain decoder runs in the worker, on its kept output or on one sent to it,
    with the same answer both ways, and finds the fork's language with nearly its probability (two builds of
    CTranslate2: the order of the unlikely languages behind it may differ on another CPU's kernels)."""
    import ctranslate2

    fork = ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="int8", intra_threads=2)
    encoded, handle = stock_encoder.encode_held(window)
    expected = fork.detect_language(encoded)[0]
    kept = PlainDecoder(fork, stock_encoder, "int8").on(handle).detect_language(encoded)[0]
    sent = stock_encoder.detect_language(np.asarray(encoded).copy())[0]
    assert [t for t, _ in kept[:3]] == [t for t, _ in sent[:3]]
    assert kept[0][1] == pytest.approx(sent[0][1], abs=1e-6)
    assert kept[0][0] == expected[0][0] == "<|en|>" and abs(kept[0][1] - expected[0][1]) < 0.02


def test_a_refused_generate_falls_back_to_the_fork_for_that_call(caplog):
    class Refusing(StockWorker):
        def __init__(self):  # no worker: every generate is refused, as for an option stock does not take
            self.failed, self.compute_type = None, "int8"

        def generate(self, *args, **kwargs):
            raise StockWorkerError("ValueError: bad option")

        def close(self):
            pass

        detect_language = generate

    class Fork:
        def generate(self, features, prompts, **kwargs):
            return ["fork"]

        def detect_language(self, features):
            return [[("<|xx|>", 1.0)]]

    plain = PlainDecoder(Fork(), Refusing(), "int8")
    assert plain.engine == "stock"
    with caplog.at_level(logging.WARNING, logger="tokenmap"):
        assert plain.generate(None, [[1]]) == ["fork"]
        assert plain.detect_language(None) == [[("<|xx|>", 1.0)]]
    assert plain.worker.failed is None and "refused a generate call" in caplog.text
    assert "refused a detect_language call" in caplog.text
