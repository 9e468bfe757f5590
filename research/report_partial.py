"""Report a `tokenmap bench` run from its rows.partial.jsonl (a run stopped before its end).

    python research/report_partial.py results/<run>/rows.partial.jsonl --command "make bench" [--update-docs docs/BENCHMARKS.md]

Writes results.json, report.md and the plots beside the rows, with every aggregate
of a finished run but the cross-entropy fairness; the header says how many utterances ran.
"""
import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tokenmap_bench.aggregate import aggregate  # noqa: E402
from tokenmap_bench.data import machine_info  # noqa: E402
from tokenmap_bench.harness import BenchOptions  # noqa: E402
from tokenmap_bench.report import markdown, update_docs, write_all  # noqa: E402
from tokenmap.decode.cost import load_cost_model  # noqa: E402
from tokenmap.models import resolve_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rows")
    ap.add_argument("--command", default="make bench")
    ap.add_argument("--manifest", default="bench-data/full.jsonl")
    ap.add_argument("--learn", default="bench-data/teacher-telephone.jsonl")
    ap.add_argument("--update-docs", default="")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.rows, encoding="utf-8")]
    ids = {r["id"] for r in rows}
    total = sum(1 for _ in open(ROOT / args.manifest))
    options = BenchOptions(map_modes=("per-task", "inferred"), heavy_per_group=2, learn=args.learn)
    machine = machine_info(ROOT, args.command.split()).as_dict()
    machine["command"] = args.command
    result = {"rows": rows, "options": asdict(options), "machine": machine,
              "manifest": f"{args.manifest} (first {len(ids)} of {total} utterances: the run was stopped)",
              "utterances": len(ids), "peak_rss_mb": {}, "seconds": {},
              "cost_model": load_cost_model(resolve_model("base"), "int8", 2).to_json()}
    result["aggregates"] = aggregate(rows)
    out = Path(args.rows).parent
    write_all(result, out)
    if args.update_docs:
        update_docs(Path(args.update_docs), markdown(result))
    print(f"{len(ids)} utterances reported in {out}")


if __name__ == "__main__":
    main()
