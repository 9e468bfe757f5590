"""Tests of tokenmap.decode.rules (synthetic logits) and tokenmap.decode.rules (real model)."""

import os

import numpy as np
import pytest

from tokenmap.decode import ct2math
from tokenmap.decode.rules import (
    DISABLED,
    RuleSet,
    SuppressBlank,
    SuppressTokens,
    TimestampRules,
    supports_fast_path,
)
from tokenmap.decode.special import SpecialTokens

# Toy vocabulary: text 0..9, EOT 10, SOT 11, transcribe 12, nospeech 13,
# notimestamps 14, timestamps 15..19.
TOY = SpecialTokens(sot=11, eot=10, no_timestamps=14, no_speech=13, vocab_size=20,
                    suppress_ids=(3, 4), suppress_ids_begin=(0, 10))
TS = TimestampRules(eot=10, no_timestamps=14, timestamp_begin=15, timestamp_end=19,
                    max_initial_timestamp_id=16)


def flat(value=0.0):
    return np.full(20, value, dtype=np.float32)


def disabled(logits):
    return set(np.flatnonzero(logits == DISABLED).tolist())


def test_suppress_tokens_every_step():
    for tokens in ([], [1, 2]):
        x = flat()
        SuppressTokens((3, 4)).apply(x, tokens)
        assert disabled(x) == {3, 4}


def test_suppress_blank_only_first_step():
    x = flat()
    SuppressBlank((0, 10)).apply(x, [])
    assert disabled(x) == {0, 10}
    y = flat()
    SuppressBlank((0, 10)).apply(y, [5])
    assert disabled(y) == set()


def test_timestamps_first_step_and_max_initial():
    x = flat()
    TS.apply(x, [])
    assert disabled(x) == set(range(0, 15)) | {17, 18, 19}


def test_timestamps_closed_pair_forbids_timestamps():
    for tokens in ([15, 3, 16, 16], [16]):  # a lone first timestamp counts as a pair
        x = flat()
        TS.apply(x, tokens)
        assert disabled(x) == {14, 15, 16, 17, 18, 19}


def test_timestamp_after_text_forbids_text_and_earlier_timestamps():
    x = flat()
    x[10] = 10.0  # EOT likely: no forcing
    TS.apply(x, [15, 3, 17])
    assert disabled(x) == set(range(0, 10)) | {14, 15, 16}
    assert x[10] != DISABLED and x[17] != DISABLED  # EOT and same timestamp allowed
    y = flat()
    y[17] = 5.0  # timestamps likely: forced, EOT disabled too
    TS.apply(y, [15, 3, 17])
    assert disabled(y) == set(range(0, 15)) | {15, 16}


def test_timestamps_monotonic_after_text():
    x = flat()
    x[5] = 10.0  # a strong text token: no forcing
    TS.apply(x, [15, 3, 17, 17, 4])
    assert disabled(x) == {14, 15, 16, 17}


def test_force_timestamp_when_mass_exceeds_max_text():
    x = flat()
    x[18], x[19] = 2.0, 2.0
    x[5] = 2.5  # log(2 + 2 e^2) = 2.82 > 2.5
    TS.apply(x, [15, 5])
    assert disabled(x) == set(range(0, 15)) | {15}
    y = flat()
    y[18], y[19] = 2.0, 2.0
    y[5] = 3.0  # > log(2 + 2 e^2) = 2.82 (timestamps 16, 17 at 0)
    TS.apply(y, [15, 5])
    assert disabled(y) == {14, 15}


def test_log_softmax_and_sum_order():
    rng = np.random.default_rng(0)
    x = rng.normal(size=51865).astype(np.float32) * 4
    exact = x.astype(np.float64) - np.log(np.exp(x.astype(np.float64)).sum())
    assert np.allclose(ct2math.log_softmax(x), exact, atol=1e-4)
    v = rng.random(1003).astype(np.float32)
    lanes = np.zeros(8, np.float32)
    for i in range(0, 1000, 8):
        lanes = lanes + v[i:i + 8]
    acc = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]))
    for t in v[1000:]:
        acc = np.float32(acc + t)
    if ct2math.LANES == 8:
        assert ct2math._sum_rows(v[None])[0] == acc
    assert ct2math.softmax(x).sum() == pytest.approx(1.0, abs=1e-4)
    assert np.isfinite(ct2math.logsumexp(np.full(5, DISABLED)))


def test_ruleset_from_generate_kwargs():
    rs = RuleSet.from_generate_kwargs(TOY, [11, 12], suppress_tokens=[-1, 7], max_length=448)
    kinds = [type(r) for r in rs.rules]
    assert kinds == [SuppressTokens, SuppressBlank, TimestampRules]
    assert rs.rules[0].ids == (3, 4, 7)
    assert rs.max_steps == 224 and rs.no_speech_at_sot
    rs = RuleSet.from_generate_kwargs(TOY, [5, 11, 12, 14], suppress_blank=False,
                                      suppress_tokens=[], max_length=10)
    assert rs.rules == () and not rs.with_timestamps
    assert rs.max_steps == 5 and rs.sot_index == 1
    rs = RuleSet.from_generate_kwargs(TOY, [5, 6, 11], max_length=6)
    assert rs.max_steps == 3 and not rs.no_speech_at_sot
    with pytest.raises(ValueError):
        RuleSet.from_generate_kwargs(TOY, [11, 12, 5])  # decoding prefix


def test_choose_and_final_score():
    rs = RuleSet.from_generate_kwargs(TOY, [11, 12, 14], length_penalty=0.5)
    x = flat()
    x[10], x[6] = 9.0, 5.0  # EOT suppressed at step 0 (suppress_blank)
    token, logprob = rs.choose(x, [])
    assert token == 6 and logprob < 0
    assert rs.final_score(-2.0, 4) == pytest.approx(-1.0)
    assert rs.no_speech_prob(flat()) == pytest.approx(1 / 20)


def test_supports_fast_path():
    assert supports_fast_path(beam_size=1, length_penalty=1, suppress_blank=True)
    assert not supports_fast_path()  # generate's default beam_size is 5
    assert not supports_fast_path(beam_size=1, repetition_penalty=1.1)
    assert not supports_fast_path(beam_size=1, no_repeat_ngram_size=2)
    assert not supports_fast_path(beam_size=1, sampling_topk=0, sampling_temperature=0.4)
    assert supports_fast_path(beam_size=1, sampling_topk=0, sampling_temperature=0)
    assert not supports_fast_path(beam_size=1, num_hypotheses=2)
    assert not supports_fast_path(prompt=[11, 12, 5], special=TOY, beam_size=1)


# ---------------------------------------------------------------- real model

BASE_SOT = [50258, 50259, 50359]  # <|startoftranscript|><|en|><|transcribe|>
NO_TS = 50363
PREV = [50361, 2555, 7406, 264]  # <|startofprev|> + " Please replace the"

SPEECH = ["en-agent-pass.flac", "en-basic-pbx-ivr-main.flac"]  # committed fixtures (tests/data)


def _fixture_audio():
    from faster_whisper import decode_audio

    data = os.path.join(os.path.dirname(__file__), "data")
    return [decode_audio(os.path.join(data, name)) for name in SPEECH]


def _encode(model, audio):
    import ctranslate2
    from faster_whisper.feature_extractor import FeatureExtractor

    features = FeatureExtractor(feature_size=model.n_mels)(audio)[:, :3000]
    features = np.pad(features, ((0, 0), (0, 3000 - features.shape[1])))
    view = ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None]))
    return model.encode(view, to_cpu=True)


def _load(model_dir, tmp_path_factory, compute_type="float32"):
    from tokenmap.runtime.engine import require_step_api

    ctranslate2 = require_step_api()
    model_dir = str(model_dir)
    model = ctranslate2.models.Whisper(model_dir, device="cpu", compute_type=compute_type,
                                       intra_threads=2)
    audios = _fixture_audio()
    return model, SpecialTokens.from_model_dir(model_dir), [_encode(model, a) for a in audios]


@pytest.fixture(scope="module")
def base_setup(base_model_dir, tmp_path_factory):
    return _load(base_model_dir, tmp_path_factory)


FW_SUPPRESS = "fw"  # faster-whisper's own -1 expansion (explicit ids)

CASES = {
    "timestamps": (BASE_SOT, {}),
    "no_timestamps": (BASE_SOT + [NO_TS], {}),
    "prev_text_ts": (PREV + BASE_SOT, {}),
    "prev_text_no_ts_no_blank": (PREV + BASE_SOT + [NO_TS], {"suppress_blank": False}),
    "max_initial_0": (BASE_SOT, {"max_initial_timestamp_index": 0}),
    "max_length_truncates": (BASE_SOT, {"max_length": 14}),
    "length_penalty_no_suppress": (BASE_SOT + [NO_TS], {"length_penalty": 0.6,
                                                        "suppress_tokens": []}),
    "fw_suppress_tokens": (BASE_SOT, {"suppress_tokens": FW_SUPPRESS}),
    "sot_only": ([50258], {"max_length": 60}),
    "prev_then_sot": (PREV + [50258], {"max_length": 40}),
}


def _fw_suppress(model_dir):
    import tokenizers
    from faster_whisper.tokenizer import Tokenizer
    from faster_whisper.transcribe import get_suppressed_tokens

    hf = tokenizers.Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    return list(get_suppressed_tokens(Tokenizer(hf, True, task="transcribe", language="en"),
                                      [-1]))


@pytest.mark.model
@pytest.mark.parametrize("case", sorted(CASES))
def test_reference_matches_generate(base_setup, base_model_dir, case):
    from tokenmap.decode.rules import greedy_decode

    model, special, encoded = base_setup
    prompt, extra = CASES[case]
    kwargs = dict(length_penalty=1, repetition_penalty=1, no_repeat_ngram_size=0,
                  max_length=448, suppress_blank=True, suppress_tokens=[-1],
                  max_initial_timestamp_index=50)
    kwargs.update(extra)
    if kwargs["suppress_tokens"] == FW_SUPPRESS:
        kwargs["suppress_tokens"] = _fw_suppress(base_model_dir)
    both = case in ("timestamps", "no_timestamps")  # keep the runtime small
    for enc in encoded if both else encoded[:1]:
        want = model.generate(enc, [prompt], beam_size=1, return_scores=True,
                              return_no_speech_prob=True, **kwargs)[0]
        got = greedy_decode(model, enc, prompt, special, return_scores=True,
                            return_no_speech_prob=True, **kwargs)
        assert got.tokens == want.sequences_ids[0]
        assert got.score == pytest.approx(want.scores[0], abs=1e-4)
        assert got.no_speech_prob == pytest.approx(want.no_speech_prob, abs=1e-5)
    if case == "max_length_truncates":
        assert not got.finished and len(got.tokens) == 7


@pytest.mark.model
def test_reference_matches_generate_tiny_en(tmp_path_factory):
    from tokenmap.decode.rules import greedy_decode
    from tokenmap.models import resolve_model

    model, special, encoded = _load(resolve_model("tiny.en", download=False), tmp_path_factory)
    for prompt in ([50257], [50257, 50362]):  # <|startoftranscript|> (+ <|notimestamps|>)
        for enc in encoded:
            want = model.generate(enc, [prompt], beam_size=1, return_scores=True,
                                  return_no_speech_prob=True)[0]
            got = greedy_decode(model, enc, prompt, special, return_no_speech_prob=True)
            assert got.tokens == want.sequences_ids[0]
            assert got.score == pytest.approx(want.scores[0], abs=1e-4)
            assert got.no_speech_prob == pytest.approx(want.no_speech_prob, abs=1e-5)
