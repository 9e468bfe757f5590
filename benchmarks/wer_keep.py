#!/usr/bin/env python3
"""Keep a short-context WER run of ``wer_table.py`` for docs/BENCHMARKS.md: one table file in results/kept/.

``--test`` is the held-out comparison (one ``--json`` of ``wer_table.py``): a row per set with WER at 30 s and at
the short context, the difference with its paired bootstrap interval, loops and the windows the guard sent back.
``--dev`` (any number of ``--json`` files of a ``--sweep`` on the dev split) makes the table of the choice instead:
a row per configuration, pooled. Then ``make bench-report``.

    .venv/bin/python benchmarks/wer_keep.py --test results/wer69/test-m6-n8.json \\
        --out results/kept/intel-80-wer-sets.json --section "Intel Xeon with AMX" --order 80
    .venv/bin/python benchmarks/wer_keep.py --dev results/wer69/dev-m4-n*.json results/wer69/devm-*.json \\
        --out results/kept/intel-81-short-context-dev.json --section "Intel Xeon with AMX" --order 81
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def signed(x: float) -> str:
    return f"{x:+.2f}".replace("-", "−")


def interval(summary: dict) -> str:
    low, high = summary["delta_ci"]
    return f"{signed(summary['delta'])} [{signed(low)}, {signed(high)}]"


def pooled(run: dict) -> dict:
    return next(s for s in run["summary"] if s["set"] == "all")


def test_table(run: dict) -> tuple[list, list]:
    columns = ["set", "files", "WER 30 s", "WER short", "Δ (points) [95 %]", "loops 30 s / short", "guarded"]
    rows = [[s["set"] if s["set"] != "all" else "**all**", s["files"], f"{s['wer_full']:.2f}", f"{s['wer_auto']:.2f}",
             interval(s), f"{s['loops_full']} / {s['loops_auto']}", s["guarded"]] for s in run["summary"]]
    return columns, rows


def dev_table(runs: list[dict]) -> tuple[list, list]:
    columns = ["margin (s)", "floor (s)", "files", "WER 30 s", "WER short", "Δ (points) [95 %]", "loops", "guarded",
               "speed (same run)"]
    rows = []
    for run in sorted(runs, key=lambda r: (r["params"]["margin_s"], r["params"]["min_s"])):
        s = pooled(run)
        rows.append([run["params"]["margin_s"], run["params"]["min_s"], s["files"], f"{s['wer_full']:.2f}",
                     f"{s['wer_auto']:.2f}", interval(s), f"{s['loops_full']} / {s['loops_auto']}", s["guarded"],
                     f"{s['speed']:.2f}x"])
    return columns, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--test", type=Path, help="a wer_table.py --json of the test split")
    parser.add_argument("--dev", type=Path, nargs="+", help="wer_table.py --json files of a dev sweep")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--section", required=True, help="the CPU kind (results/kept/sections.json)")
    parser.add_argument("--order", type=int, required=True)
    parser.add_argument("--title", default=None)
    parser.add_argument("--text", default="")
    parser.add_argument("--command", action="append", default=[], help="the commands that made the runs")
    parser.add_argument("--encoder-auto", default="")
    parser.add_argument("--note", action="append", default=[])
    args = parser.parse_args()
    if bool(args.test) == bool(args.dev):
        parser.error("give --test or --dev")
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in ([args.test] if args.test else args.dev)]
    columns, rows = test_table(runs[0]) if args.test else dev_table(runs)
    params = runs[0]["params"]
    table = {"section": args.section, "order": args.order,
             "title": args.title or ("The short context on held-out speech" if args.test else
                                     "The short context: the choice on dev files"),
             "text": args.text, "command": args.command, "commit": params["commit"],
             "date": params["time_utc"][:10], "model": params["model"], "compute_type": params["compute_type"],
             "threads": params["threads"], "encoder_auto": args.encoder_auto, "columns": columns,
             "align": "l" + "r" * (len(columns) - 1), "rows": rows, "notes": args.note}
    args.out.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}; now `make bench-report`")


if __name__ == "__main__":
    main()
