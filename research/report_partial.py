"""Report a `tokenmap bench` run from its rows.partial.jsonl (a run that stopped before its report).

    python research/report_partial.py results/<run>/rows.partial.jsonl --command "make bench" [--update-docs docs/BENCHMARKS.md]

Writes results.json, report.md and the plots beside the rows, with everything a finished run
writes (maps, aggregates, the cross-entropy fairness) except its timings and memory peaks; the
maps come from the same cache (results/maps, rebuilt only if a corpus changed). The header says
how many utterances ran when the run stopped early. The options are those of `make bench`.
"""
import argparse
import datetime
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tokenmap_bench.data import load_manifest  # noqa: E402
from tokenmap_bench.harness import BenchOptions  # noqa: E402
from tokenmap_bench.report import markdown, update_docs, write_all  # noqa: E402
from tokenmap_bench.run import bench_maps, complete  # noqa: E402
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
    utterances = [u for u in load_manifest(ROOT / args.manifest) if u.id in ids]
    total = sum(1 for line in open(ROOT / args.manifest) if line.strip())
    options = BenchOptions(map_modes=("per-task", "inferred"), heavy_per_group=2, learn=args.learn)
    maps = bench_maps(utterances, options, ROOT / "corpora", ROOT / "results" / "maps")
    manifest = args.manifest if len(ids) == total else f"{args.manifest} (first {len(ids)} of {total} utterances: the run was stopped)"
    result = {"rows": rows, "peak_rss_mb": {}, "seconds": {},
              "cost_model": load_cost_model(resolve_model(options.model), options.compute_type, options.threads).to_json()}
    complete(result, utterances, options, maps, manifest, args.command.split())
    result["machine"]["command"] = args.command
    ended = datetime.datetime.fromtimestamp(Path(args.rows).stat().st_mtime, datetime.timezone.utc)
    result["machine"]["date"] = f"ending {ended:%Y-%m-%d %H:%M} UTC (its last row; reported {result['machine']['date']})"
    out = Path(args.rows).parent
    write_all(result, out)
    if args.update_docs:
        update_docs(Path(args.update_docs), markdown(result))
    print(f"{len(ids)} utterances reported in {out}")


if __name__ == "__main__":
    main()
