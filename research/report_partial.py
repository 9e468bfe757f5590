"""Report a `tokenmap bench` run from its rows.partial.jsonl (a run that stopped before its report).

    python research/report_partial.py results/<run>/rows.partial.jsonl --command "make bench" \
        [--update-docs docs/FULL_RUN.md]

Writes results.json, report.md and the plots beside the rows (:func:`tokenmap_bench.report_partial`).
The options are those of `make bench`.
"""
import argparse
from pathlib import Path

from tokenmap_bench import BenchOptions, report_partial


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", type=Path)
    ap.add_argument("--command", default="make bench")
    ap.add_argument("--manifest", type=Path, default=Path("bench-data/full.jsonl"))
    ap.add_argument("--learn", default="bench-data/teacher-train.jsonl")
    ap.add_argument("--update-docs", type=Path, default=None)
    args = ap.parse_args()
    options = BenchOptions(map_modes=("per-task", "inferred"), heavy_per_group=2, learn=args.learn)
    out = report_partial(args.rows, options, args.manifest, args.command, args.update_docs)
    print(f"reported {args.rows} in {out}")


if __name__ == "__main__":
    main()
