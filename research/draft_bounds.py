"""How much would a perfect guess at one place of a window be worth? Replay bounds, no model.

    python research/draft_bounds.py results/<run>/results.json [--first 0,1,3,50] [--closing]

Replays the scripted regime of a `tokenmap bench` run as `research/replay_bench.py` does
(the run's maps and cost curve, one ControllerSet per task, the window gate, its
repetitions; decoder time scaled by a straight-line fit of the run's greedy times) with
one place of the drafter replaced by the truth:

* ``--first K``: the window's first draft after ``<|0.00|>`` is the greedy output's first K
  tokens (at most up to its first closing timestamp); K = 0 is the drafter as it is;
* ``--closing``: the guessed closing timestamp of a window is the one the model wrote.

Prints the replayed S per system and set. The fit leaves out the Python of a pass, so the
levels run above the audio's; compare rows with each other.
"""
import argparse
import collections
import json
from pathlib import Path

from replay_bench import CONTROLLER_KEY, fit_greedy, map_key

from tokenmap import load_maps, resolve_model
from tokenmap.decode import follow
from tokenmap.decode.control import ControllerSet
from tokenmap.decode.cost import CostModel
from tokenmap.decode.drafters import FixedDrafter, default_drafter
from tokenmap.decode.replay import replay_window
from tokenmap.decode.special import SpecialTokens

ROOT = Path(__file__).resolve().parents[1]


class FirstTruth:
    """A drafter whose first draft after ``<|0.00|>`` is the truth's next ``k`` tokens (up to a timestamp)."""

    def __init__(self, inner, truth, k: int, timestamp_begin: int):
        self.inner, self.truth, self.k, self.tb = inner, list(truth), k, timestamp_begin

    def reset(self, history=()):
        self.inner.reset(history)

    def draft(self, tokens, limit):
        proposal = self.inner.draft(tokens, limit)  # the drafter sees every context, as in a real run
        if self.k and list(tokens) == [self.tb] and self.truth[:1] == [self.tb]:
            out = []
            for t in self.truth[1:]:
                out.append(t)
                if t >= self.tb:
                    break
            return out[: self.k]
        return proposal

    def update(self, drafted, accepted):
        self.inner.update(drafted, accepted)


def replay_run(run, maps, special, cost, first: int) -> dict:
    greedy = {r["id"]: r for r in run["rows"] if r["system"] == "greedy"}
    fixed, per_token = fit_greedy(list(greedy.values()))
    scale = per_token / cost.step_ms
    tb, sums, controller_sets = special.timestamp_begin, collections.defaultdict(lambda: [0.0, 0.0]), {}
    for row in (r for r in run["rows"] if r["system"] in ("tokenmap", "tokenmap-learned")):
        g = greedy[row["id"]]
        if g["regime"] != "scripted":
            continue
        ctl = controller_sets.setdefault(CONTROLLER_KEY[row["system"]].format(task=g["task"]), ControllerSet(cost))
        ms = []
        for _ in range(run["options"]["reps"]):
            if not ctl.use_speculation():
                st = replay_window(FixedDrafter([]), g["token_ids"], special.eot, True, tb, cost, feed=2)
                ms.append(st.greedy_ms)
                continue
            d = default_drafter(maps[map_key(row["system"], row)], tb, controllers=ctl, eot=special.eot, cost=cost,
                                seconds=min(g["audio_s"], 30.0) or None)
            st = replay_window(FirstTruth(d, g["token_ids"], first, tb), g["token_ids"], special.eot, True, tb, cost,
                               feed=2)
            ctl.record_window(st)
            ms.append(st.ms)
        key = (row["system"], g["set"])
        sums[key][0] += sorted(ms)[len(ms) // 2] * scale + fixed
        sums[key][1] += st.greedy_ms * scale + fixed
    return {key: greedy_ms / ms for key, (ms, greedy_ms) in sorted(sums.items())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--first", default="0,1,3,50", help="K values for the first draft's truth (0: as it is)")
    ap.add_argument("--closing", action="store_true", help="also replay with the true closing timestamps")
    args = ap.parse_args()
    run = json.loads(Path(args.results).read_text())
    cost = CostModel.from_json(run["cost_model"])
    special = SpecialTokens.from_model_dir(str(resolve_model(run["options"]["model"], download=False)))
    where = Path(args.results).resolve().parents[2]
    maps = {k: load_maps(where / v)[0] for k, v in run["maps"].items() if isinstance(v, str)}
    variants = [(f"first {k}", int(k), False) for k in args.first.split(",")]
    if args.closing:
        variants.append(("true closing", 0, True))
    guess = follow.closing_timestamp
    tb = special.timestamp_begin
    truth = {round(min(r["audio_s"], 30.0), 6): [t for t in r["token_ids"] if t >= tb][-1]
             for r in run["rows"] if r["system"] == "greedy" and any(t >= tb for t in r["token_ids"])}
    for name, k, closing in variants:
        follow.closing_timestamp = ((lambda s, tb, m=30.0: truth.get(round(s, 6)) if s else None) if closing
                                    else guess)
        result = replay_run(run, maps, special, cost, k)
        print(f"{name:13s} " + "  ".join(f"{s}/{t} {v:.3f}" for (s, t), v in result.items()), flush=True)
    follow.closing_timestamp = guess


if __name__ == "__main__":
    main()
