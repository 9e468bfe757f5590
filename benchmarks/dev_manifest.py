"""A dev manifest of bench audio the benchmark never decodes (for choices made on audio).

Takes the utterances of ``bench-data/manifest.jsonl`` that are in neither
``full.jsonl`` nor ``quick.jsonl`` and keeps up to ``--per-group`` of each
set/domain/language group, evenly spaced::

    python benchmarks/dev_manifest.py                       # -> bench-data/dev.jsonl
    tokenmap bench --manifest bench-data/dev.jsonl --systems greedy --reps 1 --out results/dev
    python -m tokenmap_bench.fairness --greedy results/dev/<run>/results.json --variant ...
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "bench-data"


def dev_rows(manifest: Path, exclude: list[Path], per_group: int) -> list[dict]:
    """Rows of ``manifest`` not in any ``exclude`` manifest, at most ``per_group`` per group."""
    used = {json.loads(line)["id"] for path in exclude if path.is_file() for line in path.open()}
    groups: dict = defaultdict(list)
    for line in manifest.open():
        row = json.loads(line)
        if row["id"] not in used:
            groups[(row["set"], row["domain"], row["lang"])].append(row)
    out = []
    for _, rows in sorted(groups.items()):
        out += rows[:: max(1, len(rows) // per_group)][:per_group]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-group", type=int, default=14)
    ap.add_argument("--out", type=Path, default=DATA / "dev.jsonl")
    args = ap.parse_args(argv)
    rows = dev_rows(DATA / "manifest.jsonl", [DATA / "full.jsonl", DATA / "quick.jsonl"], args.per_group)
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {args.out}: {len(rows)} utterances")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
