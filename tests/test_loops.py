"""The loop stop (tokenmap.decode.loops): the rule, its cut, plain generate stopped by a short maximum
length, the drafting loop stopped on a crafted loop, and no false alarm on the committed real clips."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmap.decode import loops
from tokenmap.decode.loops import (
    LoopOptions,
    Result,
    cut_tokens,
    find_loop,
    generate_stopping,
    projected_ratio,
    steps_of,
)
from tokenmap.decode.speculative import decode_window

TS = 1000  # timestamp_begin of the synthetic tokens below; ids below it are text
IDS = SimpleNamespace(timestamp_begin=TS, eot=TS)  # their special tokens, as generate_stopping reads them
SMALL = LoopOptions(max_unit=4, min_span=8, min_repeats=3)


def brute_force(tokens, options: LoopOptions) -> int | None:
    """The number of text tokens after which the rule must fire: the first end at which the text ends with
    a unit of 1..max_unit tokens repeated back to back over >= min_span tokens and >= min_repeats units."""
    text = [t for t in tokens if t < TS]
    for end in range(1, len(text) + 1):
        for n in range(1, options.max_unit + 1):
            span = n
            while span < end and text[end - span - 1] == text[end - span - 1 + n]:
                span += 1
            if span >= options.min_span and span >= options.min_repeats * n and end > n:
                return end
    return None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 2), st.just(TS + 5)), max_size=60))
def test_rule_fires_exactly_where_the_repetition_reaches_its_length(tokens):
    expected = brute_force(tokens, SMALL)
    loop = find_loop(tokens, SMALL, TS)
    if expected is None:
        assert loop is None
        return
    assert loop is not None
    assert len([t for t in tokens[: loop.stop] if t < TS]) == expected
    kept = cut_tokens(tokens, loop, TS)
    assert tokens[: len(kept)] == kept  # a prefix of what was decoded
    # what follows the kept tokens, up to the stop, is the unit again and again
    rest = [t for t in tokens[len(kept): loop.stop] if t < TS]
    unit = list(loop.unit)
    assert len(rest) >= len(unit) and all(rest[i] == unit[i % len(unit)] for i in range(len(rest)))


@given(prefix=st.lists(st.integers(0, 500), max_size=30), unit=st.lists(st.integers(0, 500), min_size=1, max_size=16))
@settings(max_examples=200, deadline=None)
def test_a_unit_repeated_long_enough_is_stopped_within_the_rule_span(prefix, unit):
    options = LoopOptions()
    repeats = max(options.min_repeats, -(-options.min_span // len(unit))) + 2
    tokens = prefix + unit * repeats
    loop = find_loop(tokens, options, TS)
    assert loop is not None
    assert loop.stop <= len(prefix) + max(options.min_span, options.min_repeats * len(unit))
    assert len(cut_tokens(tokens, loop, TS)) <= len(prefix) + len(unit)


def test_timestamps_do_not_hide_a_loop_and_the_cut_keeps_one_closing_timestamp():
    tokens = [TS, 5, 6, TS + 50]  # <|0.00|> text <|1.00|>, then one segment again and again
    for k in range(12):
        tokens += [TS + 50 + 50 * k, 7, 8, 9, TS + 100 + 50 * k]
    loop = find_loop(tokens, LoopOptions(min_span=12, min_repeats=4), TS)
    assert loop is not None and loop.unit == (7, 8, 9)
    assert cut_tokens(tokens, loop, TS) == [TS, 5, 6, TS + 50, TS + 50, 7, 8, 9, TS + 100]


def test_legit_repetition_is_not_a_loop():
    options = LoopOptions()
    no_no_no = [3, 4, 3, 4, 3, 4, 3, 4, 5, 6]  # "no, no, no, no."
    digits = [11, 12, 13, 11, 12, 13, 14, 15, 16, 17, 11, 12, 13] * 2  # a number said twice
    menu = list(range(100, 130)) * 2  # an IVR menu of 30 tokens said twice: two units, not four
    for tokens in (no_no_no, digits, menu):
        assert find_loop(tokens, options, TS) is None


def test_projected_ratio_is_the_loops():
    text = lambda ids: " ".join(f"w{t}" for t in ids)  # noqa: E731
    tokens = [1, 2, 3] + [4, 5] * 20
    loop = find_loop(tokens, LoopOptions(), TS)
    kept = cut_tokens(tokens, loop, TS)
    assert kept == [1, 2, 3, 4, 5]
    assert loops.compression_ratio(text(kept)) < 2.4 < projected_ratio(kept, loop, 200, text)


def test_faster_whisper_sees_a_stopped_decodes_ratio_once_within_a_tokenmap_call():
    import faster_whisper.transcribe as fw

    from tokenmap import hooks
    from tokenmap.windows import Session

    results = [loops.Result([[5]], [0.0], ratio=38.4), loops.Result([[6]], [0.0])]
    call = Session(ratios=loops.stopped_ratios(results, lambda ids: " Thank you." if ids == [5] else "a"))
    assert call.ratios == {"Thank you.": 38.4}  # only the stopped result's text
    with hooks.within(call):
        assert fw.get_compression_ratio("Thank you.") == 38.4
        assert fw.get_compression_ratio("Thank you.") < 2.4  # answered once
    call.ratios["a"] = 9.0
    assert fw.get_compression_ratio("a") < 2.4  # outside a tokenmap call: faster-whisper's own


class ScriptedGenerate:
    """A ``generate`` whose rows (ids in the features' rows; None: 0, 1, ...) decode scripted token lists (one a
    hypothesis; EOT at the end of a ``finished`` one), cut at the steps ``max_length`` leaves a prompt of
    ``prompt_length``, a decoding prefix counted as decoded, as CTranslate2 counts it. Hypothesis ``h`` has a
    log-probability of -0.1 (h + 1) a token; scores are CTranslate2's (the new tokens' over all tokens)."""

    def __init__(self, scripts, finished, prompt_length=3):
        self.scripts, self.finished, self.prompt_length = scripts, finished, prompt_length
        self.calls, self.prompts = [], []

    def __call__(self, features, prompts, max_length=448, num_hypotheses=1, **kwargs):
        self.calls.append(max_length)
        self.prompts.append([list(p) for p in prompts])
        rows = range(len(prompts)) if features is None else [int(f[0]) for f in np.asarray(features)]
        out = []
        for prompt, row in zip(prompts, rows):
            script = self.scripts[row] if isinstance(self.scripts[row][0], list) else [self.scripts[row]]
            prefix = list(prompt[self.prompt_length:])
            steps = steps_of(max_length, self.prompt_length)
            chosen = [h for h, s in enumerate(script) if s[: len(prefix)] == prefix][:num_hypotheses]
            tokens = [script[h][:steps] for h in chosen]
            scores = [-0.1 * (h + 1) * (len(t) - len(prefix)) / max(len(t), 1) for h, t in zip(chosen, tokens)]
            out.append(Result(tokens, scores, 0.2))
        return out


def test_plain_generate_is_stopped_by_a_short_maximum_length():
    prompt = [1, 2, 3]
    looping = [TS] + [40, 41, 42] * 200  # never ends
    long_legit = list(range(100, 300))  # 200 tokens, then EOT: longer than the first cap
    short = [TS, 5, 6, TS + 10]
    gen = ScriptedGenerate([looping, long_legit, short], [False, True, True])
    results, report = generate_stopping(gen, np.arange(3)[:, None], [prompt] * 3, LoopOptions(), IDS, seconds=2.0,
                                        beam_size=1)
    assert results[0].sequences_ids[0] == [TS, 40, 41, 42] and results[0].loop.unit == (40, 41, 42)
    assert loops.decoded_tokens(results[0]) == looping[: results[0].loop.stop]  # what the guards judge
    assert loops.decoded_tokens(results[2]) == short
    assert results[1].sequences_ids[0] == long_legit  # decoded again with more steps: the uncapped tokens
    assert results[2].sequences_ids[0] == short
    assert report.loops == 1 and [r for r, _, _ in report.stopped_rows] == [0]
    first = gen.calls[0]
    assert steps_of(first, 3) == LoopOptions().cap_tokens + 2 * LoopOptions().cap_rate
    assert gen.calls[-1] == 448 and len(gen.calls) >= 2
    assert all(p == [prompt] for p in gen.prompts[1:])  # only the long row, greedy: decoded again from its start


def test_sampled_hypotheses_go_on_from_where_they_were_capped():
    """The fallback's five sampled hypotheses: a loop is cut at the first cap, short ones are kept, and only a
    long one goes on, from its own tokens as a decoding prefix, its score covering both calls."""
    prompt = [1, 2, 3]
    looping = [TS] + [40, 41, 42] * 200
    long_legit = list(range(100, 300))
    shorts = [[TS, 5, 6, TS + 10], [TS, 7, TS + 10], [TS, 8, TS + 10]]
    gen = ScriptedGenerate([[looping, long_legit] + shorts], None)
    results, report = generate_stopping(gen, None, [prompt], LoopOptions(), IDS, seconds=2.0, beam_size=1,
                                        num_hypotheses=5, sampling_topk=0, sampling_temperature=0.2)
    first = steps_of(gen.calls[0], 3)
    assert [p[0][3:] for p in gen.prompts[1:]] == [long_legit[:first], long_legit[:2 * first]]
    result = results[0]
    assert result.sequences_ids[0] == [TS, 40, 41, 42] and result.sequences_ids[1] == long_legit
    assert result.sequences_ids[2:] == shorts
    assert result.scores == pytest.approx([-0.1, -0.2, -0.3, -0.4, -0.5])  # ordered by score, as CTranslate2 does
    assert report.loops == 1 and report.calls == 3 and result.loop.unit == (40, 41, 42)


def test_a_long_previous_text_keeps_the_first_call_its_steps():
    """A short window after a long previous text (the tail of a long file): the first call's ``max_length``
    leaves the steps the audio needs after the prompt (CTranslate2 refuses a length the prompt fills)."""
    prompt = list(range(1, 200))
    looping = [TS] + [40, 41, 42] * 200
    gen = ScriptedGenerate([looping], [False], prompt_length=len(prompt))
    results, report = generate_stopping(gen, None, [prompt], LoopOptions(), IDS, seconds=0.3)
    first = gen.calls[0]
    assert steps_of(first, len(prompt)) >= LoopOptions().cap_tokens and first < 448
    assert results[0].sequences_ids[0] == [TS, 40, 41, 42] and len(gen.calls) == 1


def test_plain_generate_without_a_loop_is_one_call():
    gen = ScriptedGenerate([[TS, 5, 6, TS + 10]], [True])
    results, report = generate_stopping(gen, None, [[1, 2, 3]], LoopOptions(), IDS, seconds=2.0)
    assert report.calls == 1 and report.loops == 0 and results[0].sequences_ids[0] == [TS, 5, 6, TS + 10]


def test_a_stopping_decoder_counts_carries_the_ratio_and_leaves_other_calls_alone():
    from tokenmap.decode.speculative import DecodeStats

    special = type("S", (), {"timestamp_begin": TS, "eot": TS - 1, "prompt_length": staticmethod(len)})()
    text = lambda ids: " ".join(f"w{t}" for t in ids if t < TS - 1)  # noqa: E731
    looping = [TS] + [40, 41, 42] * 200
    plain = type("P", (), {})()
    plain.generate = ScriptedGenerate([looping], [False])
    stats = DecodeStats()
    decoder = loops.StoppingDecoder(plain, LoopOptions(), special, text, seconds=1.0, stats=stats)
    result = decoder.generate(None, [[1, 2, 3]], beam_size=1)[0]
    assert result.sequences_ids[0] == [TS, 40, 41, 42] and stats.loops_stopped == 1
    assert result.ratio > 2.4 and loops.compression_ratio(text(result.sequences_ids[0])) < 2.4  # the loop's ratio
    beam = decoder.generate(None, [[1, 2, 3]], beam_size=5)[0]  # beam search: not stopped
    assert len(beam.sequences_ids[0]) == steps_of(448, 3) and stats.loops_stopped == 1
    assert loops.stopped_ratios([beam], text) == {}
    off = loops.StoppingDecoder(plain, None, special, text, seconds=1.0, stats=stats)
    assert len(off.generate(None, [[1, 2, 3]], beam_size=1)[0].sequences_ids[0]) == steps_of(448, 3)


# -- on the model ------------------------------------------------------------------------------------

KW = dict(beam_size=1, max_length=448, return_scores=True, return_no_speech_prob=True,
          suppress_blank=True, suppress_tokens=[-1], max_initial_timestamp_index=50)


@pytest.fixture(scope="module")
def engine(base_model_dir):
    import ctranslate2

    return ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="int8", intra_threads=2)


@pytest.fixture(scope="module")
def special(base_model_dir):
    from tokenmap.decode.special import SpecialTokens

    return SpecialTokens.from_model_dir(str(base_model_dir))


@pytest.fixture(scope="module")
def vocab(base_model_dir):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(base_model_dir / "tokenizer.json"))


def encode_samples(engine, samples):
    import ctranslate2
    from faster_whisper.feature_extractor import FeatureExtractor

    features = FeatureExtractor()(samples)[:, :3000]
    features = np.pad(features, ((0, 0), (0, 3000 - features.shape[1])))
    return engine.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None], dtype=np.float32)))


def window_prompt(vocab, special, previous: str) -> list[int]:
    history = vocab.encode(previous, add_special_tokens=False).ids
    return ([vocab.token_to_id("<|startofprev|>")] + history
            + [special.sot, vocab.token_to_id("<|en|>"), vocab.token_to_id("<|transcribe|>")])


@pytest.fixture(scope="module")
def crafted_loop(engine, special, vocab, first_looping):
    """``(encoder output, prompt, plain generate's tokens, its loop)`` of the first crafted window that base
    decodes to the maximum length here, repeating from early on (the rule fires within the first cap)."""
    found = {}

    def loops(previous, samples):
        enc, prompt = encode_samples(engine, samples), window_prompt(vocab, special, previous)
        tokens = engine.generate(enc, [prompt], **KW)[0].sequences_ids[0]
        loop = find_loop(tokens, LoopOptions(), special.timestamp_begin, special.eot)
        found.update(enc=enc, prompt=prompt, tokens=tokens, loop=loop)
        return len(tokens) == steps_of(448, len(prompt)) and loop is not None and loop.stop <= LoopOptions().cap_tokens

    first_looping(loops)
    return found["enc"], found["prompt"], found["tokens"], found["loop"]


class NoDrafts:
    def reset(self, history=()):
        pass

    def draft(self, tokens, limit):
        return []

    def update(self, drafted, accepted):
        pass


class RepeatDrafter(NoDrafts):
    """Drafts the model's loop ahead (``unit`` again and again): the stop must land inside a pass."""

    def __init__(self, unit):
        self.unit = list(unit)

    def draft(self, tokens, limit):
        return (self.unit * 8)[:limit]


@pytest.mark.model
def test_the_drafting_loop_stops_a_crafted_loop(engine, special, crafted_loop):
    enc, prompt, full, loop = crafted_loop
    for drafter in (NoDrafts(), RepeatDrafter(loop.unit)):
        result = decode_window(engine, enc, prompt, special, drafter, loop=LoopOptions(), **KW)
        assert result.loop is not None and result.stats.loops_stopped == 1
        assert result.stats.tokens < steps_of(448, len(prompt)) / 4  # stopped as it started, not at the maximum
        assert result.tokens == cut_tokens(full, loop, special.timestamp_begin)  # the text before the repetition
        assert not result.finished
        decoded = loops.decoded_tokens(loops.window_as_result(result))
        assert decoded[: result.loop.stop] == full[: result.loop.stop]  # the loop as it was decoded
    short = dict(KW, max_length=60)
    off = decode_window(engine, enc, prompt, special, NoDrafts(), loop=None, **short)
    assert off.loop is None and off.tokens == engine.generate(enc, [prompt], **short)[0].sequences_ids[0]


@pytest.mark.model
def test_plain_generate_stops_the_crafted_loop_in_one_short_call(engine, special, crafted_loop):
    enc, prompt, full, loop = crafted_loop
    calls = []

    def generate(features, prompts, **kwargs):
        calls.append(kwargs["max_length"])
        return engine.generate(features, prompts, **kwargs)

    results, report = generate_stopping(generate, enc, [prompt], LoopOptions(), special, 2.0, **KW)
    assert results[0].sequences_ids[0] == cut_tokens(full, loop, special.timestamp_begin)
    assert report.loops == 1 and len(calls) == 1 and steps_of(calls[0], len(prompt)) < 100


@pytest.mark.model
def test_no_false_alarm_on_the_committed_real_clips(engine, special, data_dir, vocab):
    """Every real clip in tests/data, greedy with and without timestamps: the rule never fires, the stopping
    ``generate`` returns plain ``generate``'s tokens, and the drafting loop's output is the same with the rule on
    as off (the golden test, ``tests/test_speculative.py``, runs with it off: its default)."""
    from tokenmap.audio import load_audio
    from tokenmap.decode.drafters import FixedDrafter

    clips = sorted(data_dir.glob("*.flac"))
    assert len(clips) >= 8
    for clip in clips:
        samples = load_audio(str(clip))
        enc = encode_samples(engine, samples)
        start = [special.sot, vocab.token_to_id(f"<|{clip.name[:2]}|>"), vocab.token_to_id("<|transcribe|>")]
        for prompt in (start, start + [special.no_timestamps]):
            tokens = list(engine.generate(enc, [prompt], **KW)[0].sequences_ids[0])
            assert 0 < len(tokens) < 100
            assert find_loop(tokens, LoopOptions(), special.timestamp_begin, special.eot) is None, clip.name
            stopped, report = generate_stopping(engine.generate, enc, [prompt], LoopOptions(),
                                                special, len(samples) / 16000, **KW)
            assert list(stopped[0].sequences_ids[0]) == tokens and report.loops == 0
            oracle = FixedDrafter(tokens + [special.eot])
            drafted = [decode_window(engine, enc, prompt, special, oracle, loop=loop, **KW)
                       for loop in (None, LoopOptions())]
            assert drafted[1].loop is None and drafted[1].tokens == drafted[0].tokens, clip.name
            assert drafted[1].score == drafted[0].score


@pytest.mark.model
def test_a_sampled_hypothesis_continued_from_its_prefix_is_the_uncapped_one(engine, special, data_dir, vocab):
    """On CTranslate2: a hypothesis capped after 4 steps goes on from its tokens as a decoding prefix, twice. At a
    temperature near 0 sampling is greedy, so the tokens must be the uncapped greedy call's."""
    from tokenmap.audio import load_audio

    enc = encode_samples(engine, load_audio(str(data_dir / "en-conf-getpin.flac")))
    prompt = [special.sot, vocab.token_to_id("<|en|>"), vocab.token_to_id("<|transcribe|>")]
    greedy = engine.generate(enc, [prompt], **KW)[0].sequences_ids[0]
    prompts = []

    def generate(features, batch, **kwargs):
        prompts.append(batch[0])
        return engine.generate(features, batch, **kwargs)

    sampled = dict(KW, num_hypotheses=2, sampling_topk=0, sampling_temperature=1e-4)
    results, report = generate_stopping(generate, enc, [prompt], LoopOptions(cap_tokens=4, cap_rate=0),
                                        special, 1.0, **sampled)
    assert results[0].sequences_ids == [greedy, greedy] and len(greedy) > 8
    assert prompts[1] == prompt + greedy[:4] and prompts[2] == prompt + greedy[:8] and report.loops == 0


def test_sampled_hypotheses_go_on_token_by_token_where_they_can():
    """With a ``resume`` (the fork's step API), a sampled call's first cap is ``sampled_share`` of the greedy one;
    a capped hypothesis goes on there alone, its loop cut where the rule fired, its score covering both parts;
    no second ``generate``."""
    prompt = [1, 2, 3]
    shorts = [[TS, 5, 6, TS + 10], [TS, 7, TS + 10], [TS, 8, TS + 10]]
    gen = ScriptedGenerate([[list(range(100, 300)), list(range(300, 500))] + shorts], None)
    resumed = []

    def resume(features, prompt_, prefix, max_length, kwargs):
        resumed.append((list(prefix), max_length, kwargs["sampling_temperature"]))
        if prefix[0] == 100:  # goes on into a loop the rule finds at once
            tokens = list(prefix) + [7, 8] * 20
            return tokens, -1.0 * (len(tokens) - len(prefix)), find_loop(tokens, LoopOptions(), TS)
        return list(prefix) + [9], -0.5, None

    options = LoopOptions()
    results, report = generate_stopping(gen, None, [prompt], options, IDS, seconds=2.0, resume=resume, beam_size=1,
                                        num_hypotheses=5, sampling_topk=0, sampling_temperature=0.4)
    assert steps_of(gen.calls[0], 3) == int((options.cap_tokens + 2.0 * options.cap_rate) * options.sampled_share)
    capped = steps_of(gen.calls[0], 3)
    assert len(gen.calls) == 1 and [r[0] for r in resumed] == [list(range(100, 100 + capped)),
                                                               list(range(300, 300 + capped))]
    result = results[0]
    longer = list(range(300, 300 + capped)) + [9]
    assert result.sequences_ids[0] == longer and result.scores[0] == pytest.approx((-0.2 * capped - 0.5) / len(longer))
    cut = list(range(100, 100 + capped)) + [7, 8]  # up to the repetition's second unit
    assert cut in result.sequences_ids and report.loops == 1 and result.scores == sorted(result.scores, reverse=True)


@pytest.fixture(scope="module")
def engine32(base_model_dir):
    import ctranslate2

    return ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="float32", intra_threads=2)


@pytest.mark.model
def test_sample_decode_near_temperature_0_is_greedy_and_scores_as_ctranslate2(engine32, special, data_dir, vocab):
    """Sampling near temperature 0 is greedy: from no prefix and from the greedy hypothesis' first tokens (in one
    pass, float32: batched logits equal step logits), ``sample_decode`` writes the greedy tokens, and its log-
    probability is CTranslate2's score times the length (length penalty 1, EOT counted)."""
    from tokenmap.audio import load_audio
    from tokenmap.decode.rules import sample_decode

    enc = encode_samples(engine32, load_audio(str(data_dir / "en-conf-getpin.flac")))
    prompt = [special.sot, vocab.token_to_id("<|en|>"), vocab.token_to_id("<|transcribe|>")]
    greedy = engine32.generate(enc, [prompt], **KW)[0]
    tokens, score = greedy.sequences_ids[0], greedy.scores[0]
    sampled = dict(KW, num_hypotheses=5, sampling_topk=0, sampling_temperature=1e-4)
    whole = sample_decode(engine32, enc, prompt, [], special, **sampled)
    assert whole.tokens == tokens and whole.finished
    assert whole.score == pytest.approx(score * len(tokens), abs=1e-3)
    rest = sample_decode(engine32, enc, prompt, tokens[:5], special, **sampled)
    assert rest.tokens == tokens and -whole.score > -rest.score


@pytest.mark.model
def test_a_sampled_loop_on_the_fork_stops_at_the_token_the_rule_fires(engine, special, crafted_loop, vocab):
    """The crafted loop sampled near temperature 0, capped after 4 steps: it goes on on the fork's step API and
    stops at the token where the rule fires, not at a cap."""
    enc, prompt, _, _ = crafted_loop
    stopper = loops.StoppingDecoder(engine, LoopOptions(cap_tokens=8, cap_rate=0), special, vocab.decode,
                                    stepper=engine)
    sampled = dict(KW, num_hypotheses=1, sampling_topk=0, sampling_temperature=1e-4)
    results, report = generate_stopping(engine.generate, enc, [prompt], stopper.loop, special, None,
                                        stopper.resume, **sampled)
    result = results[0]
    assert report.loops == 1 and report.calls == 2 and result.loop is not None
    assert find_loop(result.decoded, stopper.loop, special.timestamp_begin, special.eot) == result.loop
    assert len(result.decoded) == result.loop.stop < 100
