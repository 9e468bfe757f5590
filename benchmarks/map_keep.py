#!/usr/bin/env python3
"""The kept table "Map against no map" from ``make bench-map``'s result files (results/map/).

    python benchmarks/map_keep.py --section "$(python benchmarks/report.py kind)" --out results/kept/X-45-map.json

Each ``window_profile.py`` file (``--json``) gives, per audio context, every file's time with its map and
without; a row is their summed no-map time over the map's, end to end and for the decoder alone (prefill,
passes, the loop's Python, plain ``generate``), each with its 95 % paired bootstrap interval over files,
and the acceptance of the map's drafts. ``long_bench.py --json`` gives the 3 min file: the best wall time
of its repetitions without a map over the same system's with it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
from pathlib import Path

from tokenmap_bench import speedup_interval

ROOT = Path(__file__).resolve().parent.parent
DECODER = ("prefill", "passes", "python", "generate")
#: (file in results/map, what it holds, its map) in the table's order
PROFILES = (("calls.json", "Asterisk prompts back to back, dense call windows", "the prompt inventory"),
            ("prompts.json", "Asterisk prompts, every 3rd of the test split", "the prompt inventory"),
            ("librivox.json", "LibriVox readings", "the book's text"),
            ("prompts-wrong-map.json", "Asterisk prompts, every 3rd", "another domain's (maintenance, en)"),
            ("dictation-wrong-map.json", "dictation windows, TTS", "another domain's (telephony, en)"))
CONTEXTS = {"full": "30 s", "auto": "`auto`"}


def _decoder(side: dict) -> float:
    return sum(side[k] for k in DECODER)


def _ratio(rows: list[dict], measure) -> str:
    pairs = [(measure(r["nomap"]), measure(r["map"])) for r in rows]
    ratio = sum(p[0] for p in pairs) / sum(p[1] for p in pairs)
    low, high = speedup_interval(pairs)
    return f"{ratio:.2f} [{low:.2f}, {high:.2f}]"


def profile_rows(path: Path, what: str, map_name: str) -> list[list]:
    out = []
    for context, result in json.loads(path.read_text(encoding="utf-8")).items():
        rows = result["rows"]
        drafted = sum(r["map"]["drafted"] for r in rows)
        passes = sum(r["map"]["n_passes"] for r in rows)
        out.append([f"{what} ({len(rows)})", map_name, CONTEXTS.get(context, context),
                    _ratio(rows, lambda side: side["total"]), _ratio(rows, _decoder),
                    f"{100 * sum(r['map']['accepted'] for r in rows) / drafted:.1f}" if drafted else "–",
                    f"{sum(r['map']['tokens'] for r in rows) / passes:.2f}" if passes else "–",
                    f"{sum(r['map']['text'] == r['nomap']['text'] for r in rows)}/{len(rows)}"])
    return out


def long_rows(path: Path) -> list[list]:
    runs = json.loads(path.read_text(encoding="utf-8"))
    best = {s: min(r["wall"] for r in rs) for s, rs in runs["runs"].items()}
    out = []
    for system in best:
        if system.endswith("-map") and system[:-4] in best:
            mode = "`--batch-size 8`" if "batch" in system else "sequential"
            same = runs["runs"][system][0]["text"] == runs["runs"][system[:-4]][0]["text"]
            out.append([f"a {runs['minutes']:g} min file of prompts and readings, VAD on, {mode}", "the English "
                        "prompt inventory", "30 s", f"{best[system[:-4]] / best[system]:.2f}", "–", "–", "–",
                        "1/1" if same else "0/1"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=ROOT / "results" / "map")
    ap.add_argument("--section", required=True, help="the CPU kind (benchmarks/report.py kind)")
    ap.add_argument("--order", type=int, default=45)
    ap.add_argument("--encoder-auto", default="", help="what `tokenmap doctor` says auto encodes with")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    rows = []
    for name, what, map_name in PROFILES:
        if (args.results / name).is_file():
            rows += profile_rows(args.results / name, what, map_name)
    if (args.results / "long.json").is_file():
        rows += long_rows(args.results / "long.json")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    table = {"section": args.section, "order": args.order, "title": "Map against no map, end to end",
             "text": "Each file transcribed by the default configuration (greedy, temperature 0) with its map and "
                     "without one, alternating, fresh draft controllers per file; no-map time over map time (> 1: "
                     "the map is faster), summed over the files, end to end and for the decoder alone, each with "
                     "its 95 % paired bootstrap interval over files. A_r and tokens per verify pass are the map's. "
                     "The maps hold the prompts' text, never their recordings.",
             "command": "make bench-map", "commit": commit.strip(), "date": datetime.date.today().isoformat(),
             "model": "base", "compute_type": "int8", "threads": 2, "encoder_auto": args.encoder_auto,
             "columns": ["workload (files)", "map", "context", "end to end [95 % CI]", "decoder [95 % CI]", "A_r %",
                         "tokens a pass", "texts equal"],
             "align": "lllrrrrl", "rows": rows, "notes": []}
    args.out.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
