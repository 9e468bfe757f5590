"""Decoder speed-up on real speech per regime, interleaved: plain greedy against tokenmap.

    python research/scripted_bench.py --set telephony --reps 3 [--no-timestamps] [--corpus-only] [--no-guess]

Scripted regime (default): each task's map is built from its whole phrase inventory
(corpora/<task>/train.txt + test.txt), as an IVR operator would build it.
``--corpus-only`` builds from train.txt alone (held-out prompts).
Per utterance, both systems run on the same encoder output in alternating order;
S = sum of greedy decoder seconds / sum of tokenmap decoder seconds, per task.
Also prints A_r, tokens per pass and the identity of the outputs.
"""
import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

from tokenmap import load_maps, resolve_model
from tokenmap.build.builder import BuildOptions, build_map
from tokenmap.decode.control import ControllerSet
from tokenmap.decode.cost import load_cost_model
from tokenmap.decode.drafters import default_drafter
from tokenmap.decode.reference import GREEDY_KW
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import DecodeStats, decode_window
from tokenmap_bench import features, load_manifest

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", default=str(ROOT / "bench-data/manifest.jsonl"))
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--task", action="append", default=[])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0, help="utterances per task (0: all)")
    ap.add_argument("--no-timestamps", action="store_true")
    ap.add_argument("--corpus-only", action="store_true")
    ap.add_argument("--compute-type", default="int8")
    ap.add_argument("--teacher", default="", help="JSON lines (text, domain, lang) of the model's transcripts of "
                    "other recordings (benchmarks/telephone_teacher.py): the learned map")
    ap.add_argument("--no-guess", action="store_true", help="also run tokenmap without the window's audio length "
                    "(no closing-timestamp guess), as system tokenmap-noguess")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    import ctranslate2
    model_dir = resolve_model("base", download=False)
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type=args.compute_type, intra_threads=2)
    special = SpecialTokens.from_model_dir(str(model_dir))
    vocab = (model_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    index = {t: i for i, t in enumerate(vocab)}
    cost = load_cost_model(model_dir, args.compute_type, 2)
    utts = [u for u in load_manifest(args.manifest)
            if (not args.set or u.set in args.set) and (not args.task or u.task in args.task)]
    per_task = collections.defaultdict(list)
    for u in utts:
        if not args.limit or len(per_task[u.task]) < args.limit:
            per_task[u.task].append(u)
    tmp = Path(tempfile.mkdtemp(prefix="scripted-"))
    maps = {}
    for task in per_task:
        files = [ROOT / "corpora" / task / "train.txt"]
        if not args.corpus_only:
            files.append(ROOT / "corpora" / task / "test.txt")
        teacher = []
        if args.teacher:
            lines = [r["text"] for r in map(json.loads, Path(args.teacher).read_text().splitlines())
                     if f"{r['domain']}/{r['lang']}" == task]
            teacher = [tmp / f"{task.replace('/', '-')}-teacher.txt"]
            teacher[0].write_text("\n".join(lines) + "\n")
        build_map([str(f) for f in files if f.exists()], tmp / f"{task.replace('/', '-')}.tmap", model="base",
                  options=BuildOptions(jobs=1), cost=cost, teacher=teacher, teacher_copies=2)
        maps[task] = load_maps(tmp / f"{task.replace('/', '-')}.tmap")[0]
    print(f"cost model: {cost.source}", file=sys.stderr)
    rows = []
    systems = ["tokenmap"] + (["tokenmap-noguess"] if args.no_guess else [])
    controllers = {(name, task): ControllerSet(cost) for task in per_task for name in systems}
    t_start = time.time()
    for i, u in enumerate(u for task in per_task for u in per_task[task]):
        mel, audio_s = features(u)
        enc = model.encode(mel)
        prompt = [special.sot, index[f"<|{u.lang}|>"], index["<|transcribe|>"]]
        if args.no_timestamps:
            prompt.append(special.no_timestamps)
        times = {name: [] for name in ["greedy", *systems]}
        out = {}
        for rep in range(args.reps):
            order = list(times)
            shift = (rep + i) % len(order)
            for name in order[shift:] + order[:shift]:
                t0 = time.perf_counter()
                if name == "greedy":
                    res = model.generate(enc, [prompt], **GREEDY_KW)[0]
                    out[name] = (res.sequences_ids[0], None)
                else:
                    seconds = min(audio_s, 30.0) if name == "tokenmap" else None
                    drafter = default_drafter(maps[u.task], special.timestamp_begin,
                                              controllers=controllers[name, u.task], eot=special.eot, cost=cost,
                                              seconds=seconds)
                    r = decode_window(model, enc, prompt, special, drafter, **GREEDY_KW)
                    out[name] = (r.tokens, r.stats)
                times[name].append(time.perf_counter() - t0)
        row = {"id": u.id, "task": u.task, "greedy_s": min(times["greedy"]),
               "greedy_med": sorted(times["greedy"])[len(times["greedy"]) // 2]}
        for name in systems:
            stats: DecodeStats = out[name][1]
            row[name] = {"s": min(times[name]), "med": sorted(times[name])[len(times[name]) // 2],
                         "identical": out["greedy"][0] == out[name][0], "tokens": stats.tokens,
                         "passes": stats.passes - 1, "drafted": stats.drafted, "accepted": stats.accepted,
                         "drafts": stats.drafts}
        rows.append(row)
        if i % 20 == 0:
            print(f"{i} utterances, {time.time() - t_start:.0f} s", file=sys.stderr)
    if args.out:
        Path(args.out).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    for name in systems:
        print(f"== {name}")
        report(rows, name)


def report(rows, name="tokenmap"):
    by = collections.defaultdict(list)
    for r in rows:
        by[r["task"]].append(r)
    by["ALL"] = rows
    print(f"{'task':16s} {'n':>4s} {'S(med)':>7s} {'S(min)':>7s} {'A_r':>5s} {'A_l':>5s} "
          f"{'tok/pass':>8s} {'ident':>6s}")
    for task, rs in by.items():
        ss = [r[name] for r in rs]
        s_med = sum(r["greedy_med"] for r in rs) / sum(x["med"] for x in ss)
        s_min = sum(r["greedy_s"] for r in rs) / sum(x["s"] for x in ss)
        drafted = sum(x["drafted"] for x in ss)
        acc = sum(x["accepted"] for x in ss)
        drafts = sum(x["drafts"] for x in ss)
        tpp = sum(x["tokens"] for x in ss) / max(1, sum(x["passes"] for x in ss))
        ident = sum(x["identical"] for x in ss) / len(rs)
        print(f"{task:16s} {len(rs):4d} {s_med:7.3f} {s_min:7.3f} {acc / max(drafted, 1):5.2f} "
              f"{acc / max(drafts, 1):5.2f} {tpp:8.2f} {ident:6.1%}")


if __name__ == "__main__":
    main()
