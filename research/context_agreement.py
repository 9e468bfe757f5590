#!/usr/bin/env python3
"""Does agreement between two short audio contexts tell when ``auto`` may keep its transcript?

A guard for ``--audio-context auto`` that asks the model twice: decode a window on its short context
(audio + margin, at least the minimum) and on a second short context; when the two transcripts are
the same, keep it; when they differ, decode at 30 s (``full``). A transcript that moves with the
amount of padding is the kind ``auto`` gets wrong, so the rule might catch what log-probability rules
could not (``research/auto_fallback.py``). Replayed from ``benchmarks/wer_table.py --json`` runs of the
five WER sets (no decoding here): ``--base`` holds ``full`` and ``auto`` per file, ``--other`` the
second context's ``auto`` (same files, same split), ``--third`` optionally a third one (majority vote,
then ``full``). Cost is the sum of the decodes' measured seconds per file (the second context, and 30 s
when needed), against ``full``'s.

    python benchmarks/wer_table.py --manifest bench-data/wer-150/manifest.jsonl --split test --vad off \\
        --json results/ca/test.json
    python benchmarks/wer_table.py --manifest bench-data/wer-150/manifest.jsonl --split test --vad off \\
        --contexts auto --margin 4 --min 8 --json results/ca/test-m4-n8.json
    python research/context_agreement.py --base results/ca/test.json --other results/ca/test-m4-n8.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def load(path: Path, context: str) -> dict:
    """Per-file rows of one context (VAD off) of a ``wer_table.py --json`` file, by file id."""
    rows = json.loads(path.read_text())["results"]
    return {r["id"]: r for r in rows if r["context"] == context and r["vad"] == "off"}


def wer(rows) -> float:
    rows = list(rows)
    return 100.0 * sum(r["edits"] for r in rows) / max(1, sum(r["words"] for r in rows))


def choose(i: str, full: dict, runs: list[dict]) -> tuple[dict, float]:
    """The row kept for file ``i`` and the seconds spent: the first context's transcript when another
    context agrees with it (in order; with three, any two that agree), else ``full``'s."""
    spent = sum(run[i]["seconds"] for run in runs[:2])
    if runs[0][i]["hyp"] == runs[1][i]["hyp"]:
        return runs[0][i], spent
    if len(runs) > 2:
        spent += runs[2][i]["seconds"]
        for kept in runs[:2]:
            if kept[i]["hyp"] == runs[2][i]["hyp"]:
                return kept[i], spent
    return full[i], spent + full[i]["seconds"]


def table(full: dict, runs: list[dict]) -> list[dict]:
    """Per set and for all files: ΔWER (points) of ``auto`` alone and of the rule against ``full``,
    files whose transcript differs from ``full``'s, files sent to 30 s, and time against ``full``."""
    kept = {i: choose(i, full, runs) for i in full}
    out = []
    for name in sorted({r["set"] for r in full.values()}) + ["all"]:
        ids = [i for i in full if name in ("all", full[i]["set"])]
        base = wer(full[i] for i in ids)
        out.append({
            "set": name, "files": len(ids), "wer_full": base,
            "delta_auto": wer(runs[0][i] for i in ids) - base,
            "delta_rule": wer(kept[i][0] for i in ids) - base,
            "changed": sum(kept[i][0]["hyp"] != full[i]["hyp"] for i in ids),
            "to_full": sum(kept[i][0] is full[i] for i in ids),
            "speed_auto": sum(full[i]["seconds"] for i in ids) / sum(runs[0][i]["seconds"] for i in ids),
            "speed_rule": sum(full[i]["seconds"] for i in ids) / sum(kept[i][1] for i in ids),
        })
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="wer_table --json with full and auto")
    ap.add_argument("--other", type=Path, required=True, help="wer_table --json of the second context (auto)")
    ap.add_argument("--third", type=Path, help="a third context: majority of three, then full")
    args = ap.parse_args()
    full, auto = load(args.base, "full"), load(args.base, "auto")
    runs = [auto, load(args.other, "auto")] + ([load(args.third, "auto")] if args.third else [])
    missing = [i for i in full if any(i not in run for run in runs)]
    if missing:
        raise SystemExit(f"{len(missing)} files of --base are missing elsewhere, e.g. {missing[0]}")
    print("| set | files | WER full | Δ auto | Δ rule | changed | to 30 s | auto speed | rule speed |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in table(full, runs):
        print(f"| {r['set']} | {r['files']} | {r['wer_full']:.2f} | {r['delta_auto']:+.2f} | {r['delta_rule']:+.2f} "
              f"| {r['changed']} | {r['to_full']} | {r['speed_auto']:.2f}× | {r['speed_rule']:.2f}× |")


if __name__ == "__main__":
    main()
