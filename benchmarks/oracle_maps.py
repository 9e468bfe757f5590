#!/usr/bin/env python3
"""Oracle maps for ``window_profile.py``: maps built from the files' own transcripts, an upper bound.

    python benchmarks/oracle_maps.py results/map/calls.json results/map/prompts.json --out results/map/oracle-maps
    python benchmarks/window_profile.py --set calls --maps results/map/oracle-maps --json results/map/calls-oracle.json

Each ``window_profile.py --json`` file holds, per audio context, every file's transcript without a map
(plain greedy decoding). This writes them, per ``DOMAIN-LANG`` of the manifest, to ``OUT/DOMAIN-LANG.txt``
and builds ``OUT/DOMAIN-LANG.tmap`` from them as ``tokenmap build --teacher`` does (they are the model's own
transcripts). A map of the very text the model
writes for these files is the best a map of their domain can be: profiling the same files with it says how
far the product's maps are from what drafting can give on this CPU. It learns from the measured files'
output, so it is a bound to read figures against, never a configuration.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from tokenmap import build_map, resolve_model

ROOT = Path(__file__).resolve().parent.parent


def transcripts(profiles: list[Path], manifest: Path) -> dict[str, set[str]]:
    """``{DOMAIN-LANG: no-map transcripts}`` of every file of ``profiles`` (every audio context)."""
    keys = {u["id"]: f"{u['domain']}-{u['lang']}" for u in map(json.loads, manifest.read_text().splitlines())}
    out: dict[str, set[str]] = defaultdict(set)
    for path in profiles:
        for result in json.loads(path.read_text(encoding="utf-8")).values():
            for row in result["rows"]:
                out[keys[row["id"]]].add(row["nomap"]["text"].strip())
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profiles", nargs="+", type=Path, help="window_profile.py --json files")
    ap.add_argument("--manifest", type=Path, default=ROOT / "bench-data/e2e-all.jsonl")
    ap.add_argument("--out", type=Path, required=True, help="folder for DOMAIN-LANG.txt and .tmap")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    model = resolve_model("base", download=False)
    for key, texts in sorted(transcripts(args.profiles, args.manifest).items()):
        corpus = args.out / f"{key}.txt"
        corpus.write_text("\n".join(sorted(t for t in texts if t)) + "\n", encoding="utf-8")
        build_map([str(corpus)], str(args.out / f"{key}.tmap"), model=str(model), force=True, teacher=[str(corpus)])
        print(f"{key}: {len(texts)} transcripts -> {args.out / key}.tmap")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
