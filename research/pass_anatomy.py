"""Where do a drafter's passes go? A model-free replay of a `tokenmap bench` run, pass by pass.

    python research/pass_anatomy.py results/<run>/results.json [--task telephony/en] [--system tokenmap]

Replays the run's drafter (its map, cost curve and window audio lengths, one ControllerSet per
task as the bench keeps them) on the greedy token ids the run recorded, and sorts every pass by
where it starts: at the window's start, at a segment start (after a timestamp), or inside text.
For each kind: passes, tokens decided, drafts, drafted and accepted tokens, and how many drafts
were rejected at their first token. For drafts rejected inside text it also says whether the
model's token was a continuation the map knew at that point (a wrong branch) or not (wording
the map has never seen).
"""
import argparse
import collections
import json
from pathlib import Path

from replay_bench import CONTROLLER_KEY, map_key

from tokenmap import load_maps, resolve_model
from tokenmap.decode.control import ControllerSet
from tokenmap.decode.cost import CostModel
from tokenmap.decode.drafters import default_drafter
from tokenmap.decode.follow import FollowDrafter
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import window_draft

ROOT = Path(__file__).resolve().parents[1]


def follow_of(drafter):
    """The FollowDrafter inside a default_drafter chain (None if there is none)."""
    stack = [drafter]
    while stack:
        d = stack.pop()
        if isinstance(d, FollowDrafter):
            return d
        stack.extend(getattr(d, "drafters", []) or [])
        inner = getattr(d, "drafter", None)
        if inner is not None:
            stack.append(inner)
    return None


SHOW, DECODE = False, None


def kind_of(tokens, ts0) -> str:
    if not tokens:
        return "window start"
    if tokens[-1] >= ts0:
        return "after a timestamp"
    return "inside text"


def replay(drafter, truth, special, with_ts, out):
    """One window, pass by pass, into ``out[kind]`` counters (the loop of tokenmap.decode.replay)."""
    target = list(truth) + [special.eot]
    tokens: list[int] = []
    drafter.reset(())
    follow = follow_of(drafter)
    while len(tokens) < len(target):
        kind = kind_of(tokens, special.timestamp_begin)
        node = follow._node if follow is not None else None
        draft = window_draft(drafter, tokens, with_ts, special.timestamp_begin, 64)
        rest = target[len(tokens):]
        k = 0
        while k < len(draft) and k < len(rest) and draft[k] == rest[k]:
            k += 1
        c = out[kind]
        c["passes"] += 1
        c["tokens"] += min(k + 1, len(rest))
        if draft:
            drafter.update(len(draft), k)
            c["drafts"] += 1
            c["drafted"] += len(draft)
            c["accepted"] += k
            c["rejected at first"] += k == 0
            if kind == "inside text" and k == 0 and follow is not None and node is not None:
                known = follow.map.child(node, rest[0]) > 0
                c["first rejected: map knew the token" if known else "first rejected: unseen"] += 1
                if SHOW and not known:
                    print("   unseen:", repr(DECODE(tokens[-6:])), "drafted", repr(DECODE(draft[:4])),
                          "model", repr(DECODE(rest[:4])))
        tokens.extend(rest[: k + 1])


def run_model(results: str) -> str:
    return json.loads(Path(results).read_text())["options"]["model"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--task", default="telephony/en")
    ap.add_argument("--system", default="tokenmap", choices=sorted(CONTROLLER_KEY))
    ap.add_argument("--set", default=None, help="only utterances of this set (telephony, calls, dictation, ...)")
    ap.add_argument("--show", action="store_true", help="print each draft rejected at a token the map never saw")
    args = ap.parse_args()
    global SHOW, DECODE
    if args.show:
        from tokenmap.textok import TextTokenizer
        tok = TextTokenizer.from_file(resolve_model(run_model(args.results), download=False) / "tokenizer.json")
        SHOW, DECODE = True, lambda ids: tok.decode([t for t in ids if t < 50257])
    run = json.loads(Path(args.results).read_text())
    cost = CostModel.from_json(run["cost_model"])
    special = SpecialTokens.from_model_dir(str(resolve_model(run["options"]["model"], download=False)))
    where = Path(args.results).resolve().parents[2]
    maps = {k: load_maps(where / v)[0] for k, v in run["maps"].items() if isinstance(v, str)}
    greedy = {r["id"]: r for r in run["rows"] if r["system"] == "greedy"}
    ctl = ControllerSet(cost)
    out = collections.defaultdict(collections.Counter)
    n = 0
    for row in run["rows"]:
        g = greedy.get(row["id"])
        if row["system"] != args.system or g is None or g["task"] != args.task:
            continue
        if args.set and g.get("set") != args.set:
            continue
        n += 1
        drafter = default_drafter(maps[map_key(args.system, row)], special.timestamp_begin, controllers=ctl,
                                  eot=special.eot, cost=cost, seconds=min(g["audio_s"], 30.0) or None)
        replay(drafter, g["token_ids"], special, run["options"]["timestamps"], out)
    print(f"{args.system} on {args.task}{' / ' + args.set if args.set else ''}: {n} windows")
    total = sum(c["passes"] for c in out.values())
    for kind, c in out.items():
        print(f"{kind:18s} passes {c['passes']:4d} ({c['passes'] / total:4.0%}) tokens {c['tokens']:4d} "
              f"drafts {c['drafts']:4d} drafted {c['drafted']:4d} accepted {c['accepted']:4d} "
              f"rejected at first {c['rejected at first']:4d}")
        extra = {k: v for k, v in c.items() if k.startswith("first rejected")}
        if extra:
            print("   ", ", ".join(f"{k}: {v}" for k, v in extra.items()))


if __name__ == "__main__":
    main()
