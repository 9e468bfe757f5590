"""Streaming: metrics, commit policy, drafter, sources (pure), and exactness at beta = 0 (model)."""

import re
import time

import numpy as np
import pytest

from tokenmap.decode.drafters import lcp
from tokenmap.decode.guarding import Guard
from tokenmap.stream.audio import FileSource
from tokenmap.stream.live import (
    Decoded,
    PreviousHypothesisDrafter,
    StreamOptions,
    StreamTranscriber,
    agreed_segments,
    biased_accept,
    parse_segments,
    shift_timestamps,
)
from tokenmap.stream.metrics import erasures, mask_display, normalized_erasure

TS = 50364  # <|0.00|> of the multilingual vocabulary


def ts(seconds):
    return TS + int(round(seconds / 0.02))


def test_normalized_erasure_worked_example():
    displays = [[1, 2, 3], [1, 2, 4, 5], [1, 2, 4, 5, 6]]
    assert erasures(displays) == [1, 0]
    assert normalized_erasure(displays) == pytest.approx(0.2)
    assert normalized_erasure([]) == 0.0 and normalized_erasure([[1], []]) == 0.0
    assert lcp([1, 2, 3], [1, 2]) == 2 and lcp([], [1]) == 0


def test_display_only_mask_k_hides_the_tail_but_not_committed_text():
    assert mask_display([1, 2], [3, 4, 5], 2) == [1, 2, 3]
    assert mask_display([1, 2], [3], 5) == [1, 2]
    assert mask_display([1], [3, 4], 0) == [1, 3, 4]


def test_parse_segments_closed_open_and_empty():
    tokens = [ts(0), 10, 11, ts(1.5), ts(1.5), 12, ts(2.0), ts(2.0), 13]
    segs = parse_segments(tokens, TS)
    assert [s.text for s in segs] == [(10, 11), (12,), (13,)]
    assert [s.stop for s in segs] == [1.5, 2.0, None]
    assert segs[1].start == 1.5 and tokens[segs[2].begin:] == [ts(2.0), 13]
    assert parse_segments([ts(0), ts(1)], TS) == []
    assert shift_timestamps([ts(2.0), 7, ts(0.2)], TS, TS + 1500, 50) == [ts(1.0), 7, TS]


def test_local_agreement_commits_only_agreed_closed_segments():
    cur = parse_segments([ts(0), 1, 2, ts(1), ts(1), 3, ts(2), ts(2), 4], TS)
    same = parse_segments([ts(0), 1, 2, ts(1.1), ts(1.1), 3, ts(2), ts(2), 5], TS)
    assert agreed_segments(cur, [same]) == 2  # timestamps may move, text must agree
    assert agreed_segments(cur, [parse_segments([ts(0), 1, 9, ts(1)], TS)]) == 0
    assert agreed_segments(cur, []) == 2 - 0  # no history: every closed segment


def test_previous_hypothesis_drafter():
    prev = [ts(0), 1, 2, 3, ts(1), ts(1), 4, 5, ts(2)]
    fallback = type("F", (), {"reset": lambda s, h=(): None, "draft": lambda s, t, n: [99]})()
    d = PreviousHypothesisDrafter(prev, TS, fallback, realign=3)
    assert d.draft([ts(0)], 100) == prev[1:]
    assert d.draft([ts(0.2), 1], 2) == [2, 3]  # any timestamp matches any timestamp
    assert d.on_previous([ts(0), 1], 2) and not d.on_previous([ts(0), 1], 7)
    # a segment boundary moved: text alignment continues the previous text
    assert d.draft([ts(0), 1, 2, ts(0.6)], 100)[:3] == [ts(0.6), 3, ts(1)]
    assert d.draft([ts(0), 1, 7], 100) == [99]  # no alignment after a new token: the fallback
    assert d.draft([ts(0), 8, 8, 8, 8, 8], 5) == [99]  # nothing fits: the fallback


def test_previous_hypothesis_drafter_realigns_after_edits():
    prev = [ts(0), 1, 2, 3, 4, ts(1), ts(1), 5, 6, 7, ts(2)]
    d = PreviousHypothesisDrafter(prev, TS)
    assert d.draft([ts(0), 1, 3], 100) == [4, ts(1), ts(1), 5, 6, 7, ts(2)]  # "2" deleted
    assert d.draft([ts(0), 1, 2, 9, 3], 100)[:2] == [4, ts(1)]  # "9" inserted: realigned on "3"
    assert d.draft([ts(0), 1, 2, 9, 9, 3, 4], 100)[:2] == [ts(1), ts(1)]  # on the last 2 tokens
    # the model closed the segment at 1.2 s: the drafted opening timestamp repeats it
    assert d.draft([ts(0), 1, 2, 3, 4, ts(1.2)], 100)[:2] == [ts(1.2), 5]
    assert d.draft([ts(0), 1, 2, 3, 4, ts(1.2), ts(1.2)], 100)[:1] == [5]
    # a lone token far from where it stood is not an alignment; a realigned ". <|t|>" tail is not drafted
    assert d.draft([ts(0), 8, 8, 8, 8, 8, 8, 8, 8, 1], 100) == []
    assert d.draft([ts(0), 1, 2, 3, 4, ts(1), ts(1), 5, 9, 6], 100) == []


def test_fallback_learns_under_its_own_controls():
    from tokenmap.decode.control import ControlledDrafter
    from tokenmap.decode.cost import DEFAULT
    from tokenmap.decode.gate import WindowGate

    seen = []
    stub = type("F", (), {"reset": lambda s, h=(): None, "draft": lambda s, t, n: [99] * n,
                          "update": lambda s, d, a: seen.append((d, a))})()
    controls = WindowGate(DEFAULT)
    d = PreviousHypothesisDrafter([ts(0), 1, 2], TS, ControlledDrafter(stub, controls.member(0)))
    assert d.draft([ts(0)], 100) == [1, 2]  # the previous hypothesis: not the fallback's
    d.update(2, 2)
    assert seen == []
    assert d.draft([ts(0), 1, 2], 100)  # beyond the previous hypothesis: the fallback drafts
    for _ in range(30):
        d.draft([ts(0), 1, 2], 100)
        d.update(5, 0)  # and is always rejected
    assert seen and controls.member(0).limit() == 0 and d.draft([ts(0), 1, 2], 100) == []


def test_biased_accept_is_eq5_on_softmax():
    prev = PreviousHypothesisDrafter([ts(0), 1, 2], TS)
    row = np.log(np.array([0.05, 0.3, 0.25, 0.4], np.float32))  # greedy picks 3
    assert biased_accept(0.0, prev) is None
    accept = biased_accept(0.2, prev)
    # (1-b) P(d) + b >= (1-b) P(c):  0.8*0.25 + 0.2 = 0.40 >= 0.8*0.4 = 0.32
    assert accept(row.copy(), [ts(0), 1], 2, 3)
    assert not biased_accept(0.05, prev)(row.copy(), [ts(0), 1], 2, 3)  # 0.2875 < 0.38
    assert not accept(row.copy(), [ts(0), 1], 0, 3)  # not the previous hypothesis' token
    disabled = row.copy()
    disabled[2] = np.finfo(np.float32).min
    assert not biased_accept(0.9, prev)(disabled, [ts(0), 1], 2, 3)


def test_file_source_fast_and_realtime():
    audio = np.arange(40_000, dtype=np.float32)
    chunks = list(FileSource(audio).chunks(1.0))
    assert [len(c) for c in chunks] == [16_000, 16_000, 8_000]
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s + (2.0 if len(slept) == 1 else 0.0)  # the first update runs late

    rt = list(FileSource(audio, realtime=True, clock=lambda: now[0], sleep=sleep).chunks(1.0))
    assert np.concatenate(rt).tolist() == audio.tolist()
    assert len(rt) == 1  # behind the clock: the next update took everything that had arrived


class _Tok:
    def decode(self, ids):
        return " ".join(f"w{i}" for i in ids)

    def token_to_id(self, token):
        return 1


class FakeEngine:
    """No model: the transcriber's decode is scripted (commit policy and robustness tests)."""

    def __init__(self):
        from tokenmap.decode.special import SpecialTokens

        self.special = SpecialTokens(sot=50258, eot=50257, no_timestamps=50363, no_speech=50362,
                                     vocab_size=51865)
        self.token_map = None
        self.guard = Guard()

    def encode(self, audio):
        from tokenmap.encoders import Output
        from tokenmap.windows import EncodedWindow

        return EncodedWindow(Output(None))  # every buffer encoded as 30 s

    def token_id(self, token):
        return 7

    def text(self, tokens):
        return " ".join(f"w{t}" for t in tokens if t < self.special.eot)


class Scripted(StreamTranscriber):
    def __init__(self, script, **options):
        super().__init__(FakeEngine(), StreamOptions(**options))
        self.script = list(script)

    def decode(self, enc, prompt, draft, **kwargs):
        tokens = self.script.pop(0) if self.script else []
        silent = not tokens
        return Decoded(list(tokens), 0.01, 0.9 if silent else 0.0, -2.0 if silent else -0.1)


def second(n=1.0):
    return np.zeros(int(16_000 * n), np.float32)


def test_commit_trims_buffer_and_rebases_the_draft():
    s = Scripted([[ts(0), 1, 2, ts(0.8)], [ts(0), 1, 2, ts(0.8), ts(0.8), 3], [ts(0), 3, 4, ts(1.0)]])
    u1 = s.update() if not s.push(second()) else None
    assert u1.committed_text == "" and u1.tentative_text == "w1 w2"
    s.push(second())
    u2 = s.update()
    assert u2.new_committed_text == "w1 w2" and u2.tentative_text == "w3"
    assert s.offset == pytest.approx(0.8) and len(s.buffer) == int(1.2 * 16_000)
    assert s.previous == [ts(0), 3]  # the rest of the hypothesis, timestamps moved 0.8 s earlier
    assert u2.record.commit_latencies[0] == pytest.approx(2.0 - 0.8, abs=0.05)
    u3 = s.update(final=True)
    assert u3.committed_text == "w1 w2 w3 w4" and u3.final and len(s.buffer) == 0


def test_silence_and_long_pauses_keep_the_buffer_short():
    s = Scripted([[]] * 40)
    for _ in range(40):
        s.push(second())
        u = s.update()
    assert u.committed_text == "" and len(s.buffer) <= 2 * 16_000
    assert s.metrics.summary()["max_buffer_seconds"] <= 2.0


def test_buffer_never_exceeds_the_cap_without_agreement():
    script = [[ts(0), i, ts(5.0), ts(5.0), 100 + i] for i in range(40)]  # never agrees
    s = Scripted(script, update_seconds=2.0)
    for _ in range(40):
        s.push(second(2.0))
        s.update()
    assert s.metrics.summary()["max_buffer_seconds"] <= 30.0
    assert s.committed  # forced commits happened


def test_short_audio_and_end_mid_word():
    s = Scripted([[ts(0), 5, 6]] * 2)  # no closing timestamp: the stream ended mid-word
    updates = list(s.run([second(0.4)]))
    assert updates[-1].final and updates[-1].committed_text == "w5 w6"
    tiny = Scripted([])
    assert list(tiny.run([np.zeros(100, np.float32)]))[-1].committed_text == ""


def test_metrics_summary_with_mask_k():
    s = Scripted([[ts(0), 1, 2, 3], [ts(0), 1, 4, 5], [ts(0), 1, 4, 5, 6], [ts(0), 1, 4, 5, 6]], agreement=9)
    for _ in range(3):
        s.push(second())
        s.update()
    s.update(final=True)
    m = s.metrics.summary(mask_k=2)
    assert m["ne"] > m["ne_masked"]
    assert m["ne"] == pytest.approx(2 / 4)  # "2 3" erased once; final display "1 4 5 6"
    assert m["a_d"] == pytest.approx((2 + 4 + 5) / (4 + 4 + 5))  # sum k / sum m (paper Table 2)


# --- with the model (float32: speculative decisions equal step-wise greedy) ---------------------------

@pytest.fixture(scope="module")
def engine32(base_model_dir):
    from tokenmap.stream.live import StreamModel

    return StreamModel.load(str(base_model_dir), compute_type="float32", threads=2, audio_context="full")


class Stepwise(StreamTranscriber):
    """Decodes every update step by step with plain greedy decoding, no draft (the non-streaming check)."""

    def decode(self, enc, prompt, draft, **kwargs):
        from tokenmap.decode.rules import greedy_decode

        r = greedy_decode(self.engine.model.decoder, enc, prompt, self.engine.special, **kwargs)
        return Decoded(list(r.tokens), 0.0, r.no_speech_prob or 0.0, r.score)


def _run(engine, audio, transcriber=StreamTranscriber, **options):
    st = transcriber(engine, StreamOptions(**options))
    updates = list(st.run(FileSource(audio).chunks(options.get("update_seconds", 1.0))))
    return st, updates


@pytest.mark.model
def test_beta0_every_update_equals_stepwise_greedy_and_the_final_text(engine32, data_dir):
    from tokenmap.audio import load_audio

    audio = load_audio(data_dir / "en-basic-pbx-ivr-main.flac")[: 16_000 * 14]
    spec, _ = _run(engine32, audio, update_seconds=3.0, scratch="reference")
    records = spec.metrics.updates
    assert all(r.scratch_same for r in records if r.scratch_same is not None)
    assert sum(r.accepted for r in records) > 0 and spec.committed_text
    plain, _ = _run(engine32, audio, Stepwise, update_seconds=3.0)
    assert spec.committed_text == plain.committed_text
    assert [r.committed for r in records] == [r.committed for r in plain.metrics.updates]


@pytest.mark.model
def test_beta_biases_toward_the_previous_hypothesis(engine32, data_dir):
    from tokenmap.audio import load_audio

    audio = load_audio(data_dir / "en-agent-pass.flac")
    exact, _ = _run(engine32, audio, update_seconds=1.0)
    biased, _ = _run(engine32, audio, update_seconds=1.0, beta=0.6)
    assert biased.metrics.summary()["a_d"] >= exact.metrics.summary()["a_d"]
    assert biased.metrics.summary()["ne"] <= exact.metrics.summary()["ne"]


@pytest.mark.model
def test_model_silence_and_short_audio(engine32):
    rng = np.random.default_rng(0)
    st, updates = _run(engine32, (rng.standard_normal(16_000 * 4) * 1e-4).astype(np.float32), update_seconds=2.0)
    assert updates[-1].final and st.metrics.summary()["max_buffer_seconds"] <= 4.0
    st, updates = _run(engine32, np.zeros(800, np.float32), update_seconds=1.0)
    assert updates[-1].committed_text == ""


@pytest.mark.model
def test_the_scratch_encode_time_is_the_30s_encode_alone(engine32, data_dir, monkeypatch):
    """``scratch_encode`` times the buffer's encoding as 30 s, not the decode from scratch after it."""
    from tokenmap.audio import load_audio
    from tokenmap.stream.live import StreamModel
    from tokenmap.windows import EncodedWindow

    short = StreamModel(engine32.model, engine32.special, engine32.tokenizer, cost=engine32.cost, context="auto")
    inner, encodes = EncodedWindow.full, []

    def timed_full(window, rows=None):
        encoding = window.short and not window.sent_back
        started = time.perf_counter()
        out = inner(window, rows)
        if encoding:
            encodes.append(time.perf_counter() - started)
        return out

    def slow_scratch(self, enc, prompt, tokens):
        time.sleep(0.3)
        return 0.3, True

    monkeypatch.setattr(EncodedWindow, "full", timed_full)
    monkeypatch.setattr(StreamTranscriber, "_scratch", slow_scratch)
    audio = load_audio(data_dir / "en-basic-pbx-ivr-main.flac")[: 16_000 * 4]
    st, _ = _run(short, audio, update_seconds=2.0, scratch="generate")
    records = [r for r in st.metrics.updates if r.scratch_encode is not None]
    assert len(records) == len(encodes) >= 2
    for record, seconds in zip(records, encodes):
        assert abs(record.scratch_encode - seconds) < 0.1


@pytest.mark.model
def test_a_short_buffer_is_encoded_on_a_short_context_and_costs_less_than_30s(engine32, data_dir):
    from tokenmap.audio import load_audio
    from tokenmap.context import AudioContext
    from tokenmap.stream.live import StreamModel

    short = StreamModel(engine32.model, engine32.special, engine32.tokenizer, cost=engine32.cost, context="auto")
    audio = load_audio(data_dir / "en-basic-pbx-ivr-main.flac")[: 16_000 * 9]
    window = short.encode(audio)
    assert window.short and window.output.view.shape[1] == AudioContext("auto").frames(9.0) // 2 < 1500
    assert window.full().view.shape[1] == 1500 and not engine32.encode(audio).short
    st, _ = _run(short, audio, update_seconds=3.0, scratch="generate")
    summary = st.metrics.summary()
    assert summary["short_updates"] == len(st.metrics.updates) >= 3
    assert all(r.scratch_encode is not None for r in st.metrics.updates)
    # what an update costs against a 30 s update is measured and reported (which one took less time on this
    # machine is not asserted: on 2 shared cores the clock is not the product's behaviour; that the update
    # encodes fewer frames is, above): each update's own encode and decode against its 30 s encode and decode
    records = st.metrics.updates
    assert all(r.scratch_encode > 0 and r.scratch_decode > 0 and r.encode_seconds > 0 for r in records)
    own = sum(r.encode_seconds + r.decode_seconds for r in records)
    thirty = sum(r.scratch_encode + r.scratch_decode for r in records)
    assert summary["update_cost_vs_30s"] == pytest.approx(own / thirty)
    full, _ = _run(engine32, audio, update_seconds=3.0)
    # the short context is another encoding of the audio (it may change a word against 30 s): both hear the
    # menu's clearly spoken opening
    for text in (st.committed_text, full.committed_text):
        assert " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split()).startswith("thank you for calling"), text


class _ScriptedDetection:
    """The model, except that ``detect_language`` answers from ``script`` (language, probability), in turn."""

    def __init__(self, model, script):
        self.model, self.script, self.calls = model, list(script), 0

    def detect_language(self, enc):
        language, p = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        return [[(f"<|{language}|>", p)]]

    def __getattr__(self, name):
        return getattr(self.model, name)


@pytest.mark.model
def test_without_a_language_each_update_detects_until_two_agree_and_nothing_commits_before(engine32, data_dir):
    from tokenmap.audio import load_audio
    from tokenmap.stream.live import StreamModel

    audio = load_audio(data_dir / "en-basic-pbx-ivr-main.flac")[: 16_000 * 5]
    script = [("nl", 0.3), ("en", 0.6), ("en", 0.7), ("en", 0.85), ("en", 0.95), ("de", 0.99)]
    scripted = _ScriptedDetection(engine32.model, script)
    engine = StreamModel(scripted, engine32.special, engine32.tokenizer, cost=engine32.cost, context="auto")
    st, updates = _run(engine, audio, language=None)
    assert scripted.calls == 5  # settled by the 5th update: en twice in a row at 0.8 or more (0.6, 0.7 do not count)
    assert st.language == "en" and not st.detecting
    assert all(not u.new_committed_text for u in updates[:4])
    assert "thank you for calling" in st.committed_text.lower()
    st, _ = _run(engine32, audio, language="en")  # a language given: never detected
    assert st.language == "en" and not st.detecting


@pytest.mark.model
def test_stream_detects_the_language_like_transcribe(data_dir):
    """`tokenmap stream` without -l: Spanish, although its first second sounds like Dutch."""
    import json

    from click.testing import CliRunner

    from tokenmap_cli.main import cli

    result = CliRunner().invoke(cli, ["stream", "--threads", "2", "--jsonl", str(data_dir / "es-conf-getpin.flac")])
    assert result.exit_code == 0, result.output
    last = json.loads(result.stdout.strip().splitlines()[-1])
    assert last["language"] == "es" and "conferencia" in last["text"].lower()
