"""One benchmark run end to end: manifest -> maps -> systems -> results folder.

Example::

    >>> from tokenmap.bench.run import bench                                  # doctest: +SKIP
    >>> result, paths = bench("bench-data/quick.jsonl", BenchOptions(), Path("results"))   # doctest: +SKIP
"""

from __future__ import annotations

import datetime
import logging
import time
from dataclasses import asdict
from pathlib import Path

from tokenmap.bench.aggregate import aggregate
from tokenmap.bench.data import ensure_maps, load_manifest, machine_info
from tokenmap.bench.harness import BenchOptions, run_benchmark
from tokenmap.bench.report import write_all

log = logging.getLogger("tokenmap")

ROOT = Path(__file__).resolve().parents[2]


def run_dir(out_root: Path) -> Path:
    """``out_root/<YYYYmmdd-HHMMSS>`` (a suffix is added if it exists)."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path, n = out_root / stamp, 1
    while path.exists():
        n += 1
        path = out_root / f"{stamp}-{n}"
    return path


def bench(manifest: str | Path, options: BenchOptions, out_root: Path, corpora: Path | None = None,
          limit: int | None = None, progress=None, argv=None, out_dir: Path | None = None) -> tuple[dict, dict]:
    """Run the benchmark and write the results folder; returns ``(result, paths)``.

    Maps are cached in ``out_root/maps`` (rebuilt when their corpus changes);
    ``progress(stage, utterance_or_None)`` is called as work proceeds.
    """
    t0 = time.perf_counter()
    utterances = load_manifest(manifest, limit)
    corpora = corpora or ROOT / "corpora"
    if progress:
        progress("maps", None)
    maps = ensure_maps(utterances, corpora, out_root / "maps", options.model) if "tokenmap" in options.systems \
        or "e2e" in options.systems else {}
    maps_s = time.perf_counter() - t0
    result = run_benchmark(utterances, options, maps, progress=(lambda u: progress("utt", u)) if progress else None)
    result["seconds"]["maps"] = round(maps_s, 1)
    result["seconds"]["total"] = round(time.perf_counter() - t0, 1)
    result.update(machine=machine_info(ROOT, argv).as_dict(), options=asdict(options), manifest=str(manifest),
                  utterances=len(utterances), maps={f"{d}/{l}": str(p) if p else None for (d, l), p in maps.items()})
    result["aggregates"] = aggregate(result["rows"])
    paths = write_all(result, out_dir or run_dir(out_root))
    return result, paths
