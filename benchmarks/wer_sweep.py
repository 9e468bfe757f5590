#!/usr/bin/env python3
"""Choose ``auto``'s margin and minimum per language from dev runs of wer_table.py.

Reads ``wer_table.py --json`` files of one split, each run with one ``--margin``/``--min`` (and the
full-context results, decoded or taken ``--full-from`` a run), and prints, per set and for all sets
pooled, the auto WER of each (margin, min) over the VAD settings the runs hold (pooled), the full-context WER, and
the choice: the lowest WER, ties going to the shorter context (smaller min, then smaller margin),
which is the faster one.

Usage::

    for m in 2 4 6; do for n in 5 8 10; do
      .venv/bin/python benchmarks/wer_table.py --split dev --full-from results/wer/dev.json \\
          --margin $m --min $n --json results/wer/sweep-dev-m$m-n$n.json
    done; done
    .venv/bin/python benchmarks/wer_sweep.py results/wer/sweep-dev-*.json
    .venv/bin/python benchmarks/wer_sweep.py results/wer/sweep-dev-*.json --json results/wer/choice.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def pooled(results: list[dict], context: str, set_name: str | None) -> tuple[int, int]:
    """Summed (edits, words) of ``context`` over the runs' VAD settings, for one set or all (None)."""
    rs = [r for r in results if r["context"] == context and (set_name is None or r["set"] == set_name)]
    return sum(r["edits"] for r in rs), sum(r["words"] for r in rs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("runs", nargs="+", type=Path, help="wer_table.py --json files, one (margin, min) each")
    ap.add_argument("--json", type=Path, help="write the choices here")
    args = ap.parse_args(argv)

    runs = {}
    for path in args.runs:
        data = json.loads(path.read_text(encoding="utf-8"))
        key = (data["params"]["margin_s"], data["params"]["min_s"])
        if key in runs:
            ap.error(f"two runs with margin {key[0]} s, min {key[1]} s: {runs[key][0]} and {path}")
        runs[key] = (path, data)
    splits = {d["params"]["split"] for _, d in runs.values()}
    if len(splits) != 1:
        ap.error(f"runs of several splits: {sorted(splits)}")
    keys = sorted(runs, key=lambda k: (k[1], k[0]))
    first = runs[keys[0]][1]["results"]
    sets = sorted({r["set"] for r in first})
    langs = {r["set"]: r["lang"] for r in first}

    def wer(edits_words: tuple[int, int]) -> float:
        return 100 * edits_words[0] / edits_words[1] if edits_words[1] else float("nan")

    head = "| set | lang | full | " + " | ".join(f"m{m:g} n{n:g}" for m, n in keys) + " | chosen |"
    vads = " and ".join(sorted({r["vad"] for r in first}))
    print(f"auto WER % on {splits.pop()} (VAD {vads}{', pooled' if ' and ' in vads else ''}); "
          f"m = margin s, n = min s\n")
    print(head)
    print("|" + "|".join([" --- "] * (head.count("|") - 1)) + "|")
    choices = {}
    for set_name in sets + [None]:
        full = wer(pooled(first, "full", set_name))
        scores = {k: wer(pooled(runs[k][1]["results"], "auto", set_name)) for k in keys}
        best = min(keys, key=lambda k: (round(scores[k], 6), k[1], k[0]))
        label = set_name or "all"
        choices[label] = {"lang": langs.get(set_name, "all"), "margin_s": best[0], "min_s": best[1],
                          "wer_auto": scores[best], "wer_full": full}
        cells = " | ".join(f"**{scores[k]:.2f}**" if k == best else f"{scores[k]:.2f}" for k in keys)
        print(f"| {label} | {langs.get(set_name, 'all')} | {full:.2f} | {cells} | m{best[0]:g} n{best[1]:g} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(choices, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
