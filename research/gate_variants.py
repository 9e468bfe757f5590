"""Would another window-gate rule pay? Replay each rule per task, with the loop's Python per pass.

    python research/gate_variants.py results/<run>/results.json [--overhead-ms 0.8] [--prefill-ms 75]

Replays every drafting system of a `tokenmap bench` run as `research/replay_bench.py` does
(the run's maps and cost curve scaled by the fit of its greedy decodes, one ControllerSet per
task, its repetitions), once per gate rule, with ``ControllerSet.use_speculation`` swapped
for the rule. A speculative window also pays ``--overhead-ms`` per pass (the decoding loop's
Python, which plain ``generate`` does not pay), and every window the fixed ``--prefill-ms``.
Rules:

* ``current``: the rule in tokenmap (a tried controlled source pays, none tried, or the map
  pays; and the windows decoded with drafts have not lost against ``generate`` on the whole,
  ``ControllerSet.record_window``, unless a tried controlled source pays);
* ``tried``: sources that have never drafted keep the gate open only while no source has drafted
  (this and the rules below leave the window account out);
* ``explore-N``: as ``tried``, but untried sources keep it open for the task's first N windows;
* ``evidence-N``: untried sources keep it open unless the map has failed over at least N drafts.

Prints replayed S per regime (voice-bound tasks included) and per task for ``tokenmap``.
"""
import argparse
import collections
import json
from pathlib import Path

from replay_bench import CONTROLLER_KEY, fit_greedy, map_key

from tokenmap import load_maps, resolve_model
from tokenmap.decode.control import ControllerSet
from tokenmap.decode.cost import CostModel
from tokenmap.decode.drafters import FixedDrafter, default_drafter
from tokenmap.decode.replay import replay_window
from tokenmap.decode.special import SpecialTokens

ROOT = Path(__file__).resolve().parents[1]

CURRENT = ControllerSet.use_speculation


def evidence(drafts: int):
    """The gate rule that lets untried sources keep it open unless the map has failed over at least
    ``drafts`` verified drafts."""
    def rule(self):
        tried = [m for m in self.members if m.verified]
        cal = self.tally(0)
        pays = any(m.best()[1] > m.margin_ms for m in tried)
        map_pays = cal.drafts > 0 and cal.saving_ms > self.margin_ms
        map_failed = cal.drafts >= drafts and not map_pays
        return self._gate.decide(bool(pays or map_pays or (not tried and not map_failed)))
    return rule


def explore(windows: int):
    """The gate rule that lets untried sources keep it open for the first ``windows`` windows only
    once a source has drafted (``windows`` = 0: never)."""
    def rule(self):
        self._seen = getattr(self, "_seen", 0) + 1
        tried = [m for m in self.members if m.verified]
        map_tried = self.tally(0).drafts > 0
        pays = any(m.best()[1] > m.margin_ms for m in tried)
        map_pays = map_tried and self.tally(0).saving_ms > self.margin_ms
        untried = not tried and (not map_tried or self._seen <= windows)
        return self._gate.decide(bool(pays or map_pays or untried))
    return rule


def replay_rule(run, maps, special, cost, overhead_ms: float, prefill_ms: float) -> dict:
    greedy = {r["id"]: r for r in run["rows"] if r["system"] == "greedy"}
    _, per_token = fit_greedy(list(greedy.values()))
    scale = per_token / cost.step_ms
    tb, sums, controller_sets = special.timestamp_begin, collections.defaultdict(lambda: [0.0, 0.0]), {}
    for row in (r for r in run["rows"] if r["system"] in CONTROLLER_KEY):
        g, system = greedy[row["id"]], row["system"]
        ctl = controller_sets.setdefault(CONTROLLER_KEY[system].format(task=g["task"]), ControllerSet(cost))
        ms = []
        for _ in range(run["options"]["reps"]):
            if not ctl.use_speculation():
                st = replay_window(FixedDrafter([]), g["token_ids"], special.eot, True, tb, cost, feed=2)
                ms.append(st.greedy_ms * scale)
                continue
            d = default_drafter(maps[map_key(system, row)], tb, controllers=ctl, eot=special.eot, cost=cost,
                                seconds=min(g["audio_s"], 30.0) or None)
            st = replay_window(d, g["token_ids"], special.eot, True, tb, cost, feed=2)
            ctl.record_window(st)
            ms.append(st.ms * scale + overhead_ms * st.passes)
        for key in ((system, g["regime"]), (system, g["task"])):
            sums[key][0] += sorted(ms)[len(ms) // 2] + prefill_ms
            sums[key][1] += st.greedy_ms * scale + prefill_ms
    return {key: greedy_ms / ms for key, (ms, greedy_ms) in sorted(sums.items())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--overhead-ms", type=float, default=0.8, help="the loop's Python per pass")
    ap.add_argument("--prefill-ms", type=float, default=75.0, help="a window's fixed cost (prefill)")
    args = ap.parse_args()
    run = json.loads(Path(args.results).read_text())
    cost = CostModel.from_json(run["cost_model"])
    special = SpecialTokens.from_model_dir(str(resolve_model(run["options"]["model"], download=False)))
    where = Path(args.results).resolve().parents[2]
    maps = {k: load_maps(where / v)[0] for k, v in run["maps"].items() if isinstance(v, str)}
    rules = {"current": CURRENT, "tried": explore(0), "explore-3": explore(3), "explore-6": explore(6),
             "evidence-5": evidence(5), "evidence-10": evidence(10), "evidence-20": evidence(20)}
    try:
        for name, rule in rules.items():
            ControllerSet.use_speculation = rule
            result = replay_rule(run, maps, special, cost, args.overhead_ms, args.prefill_ms)
            shown = [(k, v) for k, v in result.items() if "/" not in k[1] or k[0] == "tokenmap"]
            print(f"{name:10s} " + " ".join(f"{s.replace('tokenmap', 'tm')}:{t} {v:.3f}" for (s, t), v in shown),
                  flush=True)
    finally:
        ControllerSet.use_speculation = CURRENT


if __name__ == "__main__":
    main()
