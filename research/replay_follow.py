"""Replay FollowDrafter on recorded greedy streams (research/record_greedy.py), no model.

    python research/replay_follow.py results/greedy-tel.jsonl [--inventory] [--teacher FILE] [--conf 0.95]

Maps: per task, from corpora/<domain>/<lang>/train.txt (plus test.txt with --inventory,
the scripted regime: the map holds the whole phrase inventory).
"""
import argparse
import collections
import json
from pathlib import Path

import numpy as np

from tokenmap.build.builder import encode_texts
from tokenmap.decode.cost import DEFAULT, CostModel
from tokenmap.decode.follow import Calibration, FollowDrafter, FollowOptions
from tokenmap.models import resolve_model
from tokenmap.decode.replay import ReplayStats, replay_window
from tokenmap.decode.rules import SpecialTokens
from tokenmap.build.style import StyleOptions
from tokenmap.maps.suffixmap import SuffixMap
from tokenmap.textok import TextTokenizer

ROOT = Path(__file__).resolve().parents[1]


def corpus_lines(task, inventory):
    d = ROOT / "corpora" / task
    files = [d / "train.txt"] + ([d / "test.txt"] if inventory else [])
    return [l.strip() for f in files if f.exists() for l in f.read_text().splitlines() if l.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("streams", nargs="+")
    ap.add_argument("--inventory", action="store_true")
    ap.add_argument("--teacher", action="append", default=[])
    ap.add_argument("--conf", type=float, default=0.8)
    ap.add_argument("--teacher-copies", type=int, default=2)
    ap.add_argument("--depth", type=int, default=24)
    ap.add_argument("--min-count", type=int, default=1)
    ap.add_argument("--cost", default="", help="a calibration JSON (tokenmap calibrate); default: the built-in curve")
    ap.add_argument("--prefill-ms", type=float, default=None, help="default: the cost model's prefill")
    ap.add_argument("--no-guess", action="store_true", help="ignore the streams' audio lengths (no closing-timestamp guess)")
    args = ap.parse_args()
    model_dir = resolve_model("base", download=False)
    tok = TextTokenizer.from_file(model_dir / "tokenizer.json")
    special = SpecialTokens.from_model_dir(str(model_dir))
    cost = CostModel.from_json(json.loads(Path(args.cost).read_text())) if args.cost else DEFAULT
    if args.prefill_ms is None:
        args.prefill_ms = cost.prefill_ms
    rows = [json.loads(l) for s in args.streams for l in open(s)]
    teacher = collections.defaultdict(list)
    for t in args.teacher:
        for l in open(t):
            r = json.loads(l)
            teacher[r.get("task") or f"{r['domain']}/{r['lang']}"].append(r["text"])
    by_task = collections.defaultdict(list)
    for r in rows:
        by_task[r["task"]].append(r)
    total = ReplayStats()
    for task, rs in sorted(by_task.items()):
        stream = np.frombuffer(encode_texts(corpus_lines(task, args.inventory), tok, StyleOptions(), False),
                               dtype=np.uint32)
        taught = np.frombuffer(encode_texts(teacher.get(task, []), tok, StyleOptions(False, False, False), False),
                               dtype=np.uint32)
        stream = np.concatenate([stream, *[taught] * args.teacher_copies])
        sm = SuffixMap.from_stream(stream, tok.vocab_size, tok.vocab_size + 1, args.depth, args.min_count)
        calibration = Calibration()
        st = ReplayStats()
        for r in rs:
            seconds = None if args.no_guess else r.get("seconds")
            d = FollowDrafter(sm, special.timestamp_begin, special.eot, cost, FollowOptions(confidence=args.conf),
                              calibration=calibration, seconds=seconds)
            ts = r["prompt"][-1] != special.no_timestamps
            st.add(replay_window(d, r["tokens"], special.eot, ts, special.timestamp_begin, cost,
                                 feed=len(r["prompt"]) - 1))
        dd = st.as_dict(prefill_ms=args.prefill_ms, windows=len(rs))
        print(f"{task:20s} n={len(rs):4d} nodes={sm.num_nodes:8d} tok/pass={dd['tokens_per_pass']:.2f} "
              f"A_r={dd['acceptance_rate']:.2f} A_l={dd['acceptance_length']:.2f} S_dec={dd['speedup']:.3f} "
              f"S_noprefill={st.greedy_ms / st.ms:.3f}")
        total.add(st)
    dd = total.as_dict(prefill_ms=args.prefill_ms, windows=len(rows))
    print(f"{'ALL':20s} n={len(rows):4d} tok/pass={dd['tokens_per_pass']:.2f} A_r={dd['acceptance_rate']:.2f} "
          f"S_dec={dd['speedup']:.3f}")


if __name__ == "__main__":
    main()
