"""The fairness replay on a bench run's greedy outputs: segment cutting and the prefill count."""
import importlib.util
import json
from pathlib import Path

import pytest

from tokenmap.decode.cost import CostModel
from tokenmap_bench import fairness as fair

_RESEARCH = Path(__file__).resolve().parent.parent / "research"

TS = 1000  # timestamp_begin of this toy vocabulary


class SixAfterFive:
    """Drafts 6 after 5, else nothing."""

    BOS = -1

    def draft(self, context):
        return [6] if context[-1] == 5 else []


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
    two = fair.replay(SixAfterFive(), segs, cost, prefill=100.0, starts={0, 2})
    # greedy: 2 x (prefill + end-of-text) + 5 steps = 270 ms; drafted: 6 is verified in a 2-token
    # pass (15 ms) instead of a 10 ms step, and its segment ends there: 275 ms
    assert two["S"] == pytest.approx(270 / 275) and two["passes"] == 5
    assert two["drafted"] == two["accepted"] == 1
    one = fair.replay(SixAfterFive(), segs, cost, prefill=100.0, starts={0})
    assert one["S"] == pytest.approx(160 / 165)


def test_map_set_infers_the_task_from_the_emitted_tokens():
    spec = importlib.util.spec_from_file_location("research_map_inference", _RESEARCH / "map_inference.py")
    inf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(inf)

    class Next:  # drafts the next two tokens of its own counting sequence
        BOS = -1

        def __init__(self, step):
            self.step = step

        def draft(self, context):
            last = context[-1]
            return [] if last < 0 else [last + self.step, last + 2 * self.step]

    cost = CostModel(10.0, (10.0, 11.0, 12.0))
    maps = {"ones": Next(1), "twos": Next(2)}
    segs, starts = [list(range(0, 40, 2))], {0}  # the "twos" task
    known = inf.replay_set(maps, segs, starts, cost, fixed="twos")
    inferred = inf.replay_set(maps, segs, starts, cost)
    wrong = inf.replay_set(maps, segs, starts, cost, fixed="ones")
    assert known["A_r"] == 1.0 and known["S"] > 1.5
    assert wrong["A_r"] == 0.0 and wrong["S"] == pytest.approx(1.0)  # its score never turns positive: no drafts
    assert 1.3 < inferred["S"] <= known["S"] and inferred["A_r"] == 1.0  # after one pass it asks "twos"
