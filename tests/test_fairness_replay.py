"""The fairness replay on a bench run's greedy outputs: segment cutting and the prefill count."""
import json
from pathlib import Path

import pytest

from tokenmap.decode.cost import CostModel
from tokenmap_bench import fairness as fair

_RESEARCH = Path(__file__).resolve().parent.parent / "research"

TS = 1000  # timestamp_begin of this toy vocabulary


class SixAfterFive:
    """Drafts 6 after 5, else nothing (the decoder's drafter interface); counts what it is told."""

    def __init__(self):
        self.told = []

    def reset(self, history=()):
        pass

    def draft(self, tokens, limit):
        return [6] if tokens and tokens[-1] == 5 else []

    def update(self, drafted, accepted):
        self.told.append((drafted, accepted))


def test_greedy_segments_cut_at_timestamps_per_task(tmp_path):
    rows = [
        {"system": "greedy", "kind": "decoder", "task": "incar/en",
         "token_ids": [TS, 5, 6, TS + 50, TS + 50, 7, TS + 90]},
        {"system": "greedy", "kind": "decoder", "task": "incar/en", "token_ids": [8, 9]},  # without timestamps
        {"system": "tokenmap", "kind": "decoder", "task": "incar/en", "token_ids": [1, 2]},  # not greedy: ignored
        {"system": "greedy", "kind": "e2e", "task": "incar/en", "token_ids": [3]},
    ]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"rows": rows}))
    segs, starts = fair.greedy_segments(path, TS)["incar/en"]
    assert segs == [[5, 6], [7], [8, 9]] and starts == {0, 2}


def test_replay_pays_one_prefill_per_utterance():
    cost = CostModel(10.0, (10.0, 15.0))
    segs = [[5, 6], [7], [8, 9]]
    drafter = SixAfterFive()
    two = fair.replay(drafter, segs, cost, prefill=100.0, starts={0, 2})
    # greedy: 2 x (prefill + end-of-text) + 5 steps = 270 ms; drafted: 6 is verified in a 2-token
    # pass (15 ms) instead of a 10 ms step, and its segment ends there: 275 ms
    assert two["S"] == pytest.approx(270 / 275) and two["passes"] == 5
    assert two["drafted"] == two["accepted"] == 1 and drafter.told == [(1, 1)]
    one = fair.replay(SixAfterFive(), segs, cost, prefill=100.0, starts={0})
    assert one["S"] == pytest.approx(160 / 165)
