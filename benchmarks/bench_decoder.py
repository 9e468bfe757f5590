"""Decoder micro-benchmarks (pytest-benchmark): one step, one verify pass, the rules on one row.

    .venv/bin/python -m pytest benchmarks/bench_decoder.py --benchmark-enable -q

Whisper base on the engine fork, CPU, ``int8``, 2 threads (as ``tokenmap
bench``); the encoder output is a real 30 s window (a committed asterisk
prompt, padded) and the prompt is ``<|startoftranscript|><|en|><|transcribe|>``
with timestamps.  Every call restores the decoder state with
``truncate_to_step``, so each round measures the same position.

* ``test_step``: ``forward_step`` of one token, logits ``[1, V]`` to numpy;
* ``test_verify_pass[T]``: what :func:`tokenmap.decode.speculative.decode_window`
  does per draft: one ``forward_batch`` of the fed token and ``T - 1`` drafted
  tokens (the model's own greedy tokens), logits ``[T, V]`` to numpy, and
  :meth:`tokenmap.decode.rules.RuleSet.choose` on every row;
* ``test_rules_row``: the rules (suppression, timestamp rules, log-softmax)
  on one ``[V]`` row.

A draft pays when ``verify_pass(T)`` costs less than the steps it saves, so
compare ``verify_pass[T]`` with ``(accepted + 1) * step``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tokenmap import resolve_model

ROOT = Path(__file__).resolve().parents[1]

MODEL = resolve_model("base", download=False)  # assembled by `make`
AUDIO = ROOT / "tests" / "data" / "en-basic-pbx-ivr-main.flac"
THREADS = 2


@pytest.fixture(scope="module")
def setup():
    """``(model, state, base step, greedy tokens, rules, special)`` at the first decoding position."""
    import ctranslate2
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor

    from tokenmap.decode.rules import RuleSet
    from tokenmap.decode.special import SpecialTokens
    from tokenmap.runtime.engine import require_step_api

    require_step_api()
    model = ctranslate2.models.Whisper(str(MODEL), device="cpu", compute_type="int8", intra_threads=THREADS)
    feats = FeatureExtractor(feature_size=model.n_mels)(decode_audio(str(AUDIO)))[:, :3000]
    feats = np.pad(feats, ((0, 0), (0, 3000 - feats.shape[1])))[None].astype(np.float32)
    enc = model.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(feats)))
    special = SpecialTokens.from_model_dir(str(MODEL))
    vocab = (MODEL / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    prompt = [special.sot, vocab.index("<|en|>"), vocab.index("<|transcribe|>")]
    greedy = model.generate(enc, [prompt], beam_size=1)[0].sequences_ids[0]
    assert len(greedy) >= 9, greedy
    rules = RuleSet.from_generate_kwargs(special, prompt)
    state, _ = model.prefill(enc, prompt[:-1])
    return model, state, state.current_step, [prompt[-1]] + greedy, rules, special


def _rows(logits) -> np.ndarray:
    arr = np.asarray(logits)
    return np.array(arr.reshape(-1, arr.shape[-1]), dtype=np.float32)


def test_step(benchmark, setup):
    model, state, base, toks, _, _ = setup

    def step():
        row = _rows(model.forward_step(state, toks[0]))
        state.truncate_to_step(base)
        return row

    assert benchmark(step).shape[0] == 1


@pytest.mark.parametrize("size", [2, 5, 9])
def test_verify_pass(benchmark, setup, size):
    model, state, base, toks, rules, _ = setup

    def verify():
        rows = _rows(model.forward_batch(state, toks[:size]))
        chosen = [rules.choose(row, toks[1:1 + i])[0] for i, row in enumerate(rows)]
        state.truncate_to_step(base)
        return chosen

    chosen = benchmark(verify)
    assert len(chosen) == size and chosen[0] == toks[1]  # the first row decides the model's own first token


def test_rules_row(benchmark, setup):
    model, state, base, toks, rules, _ = setup
    row = _rows(model.forward_step(state, toks[0]))[0]
    state.truncate_to_step(base)
    token, _ = benchmark(lambda: rules.choose(row.copy(), []))
    assert token == toks[1]
