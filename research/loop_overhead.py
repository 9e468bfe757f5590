"""How much the Python decoding loop costs over the engine's own greedy ``generate``.

    python research/loop_overhead.py [--task telephony/en] [--n 20] [--reps 5] [--map results/maps/telephony-en.tmap]

Per utterance, interleaved: ``generate`` (greedy), ``decode_window`` with a
drafter that never drafts (``null``: the loop's own overhead), with the map
(``map``) and with the greedy output itself (``oracle``).  Prints sums of
medians and their ratios to greedy, and the decoder passes.

What it showed (10644ea, base int8, 15 Asterisk en prompts, 5 repetitions): the loop
without drafts took 0.978x the time of ``generate`` (no per-pass overhead to win back), the
map 0.81x and the oracle 0.46x; a short prompt's fixed cost (prefill) caps the speed-up.
"""
import argparse
import json
import statistics
import time
from pathlib import Path

import tokenmap_bench
from tokenmap import load_maps, resolve_model
from tokenmap.decode.drafters import FixedDrafter
from tokenmap.decode.reference import GREEDY_KW
from tokenmap.decode.speculative import decode_window
from tokenmap_bench import Recording, features

ROOT = Path(__file__).resolve().parents[1]



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", default="bench-data/full.jsonl")
    ap.add_argument("--task", action="append", default=None, help="domain/lang (repeatable)")
    ap.add_argument("--map", default=None)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--compute-type", default="int8")
    a = ap.parse_args()
    tasks = a.task or ["telephony/en"]
    rows = [json.loads(line) for line in open(ROOT / a.manifest)]
    utts = []
    for t in tasks:
        d, lang = t.split("/")
        utts += [r for r in rows if r["domain"] == d and r["lang"] == lang][: a.n]
    model = resolve_model("base", download=False)
    eng = tokenmap_bench.load_models(Path(model), a.compute_type, 2, None)
    token_map = load_maps(a.map)[0] if a.map else None
    times = {k: [] for k in ("greedy", "null", "map", "oracle")}
    passes = {k: 0 for k in times}
    for i, r in enumerate(utts):
        audio = str(ROOT / "bench-data" / r["audio"])
        mel, _ = features(Recording(r["id"], audio, r["text"], r["domain"], r["lang"]))
        enc = eng.main.encode(mel)
        prompt = eng.prompt(r["lang"], True)
        g = tokenmap_bench.greedy(eng, enc, prompt)
        gt = g().tokens
        runs = {"greedy": g,
                "null": lambda: decode_window(eng.main, enc, prompt, eng.special, FixedDrafter([]), **GREEDY_KW),
                "oracle": tokenmap_bench.oracle(eng, enc, prompt, gt)}
        if token_map is not None:
            runs["map"] = tokenmap_bench.speculative(eng, enc, prompt, token_map, "s")
        per = {k: [] for k in runs}
        for _ in range(a.reps):
            for k, run in runs.items():
                t0 = time.perf_counter()
                out = run()
                per[k].append(time.perf_counter() - t0)
                if _ == 0 and k != "greedy":
                    st = out.stats if hasattr(out, "stats") else out.stats.as_dict()
                    passes[k] += (st.passes if hasattr(st, "passes") else st.get("passes", 0))
        passes["greedy"] += len(gt) + 1
        for k in runs:
            times[k].append(statistics.median(per[k]))
        print(i, r["id"], {k: round(v[-1] * 1000, 1) for k, v in times.items() if v}, flush=True)
    g = sum(times["greedy"])
    for k, v in times.items():
        if v:
            print(f"{k:7s} sum {sum(v):7.3f} s  ratio to greedy {sum(v) / g:5.3f}  passes {passes[k]}")


if __name__ == "__main__":
    main()
