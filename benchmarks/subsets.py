#!/usr/bin/env python3
"""Write the benchmark's fixed subsets of bench-data/ (after ``benchmarks/make_data.py``).

* ``intel-small.jsonl`` (37 files): of ``full.jsonl``, per language the first 8 Asterisk test
  prompts and the first 2 call windows, the 5 LibriVox clips and the first 2 dictation windows;
  the end-to-end set timed on slower machines.
* ``e2e-all.jsonl`` (168 files): of ``full.jsonl``, the 120 Asterisk test prompts (en/es/fr), the 5
  LibriVox clips, the 16 dictation windows and the first 12 English in-car commands under 5 s (TTS);
  of ``manifest.jsonl``, the first 5 call windows per language (prompts back to back, real speech).

Lines keep their manifest's order and text, so the subsets are the same on every build. Both are of
English, Spanish and French, and take ``full.jsonl`` as it was drawn before it held every real recording
(:data:`SUBSET_QUOTA`), so they stay the files their published figures were measured on.

    .venv/bin/python benchmarks/subsets.py            # both, into bench-data/
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from tokenmap_bench import lowest_hash_per_group

ROOT = Path(__file__).resolve().parents[1]



def first(lines, limits: dict, where=lambda row: True):
    """The manifest lines whose ``(set, lang)`` is still under its limit (``limits[set]``), in order."""
    seen = collections.Counter()
    for line in lines:
        row = json.loads(line)
        key = (row["set"], row["lang"])
        if row["set"] in limits and where(row) and seen[key] < limits[row["set"]]:
            seen[key] += 1
            yield line


#: the per-group quota the subsets draw from the manifest, and their languages
SUBSET_QUOTA = {"synthetic": 3, "telephony": 40, "opendomain": 5, "dictation": 4, "calls": 2}
LANGS = ("en", "es", "fr")


def _order(uid: str) -> int:
    """Which of make_data's seeded orders a call window is of (its index's thousands)."""
    return int(uid.rsplit("/", 1)[1].split("-")[0]) // 1000


def drawn(manifest: list[str]) -> list[str]:
    """The lines of :data:`LANGS` that :func:`tokenmap_bench.lowest_hash_per_group` draws with
    :data:`SUBSET_QUOTA`, in manifest order."""
    rows = [json.loads(line) for line in manifest]
    first_order = [r for r in rows if r["lang"] in LANGS and not (r["set"] == "calls" and _order(r["id"]))]
    chosen = {r["id"] for r in lowest_hash_per_group(first_order, SUBSET_QUOTA)}
    return [line for line, r in zip(manifest, rows) if r["id"] in chosen]


def intel_small(full: list[str]) -> list[str]:
    return list(first(full, {"telephony": 8, "calls": 2, "opendomain": 5, "dictation": 2}))


def e2e_all(full: list[str], manifest: list[str]) -> list[str]:
    short_commands = list(first(full, {"synthetic": 12}, lambda r: r["lang"] == "en" and r["domain"] == "incar"
                                and r["duration"] < 5.0))
    calls = list(first(manifest, {"calls": 5}, lambda r: r["lang"] in LANGS))
    rest = list(first(full, {"telephony": 40, "opendomain": 5, "dictation": 16}))
    return rest + calls + short_commands


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=ROOT / "bench-data")
    args = p.parse_args()
    manifest = (args.data / "manifest.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    full = drawn(manifest)
    for name, lines in (("intel-small", intel_small(full)), ("e2e-all", e2e_all(full, manifest))):
        (args.data / f"{name}.jsonl").write_text("".join(lines), encoding="utf-8")
        print(f"{name}.jsonl: {len(lines)} files")


if __name__ == "__main__":
    main()
