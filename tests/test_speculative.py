"""The key golden test: speculative output equals step-wise greedy output.

At float32 the fork's batched logits equal its step logits to ~1e-5, so any
draft, however wrong, must leave tokens, score and no_speech_prob unchanged.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenmap.decode.control import AcceptanceController, ControlledDrafter
from tokenmap.decode.drafters import FixedDrafter
from tokenmap.decode.rules import greedy_decode
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import decode_window

pytestmark = pytest.mark.model

KW = dict(beam_size=1, max_length=448, return_scores=True, return_no_speech_prob=True,
          suppress_blank=True, suppress_tokens=[-1], max_initial_timestamp_index=50)


@pytest.fixture(scope="module")
def engine(base_model_dir):
    import ctranslate2

    return ctranslate2.models.Whisper(str(base_model_dir), device="cpu", compute_type="float32", intra_threads=2)


@pytest.fixture(scope="module")
def special(base_model_dir):
    return SpecialTokens.from_model_dir(str(base_model_dir))


@pytest.fixture(scope="module")
def windows(engine, special, data_dir, tokenizer_ids, encode):
    """(encoder output, prompt) pairs: with and without timestamps, with previous text."""
    en, transcribe = tokenizer_ids["<|en|>"], tokenizer_ids["<|transcribe|>"]
    prev = [tokenizer_ids["<|startofprev|>"], 2555, 291, 337]  # "<|startofprev|> Thank you for"
    out = []
    for name in ("en-agent-pass.flac", "en-basic-pbx-ivr-main.flac"):
        enc = encode(engine, data_dir / name)
        out.append((enc, [special.sot, en, transcribe, special.no_timestamps]))
        out.append((enc, [special.sot, en, transcribe]))
    out.append((out[0][0], prev + [special.sot, en, transcribe]))
    return out


@pytest.fixture(scope="module")
def tokenizer_ids(base_model_dir):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(base_model_dir / "tokenizer.json")).get_vocab(with_added_tokens=True)


@pytest.fixture(scope="module")
def references(engine, special, windows):
    return [greedy_decode(engine, enc, prompt, special, **KW) for enc, prompt in windows]


def assert_same(result, ref):
    assert result.tokens == ref.tokens
    assert result.score == pytest.approx(ref.score, abs=2e-4)
    assert result.no_speech_prob == pytest.approx(ref.no_speech_prob, abs=1e-5)


def test_reference_is_long_enough(references):
    assert min(len(r.tokens) for r in references) >= 10
    assert max(len(r.tokens) for r in references) >= 60


@pytest.mark.parametrize("which", range(5))
def test_oracle_and_empty_drafts(engine, special, windows, references, which):
    enc, prompt = windows[which]
    ref = references[which]
    oracle = decode_window(engine, enc, prompt, special, FixedDrafter(ref.tokens + [special.eot]), **KW)
    assert_same(oracle, ref)
    assert oracle.stats.accepted >= len(ref.tokens) - 2  # nearly the whole output in few passes
    assert oracle.stats.passes <= 4
    plain = decode_window(engine, enc, prompt, special, FixedDrafter([]), **KW)
    assert_same(plain, ref)
    with_timestamps = prompt[-1] != special.no_timestamps
    assert plain.stats.drafted == (1 if with_timestamps else 0)  # only the opening <|0.00|>


def test_max_length_truncates_like_generate(engine, special, windows):
    enc, prompt = windows[1]
    kw = dict(KW, max_length=len(prompt) + 7)
    ref = greedy_decode(engine, enc, prompt, special, **kw)
    long_draft = FixedDrafter(ref.tokens + list(range(1000, 1100)))
    result = decode_window(engine, enc, prompt, special, long_draft, **kw)
    assert_same(result, ref)
    assert not result.finished and len(result.tokens) == len(ref.tokens)


class ScriptedDrafter:
    """Returns the next scripted draft at each call (hypothesis picks the script)."""

    def __init__(self, script, reference):
        self.script, self.reference = list(script), reference

    def reset(self, history=()):
        pass

    def update(self, drafted, accepted):
        pass

    def draft(self, tokens, limit):
        if not self.script:
            return []
        kind, payload = self.script.pop(0)
        if kind == "copy":  # the true continuation, corrupted at one position
            cut, wrong = payload
            true = self.reference[len(tokens):] + [50257]
            draft = true[: cut + 3]
            if cut < len(draft):
                draft[cut] = wrong
            return draft  # may exceed `limit`: the decoder must cope
        return list(payload)


TOKEN = st.one_of(st.integers(0, 51864), st.sampled_from([50257, 50363, 50364, 50365, 50400, 51864, 220]))
DRAFT = st.one_of(
    st.tuples(st.just("random"), st.lists(TOKEN, max_size=40)),
    st.tuples(st.just("copy"), st.tuples(st.integers(0, 30), TOKEN)),
    st.tuples(st.just("random"), st.just([50257])),  # end-of-text in the middle
    st.tuples(st.just("random"), st.just([])),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(which=st.sampled_from([0, 1, 4]), script=st.lists(DRAFT, max_size=12))
def test_arbitrary_drafts_never_change_the_output(engine, special, windows, references, which, script):
    enc, prompt = windows[which]
    ref = references[which]
    result = decode_window(engine, enc, prompt, special, ScriptedDrafter(script, ref.tokens), **KW)
    assert_same(result, ref)


def test_controller_keeps_the_output(engine, special, windows, references):
    from tokenmap.decode.cost import DEFAULT

    enc, prompt = windows[2]
    ref = references[2]
    controller = AcceptanceController(DEFAULT)
    result = decode_window(engine, enc, prompt, special, ControlledDrafter(FixedDrafter(ref.tokens), controller), **KW)
    assert_same(result, ref)


def test_controller_stops_drafting_when_nothing_is_accepted():
    from tokenmap.decode.cost import DEFAULT

    c = AcceptanceController(DEFAULT, probe_every=10)
    assert c.limit() > 0
    for _ in range(30):
        c.update(c.limit() or 2, 0)
    limits = []
    for _ in range(40):  # the decoder reports every draft it verified
        limits.append(c.limit())
        c.update(limits[-1], 0)
    assert limits.count(0) >= 36 and max(limits) <= 2  # only an occasional 2-token probe
    for _ in range(40):
        c.update(8, 8)
    assert c.limit() >= 8


def test_each_source_learns_its_own_acceptance():
    """A failing token map is throttled while prompt lookup keeps drafting."""
    from tokenmap.decode.cost import DEFAULT
    from tokenmap.decode.drafters import ChainDrafter
    from tokenmap.decode.gate import WindowGate

    class Always:
        def __init__(self, tokens):
            self.tokens = tokens

        def reset(self, history=()):
            pass

        def draft(self, tokens, limit):
            return self.tokens[:limit]

        def update(self, drafted, accepted):
            pass

    controllers = WindowGate(DEFAULT)
    chain = ChainDrafter((ControlledDrafter(Always([1, 2, 3, 4]), controllers.member(0)),
                          ControlledDrafter(Always([7, 8, 9]), controllers.member(1))))
    for _ in range(40):  # the first source's drafts are always rejected
        if chain.draft([], 16)[:1] == [1]:
            chain.update(4, 0)
    bad, good = controllers.member(0), controllers.member(1)
    assert bad.limit() == 0 or bad.p < 0.2
    assert chain.draft([], 16) == [7, 8, 9]  # falls through to the second source
    chain.update(3, 3)
    assert good.p > bad.p
    assert controllers.use_speculation()  # the second source still pays


def test_untried_sources_do_not_hold_the_gate_open():
    from tokenmap.decode.cost import DEFAULT
    from tokenmap.decode.gate import WindowGate

    controllers = WindowGate(DEFAULT, probe_windows=4)
    controllers.member(1)  # prompt lookup: never drafted, optimistic prior
    for _ in range(20):
        controllers.member(0).update(5, 0)  # the map: always wrong
    gates = [controllers.use_speculation() for _ in range(12)]
    assert gates.count(True) == 3  # only the probes


def test_a_paying_suffix_map_keeps_the_gate_open_when_prompt_lookup_fails():
    """The map's drafter cuts its drafts by its own chances (its tally, not a controller): the gate
    weighs the saving its verified drafts made, so a failing prompt lookup cannot close windows it pays in."""

    from tokenmap.decode.cost import DEFAULT
    from tokenmap.decode.drafters import default_drafter
    from tokenmap.decode.gate import WindowGate
    from tokenmap.maps.suffixmap import TokenMap

    stream = np.array([9, 1, 2, 3, 4, 5, 10] * 3, dtype=np.uint32)  # BOS=9, SEP=10
    controllers = WindowGate(DEFAULT, probe_windows=4)
    toy = SimpleNamespace(eot=99, timestamp_begin=None, inner_marks=frozenset())  # no timestamps
    drafter = default_drafter(TokenMap.from_stream(stream, bos=9, sep=10, depth=8), toy, controllers=controllers)
    lookup = controllers.member(1)
    for _ in range(20):
        lookup.update(4, 0)  # prompt lookup: always wrong
    for _ in range(5):  # the map: its drafts of the utterance are kept whole
        drafter.reset()
        assert drafter.draft([], 8) == [1, 2, 3, 4, 5]
        drafter.update(5, 5)
    assert controllers.tally(0).saving_ms > DEFAULT.step_ms
    assert all(controllers.use_speculation() for _ in range(12))
    for _ in range(60):  # the map starts failing too: only the probes go through
        drafter.reset()
        drafter.draft([], 8)
        drafter.update(5, 0)
    assert controllers.tally(0).saving_ms < 0
    assert [controllers.use_speculation() for _ in range(12)].count(True) == 3
    fresh = WindowGate(DEFAULT, probe_windows=4)
    fresh.tally(0).update_saving(-5.0)  # the map fails, prompt lookup has not drafted yet: it may
    assert all(fresh.use_speculation() for _ in range(12))


def test_windows_that_lose_against_generate_close_the_gate():
    """The loop pays its own cost on every step: windows whose drafts do not make up for it go to
    plain generate (but the probes), even while a source that never drafted would keep it open."""
    from tokenmap.decode.cost import CostModel
    from tokenmap.decode.gate import WindowGate
    from tokenmap.decode.speculative import DecodeStats

    cost = CostModel(10.0, (10.0, 12.0, 13.0, 14.0), loop_ms=0.7)
    controllers = WindowGate(cost, probe_windows=4)
    controllers.member(1)  # prompt lookup: never drafted
    assert controllers.use_speculation() and controllers.window_saving_ms is None
    losing = DecodeStats(tokens=20, passes=20, drafts=3, drafted=3)  # a mismatched map: nothing kept
    controllers.record_window(losing)  # one window closes it (replays of the plain windows reopen it)
    assert controllers.window_saving_ms < 0
    assert [controllers.use_speculation() for _ in range(12)].count(True) == 3  # only the probes
    paying = DecodeStats(tokens=40, passes=10, drafts=10, drafted=30)
    for _ in range(3):  # the probes found windows where drafts pay
        controllers.record_window(paying)
    assert controllers.window_saving_ms > 0
    assert all(controllers.use_speculation() for _ in range(12))


def test_a_paying_controlled_source_keeps_windows_open_despite_losing_windows():
    from tokenmap.decode.cost import DEFAULT
    from tokenmap.decode.gate import WindowGate
    from tokenmap.decode.speculative import DecodeStats

    controllers = WindowGate(DEFAULT, probe_windows=4)
    for _ in range(5):
        controllers.record_window(DecodeStats(tokens=30, passes=30, drafts=5, drafted=10))
    lookup = controllers.member(1)
    for _ in range(20):
        lookup.update(6, 6)  # prompt lookup drafting a loop: whole drafts kept
    assert controllers.window_saving_ms < 0
    assert all(controllers.use_speculation() for _ in range(12))


@pytest.fixture(scope="module")
def telephony_maps(tmp_path_factory, base_model_dir):
    """Maps built from the French and the English telephony corpora (in that order)."""
    from pathlib import Path

    from tokenmap.build.builder import BuildOptions, build_map
    from tokenmap.maps.mapfile import load_maps

    root, out = Path(__file__).resolve().parent.parent / "corpora" / "telephony", tmp_path_factory.mktemp("maps")
    maps = []
    for lang in ("fr", "en"):
        build_map([str(root / lang / "train.txt")], out / f"{lang}.tmap", model=str(base_model_dir),
                  options=BuildOptions(jobs=1))
        maps.append(load_maps(out / f"{lang}.tmap")[0])
    return maps


@pytest.mark.parametrize("which", [1, 3])
def test_map_set_infers_the_task_and_keeps_the_output(engine, special, windows, references, telephony_maps, which):
    from tokenmap.decode.drafters import MapSetDrafter, default_drafter

    enc, prompt = windows[which]
    drafter = default_drafter(telephony_maps, special, prompt_lookup=False)
    result = decode_window(engine, enc, prompt, special, drafter, **KW)
    assert_same(result, references[which])
    member = drafter.drafters[0]
    assert isinstance(member, MapSetDrafter) and result.stats.accepted > 0
    assert member.drafts[1] > member.drafts[0]  # English prompts: the English map leads


@pytest.fixture(scope="module")
def inventory_map(tmp_path_factory, base_model_dir):
    """The English telephony phrase inventory (train + test) as a suffix map: it knows the spoken prompts."""
    from pathlib import Path

    from tokenmap.build.builder import BuildOptions, build_map
    from tokenmap.maps.mapfile import load_maps

    root, out = Path(__file__).resolve().parent.parent / "corpora" / "telephony" / "en", tmp_path_factory.mktemp("inv")
    build_map([str(root / "train.txt"), str(root / "test.txt")], out / "inv.tmap", model=str(base_model_dir),
              options=BuildOptions(jobs=1))
    return load_maps(out / "inv.tmap")[0]


@pytest.mark.parametrize("seconds", [None, 1.0, 4.0, 29.0])
@pytest.mark.parametrize("which", range(5))
def test_suffix_map_drafts_keep_the_output(engine, special, windows, references, inventory_map, which, seconds):
    """The drafter that follows the model (structure drafts included: <|0.00|>, reopened segments,
    guessed closing timestamps, right or wrong) changes the passes, never the tokens, score or no_speech_prob."""
    from tokenmap.decode.drafters import Heard, default_drafter

    enc, prompt = windows[which]
    drafter = default_drafter(inventory_map, special, prompt_lookup=False, heard=Heard(seconds=seconds))
    result = decode_window(engine, enc, prompt, special, drafter, **KW)
    assert_same(result, references[which])
    assert result.stats.accepted > 0 and result.stats.passes < len(references[which].tokens)


def test_replayed_windows_keep_the_account_without_probes():
    """Once plain windows are replayed into the account, a closed gate needs no probe to learn that drafts
    do not pay; replays that find drafts paying open it again."""
    from tokenmap.decode.cost import CostModel
    from tokenmap.decode.gate import WindowGate
    from tokenmap.decode.speculative import DecodeStats

    controllers = WindowGate(CostModel(10.0, (10.0, 12.0, 13.0, 14.0), loop_ms=0.7), probe_windows=4)
    losing = DecodeStats(tokens=20, passes=20, drafts=3, drafted=3, decoder_seconds=0.25)
    for _ in range(3):
        controllers.record_window(losing)
    assert controllers.timed["loop"][2] == 2  # the first window of a set is not timed
    assert [controllers.use_speculation() for _ in range(12)].count(True) == 3  # probes, without replays
    controllers.record_replay(losing)
    assert not any(controllers.use_speculation() for _ in range(12))
    assert controllers.timed["loop"][2] == 2  # a replay is not timed as a loop window
    paying = DecodeStats(tokens=40, passes=10, drafts=10, drafted=30)
    for _ in range(4):
        controllers.record_replay(paying)
    assert controllers.window_saving_ms > 0 and controllers.use_speculation()
