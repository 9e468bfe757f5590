"""The suffix map (format 3), the drafter that follows the model, the replay and the row-wise rules."""

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmap.decode.cost import CostModel
from tokenmap.decode.ct2math import (
    argmax_of_log_softmax,
    log_softmax,
    log_softmax_rows,
)
from tokenmap.decode.drafters import find_continuation
from tokenmap.decode.follow import FollowDrafter
from tokenmap.decode.rules import RuleSet
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import replay_window
from tokenmap.maps.suffixmap import TokenMap, build_arrays

BOS, SEP = 20, 21
TS0, EOT = 100, 99


def _stream(utterances):
    out = []
    for u in utterances:
        out += [BOS, *u, SEP]
    return np.array(out, dtype=np.uint32)


def _substrings(stream, depth):
    """Brute force: every sequence of <= depth tokens inside one utterance (SEP included), with its count."""
    counts = Counter()
    s = stream.tolist()
    for i in range(len(s)):
        for j in range(i + 1, min(len(s), i + depth) + 1):
            counts[tuple(s[i:j])] += 1
            if s[j - 1] == SEP:
                break
    return counts


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), min_size=0, max_size=8), min_size=1, max_size=6),
       st.integers(1, 6), st.integers(1, 2))
def test_nodes_counts_links_and_best_children_match_brute_force(utterances, depth, min_count):
    stream = _stream(utterances)
    sm = TokenMap.from_stream(stream, BOS, SEP, depth, min_count)
    expected = {k: v for k, v in _substrings(stream, depth).items() if v >= min_count}
    assert sm.num_nodes == len(expected) + 1
    for seq, count in expected.items():
        node = 0
        for t in seq:
            node = sm.child(node, t)
            assert node > 0
        assert sm.count(node) == count
        link = 0
        for t in seq[1:]:
            link = sm.child(link, t)
        assert int(sm.arrays["node_link"][node]) == link
        children = {t: v for s, v in expected.items() if len(s) == len(seq) + 1 and s[:-1] == seq for t in s[-1:]}
        best = sm.best(node)
        if children:
            top = max(children.values())
            assert sm.token(best) == min(t for t, v in children.items() if v == top)
        else:
            assert best == -1


def test_longest_match_backs_off_through_links():
    sm = TokenMap.from_stream(_stream([[1, 2, 3, 4], [7, 2, 3, 5], [7, 2, 3, 5]]), BOS, SEP, depth=8)
    assert sm.token(sm.next_choice(sm.walk([BOS, 1, 2, 3]))[1]) == 4  # the whole prefix decides
    assert sm.token(sm.next_choice(sm.walk([9, 2, 3]))[1]) == 5      # unseen start: "2 3" -> 5 (2 of 3)
    assert sm.walk([9, 9]) == 0


def _drafter(utterances, **kw):
    sm = TokenMap.from_stream(_stream(utterances), BOS, SEP, depth=12)
    return FollowDrafter(sm, timestamp_begin=TS0, eot=EOT, **kw)


def test_structure_window_start_segments_and_end():
    d = _drafter([[1, 2, 3], [1, 2, 3], [4, 5, 6]])
    d.reset()
    assert d.draft([TS0], 8) == [1, 2, 3]                # after <|0.00|>: text, never a timestamp
    assert d.draft([TS0, 1, 2, 3, TS0 + 40], 8) == []     # the utterance ends here: EOT is the model's own token
    d.reset()
    assert d.draft([], 8) == [1, 2, 3]                    # no timestamps: through to the utterance's end


def test_guesses_the_closing_timestamp_from_the_audio_length():
    d = _drafter([[1, 2, 3], [1, 2, 3]], seconds=2.4)
    d.reset()
    assert d.draft([TS0], 8) == [1, 2, 3, TS0 + 100]     # 2.4 s of audio: <|2.00|>
    assert d.draft([TS0 + 150], 8) == [1, 2, 3]          # the guess would go back in time: left out
    d.reset()
    assert d.draft([], 8) == [1, 2, 3]                    # no timestamps, no guess


def test_closing_timestamp_hit_rate_is_learned():
    d = _drafter([[1, 2, 3]] * 2, seconds=1.0)
    d.reset()
    for _ in range(40):
        draft = d.draft([TS0], 8)
        if draft[-1] != TS0 + 100:
            break
        d.update(len(draft), 3)                           # text kept, the guessed timestamp rejected
    assert d.tally.stamp_rate < 0.1 and d.draft([TS0], 8) == [1, 2, 3]


def test_reopens_the_segment_with_the_closing_timestamp():
    d = _drafter([[1, 2, 3, 4, 5, 6]] * 3)
    d.reset()
    assert d.draft([TS0, 1, 2, 3, TS0 + 30], 8) == [TS0 + 30, 4, 5, 6]


def test_opens_the_next_segment_while_audio_is_left():
    """After a closing timestamp well before the audio's end the model opens another segment:
    the drafter proposes its opening timestamp (the window's last break gap, 0 at first) and the
    next utterance's first words, even where the corpus's utterance ended."""
    d = _drafter([[1, 2, 3], [1, 2, 3], [4, 5]], seconds=12.0)
    d.reset()
    assert d.draft([TS0, 1, 2, 3, TS0 + 150], 8) == [TS0 + 150, 1, 2, 3, TS0 + 600]  # 3.00 s of 12: it goes on
    tokens = [TS0, 1, 2, 3, TS0 + 150, TS0 + 186, 4, 5, TS0 + 300]              # the model left 0.72 s
    assert d.draft(tokens, 8)[0] == TS0 + 336                                    # 6.00 s closes, 6.72 s opens
    assert d.draft([TS0, 1, 2, 3, TS0 + 580], 8) == []                           # 11.6 s: the window ends here
    d.update(0, 0)
    e = _drafter([[1, 2, 3], [1, 2, 3]], seconds=None)
    e.reset()
    assert e.draft([TS0, 1, 2, 3, TS0 + 150], 8) == []                           # audio length unknown: as before


def test_opening_timestamp_hit_rate_is_learned():
    d = _drafter([[1, 2, 3]] * 2, seconds=20.0)
    d.reset()
    for _ in range(40):
        draft = d.draft([TS0, 1, 2, 3, TS0 + 100], 8)
        if not draft:
            break
        d.update(len(draft), 0)                                                  # the guessed opening rejected
    assert d.tally.open_rate < 0.3 and d.draft([TS0, 1, 2, 3, TS0 + 100], 8) == []


COMMA = 30


def test_the_context_steps_over_a_comma_the_corpus_does_not_write():
    """Corpus "1 2 3 4 5", and elsewhere "6 , 8": the model writes "1 2 , 3"; with its comma tokens
    the drafter still knows the sentence after the comma, without them it backs off to "," alone."""
    corpus = [[1, 2, 3, 4, 5]] * 2 + [[6, COMMA, 8, 9]]
    d = _drafter(corpus, inner_marks=frozenset({COMMA}))
    d.reset()
    assert d.draft([TS0, 1, 2, COMMA], 8) == [3, 4, 5]
    plain = _drafter(corpus)
    plain.reset()
    assert plain.draft([TS0, 1, 2, COMMA], 8) == [8, 9]


def test_the_context_steps_over_a_comma_the_model_leaves_out():
    corpus = [[1, 2, COMMA, 3, 4, 5]] * 2 + [[3, 7]] * 3
    d = _drafter(corpus, inner_marks=frozenset({COMMA}))
    d.reset()
    assert d.draft([TS0, 1, 2, 3], 8) == [4, 5]           # "1 2 , 3" in the corpus: the sentence goes on
    plain = _drafter(corpus)
    plain.reset()
    assert plain.draft([TS0, 1, 2, 3], 8)[:1] == [7]      # backed off to "3", which goes on with 7 more often


def test_no_draft_when_nothing_pays():
    dear = CostModel(10.0, tuple([1000.0] * 32))
    d = _drafter([[1, 2, 3]] * 3, cost=dear)
    d.reset()
    assert d.draft([TS0], 8) == []


def test_calibration_shortens_drafts_that_keep_failing():
    d = _drafter([[1, 2, 3, 4, 5, 6, 7, 8], [1, 9, 9, 9, 9, 9, 9, 9], [1, 9, 9, 9, 9, 9, 9, 9]])
    d.reset()
    first = len(d.draft([TS0, 1], 8))
    for _ in range(30):
        d.draft([TS0, 1], 8)
        d.update(first, 0)
    assert len(d.draft([TS0, 1], 8)) < first


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=6), min_size=1, max_size=5),
       st.lists(st.integers(0, 4), min_size=0, max_size=10), st.booleans())
def test_replay_decides_exactly_the_truth(utterances, truth, timestamps):
    """Whatever the drafts, the replay ends with the truth: passes + accepted == tokens decided."""
    d = _drafter(utterances)
    truth = ([TS0] if timestamps else []) + truth + ([TS0 + 7] if timestamps else [])
    r = replay_window(d, truth, eot=EOT, with_timestamps=timestamps, timestamp_begin=TS0)
    assert r.tokens == len(truth) + 1
    assert r.passes + r.accepted in (r.tokens, r.tokens + 1)  # + 1: the last draft was accepted through EOT
    assert r.greedy_ms > 0 and r.ms > 0


def test_rowwise_rules_are_bit_identical():
    rng = np.random.default_rng(1)
    for v in (51865, 51864, 9):
        x = rng.normal(0, 3, (7, v)).astype(np.float32)
        assert np.array_equal(log_softmax_rows(x.copy()), np.stack([log_softmax(r) for r in x]))


def _rules_and_rows(n_rows: int, seed: int):
    vocab = 51865
    special = SpecialTokens(sot=50258, eot=50257, no_timestamps=50363, no_speech=50362, vocab_size=vocab,
                            suppress_ids=(1, 2, 7), suppress_ids_begin=(220, 50257))
    rules = RuleSet.from_generate_kwargs(special, [50258, 50259, 50359])
    rows = np.random.default_rng(seed).normal(0, 4, (n_rows, vocab)).astype(np.float32)
    rows[:, 50364:] += 6.0  # timestamps likely: the "force a timestamp" branch runs too
    return rules, rows


def _row_by_row(rules, rows, tokens, draft):
    """:meth:`RuleSet.choose` on each row, as the step-wise decoder decides."""
    context, out = list(tokens), []
    for j, row in enumerate(rows.copy()):
        out.append(rules.choose(row, context))
        context.append(draft[j] if j < len(draft) else out[-1][0])
    return out


@pytest.mark.parametrize("tokens, draft", [([], [50364, 400, 401]), ([50364, 400], [401, 50400, 50400, 402]),
                                           ([50364, 400, 50380], [50380, 500, 501])])
def test_choose_rows_equals_choose_row_by_row(tokens, draft):
    rules, rows = _rules_and_rows(len(draft) + 1, len(tokens))
    chosen, logprobs = rules.choose_rows(rows.copy(), tokens, draft, every_row=True)
    assert [(int(c), lp) for c, lp in zip(chosen, logprobs)] == _row_by_row(rules, rows, tokens, draft)
    lazy, lazy_lp = rules.choose_rows(rows.copy(), tokens, draft)  # stops at the first rejected draft token
    j = len(lazy) - 1
    assert list(lazy) == list(chosen[: j + 1]) and list(lazy_lp) == list(logprobs[: j + 1])
    assert list(lazy[:j]) == list(draft[:j]) and (j == len(draft) or lazy[j] != draft[j])


def test_choose_rows_follows_an_accepted_draft():
    rules, rows = _rules_and_rows(9, 5)
    tokens, draft = [50364, 400], []
    for j in range(8):  # the row-by-row decisions, each fed back as the next draft token
        draft.append(_row_by_row(rules, rows[: j + 1], tokens, draft)[j][0])
    chosen, logprobs = rules.choose_rows(rows.copy(), tokens, draft)
    assert len(chosen) == 9
    assert [(int(c), lp) for c, lp in zip(chosen, logprobs)] == _row_by_row(rules, rows, tokens, draft)


def test_argmax_decides_rounding_ties_as_the_log_softmax_does():
    """Two logits one float32 step apart can round to one log-prob: the lower id wins, as in CT2."""
    rng = np.random.default_rng(3)
    changed = 0
    for _ in range(50):
        row = rng.normal(0, 0.5, 51865).astype(np.float32)  # flat: log-probs near -10, coarser than the logits
        best = int(np.argmax(row))
        row[int(rng.integers(0, best))] = np.nextafter(row[best], np.float32(-np.inf))
        expected = int(np.argmax(log_softmax(row)))
        assert argmax_of_log_softmax(row) == expected
        changed += expected != best
    assert changed > 10  # the naive argmax would have been wrong on these


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), min_size=0, max_size=8), min_size=1, max_size=8), st.integers(1, 9))
def test_chunked_sort_builds_the_same_arrays(utterances, chunk):
    stream = _stream(utterances)
    whole = build_arrays(stream, SEP, 5, 1)
    parts = build_arrays(stream, SEP, 5, 1, chunk_positions=chunk)
    assert all(np.array_equal(whole[k], parts[k]) for k in whole)


def _continuation_by_windows(seq, min_match, max_match, limit):
    """Reference: try every window of each length n, longest first, and take the latest hit."""
    for n in range(min(max_match, len(seq) - 1), min_match - 1, -1):
        hits = [s for s in range(len(seq) - n) if seq[s: s + n] == seq[len(seq) - n:]]
        if hits:
            return list(seq[hits[-1] + n: hits[-1] + n + limit])
    return []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=40), st.integers(1, 4), st.integers(0, 4), st.integers(1, 9))
def test_prompt_lookup_finds_the_longest_latest_match(seq, min_match, extra, limit):
    expected = _continuation_by_windows(seq, min_match, min_match + extra, limit)
    assert find_continuation(seq, min_match, min_match + extra, limit) == expected


def test_replay_of_a_generated_window_feeds_the_prompt_and_keeps_timestamps():
    from types import SimpleNamespace

    from tokenmap.decode.cost import DEFAULT
    from tokenmap.decode.drafters import FixedDrafter
    from tokenmap.decode.speculative import replay_generated

    special = SimpleNamespace(eot=99, no_timestamps=98, timestamp_begin=100, sot_index=lambda prompt: 0)
    truth = [100, 5, 6, 7, 120]
    stats = replay_generated(FixedDrafter([100, 5, 6, 7, 120, 99]), [1, 2, 3], truth, special)
    # pass 1: the prompt's 2 tokens after SOT + the forced <|0.00|> and the rest (all kept)
    assert (stats.passes, stats.tokens, stats.accepted) == (1, 6, 6)
    assert stats.ms == pytest.approx(DEFAULT.batch(2 + 6))
    plain = replay_generated(FixedDrafter([5, 6, 7, 99]), [1, 2, 3, 98], [5, 6, 7], special)
    assert (plain.passes, plain.tokens) == (1, 4)  # no timestamps: the draft is the text and EOT
