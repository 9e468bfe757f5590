#!/usr/bin/env python3
"""The kept table "Map against no map" from ``make bench-map``'s result files (results/map/).

    python benchmarks/map_keep.py --section "$(python benchmarks/report.py kind)" --out results/kept/X-45-map.json

Each ``window_profile.py`` file (``--json``) gives, per audio context, every file's time with its map and
without; a row is their summed no-map time over the map's, end to end and for the decoder alone (prefill,
passes, the loop's Python, plain ``generate``), each with its 95 % paired bootstrap interval over files,
and the acceptance of the map's drafts. ``long_bench.py --json`` gives the 3 min file: the best wall time
of its repetitions without a map over the same system's with it. Rows whose map is the oracle come from
``window_profile.py --maps`` with :mod:`oracle_maps`' maps (the files' own transcripts): the bound a map of
that text can reach. Where ``make bench-map-wer`` left its two ``wer_table.py --json`` runs of the same
files, without a map (``wer-nomap.json``) and with each language's prompt inventory (``wer-map.json``), a
note gives the default's WER with a map against without, pooled and per set, with paired bootstrap intervals
over files.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
from pathlib import Path

from wer_keep import signed  # the scripts beside this one
from wer_table import delta_ci

from tokenmap_bench import speedup_interval

ROOT = Path(__file__).resolve().parent.parent
DECODER = ("prefill", "passes", "python", "generate")
#: (file in results/map, what it holds, its map) in the table's order
ORACLE = "oracle: the files' own transcripts"
PROFILES = (("calls.json", "Asterisk prompts back to back, dense call windows", "the prompt inventory"),
            ("calls-oracle.json", "Asterisk prompts back to back, dense call windows", ORACLE),
            ("prompts.json", "Asterisk prompts, every 3rd of the test split", "the prompt inventory"),
            ("prompts-oracle.json", "Asterisk prompts, every 3rd of the test split", ORACLE),
            ("librivox.json", "LibriVox readings", "the book's text"),
            ("prompts-wrong-map.json", "Asterisk prompts, every 3rd", "another domain's (maintenance, en)"),
            ("dictation-wrong-map.json", "dictation windows, TTS", "another domain's (telephony, en)"),
            ("dictation-wrong-map-session.json", "dictation windows, TTS, in one process (the gate learns across "
             "files)", "another domain's (telephony, en)"))
CONTEXTS = {"full": "30 s", "auto": "`auto`"}


def _decoder(side: dict) -> float:
    return sum(side[k] for k in DECODER)


def _speedup(rows: list[dict], measure=lambda side: side["total"]) -> float:
    """Summed no-map time over summed map time (end to end by default)."""
    return sum(measure(r["nomap"]) for r in rows) / sum(measure(r["map"]) for r in rows)


def _ratio(rows: list[dict], measure) -> str:
    low, high = speedup_interval([(measure(r["nomap"]), measure(r["map"])) for r in rows])
    return f"{_speedup(rows, measure):.2f} [{low:.2f}, {high:.2f}]"


def profile_rows(path: Path, what: str, map_name: str) -> list[list]:
    out = []
    for context, result in json.loads(path.read_text(encoding="utf-8")).items():
        rows = result["rows"]
        drafted = sum(r["map"]["drafted"] for r in rows)
        passes = sum(r["map"]["n_passes"] for r in rows)
        out.append([f"{what} ({len(rows)})", map_name, CONTEXTS.get(context, context),
                    _ratio(rows, lambda side: side["total"]), _ratio(rows, _decoder),
                    f"{100 * sum(r['map']['accepted'] for r in rows) / drafted:.1f}" if drafted else "–",
                    f"{sum(r['map']['tokens'] for r in rows) / passes:.2f}" if passes else "–",
                    f"{sum(r['map']['text'] == r['nomap']['text'] for r in rows)}/{len(rows)}"])
    return out


def oracle_notes(results: Path) -> list[str]:
    """Per workload with an oracle run, one note: per context, the share of the oracle's end-to-end gain the map
    takes; then the causes of the map's rejected drafts (the first wrong token of each, as
    ``window_profile.py`` classifies it), over both contexts."""
    notes = []
    for name, what, map_name in PROFILES:
        oracle = results / name.replace(".json", "-oracle.json")
        if map_name == ORACLE or not (results / name).is_file() or not oracle.is_file():
            continue
        shares, rejected = [], {}
        bound = json.loads(oracle.read_text(encoding="utf-8"))
        for context, result in json.loads((results / name).read_text(encoding="utf-8")).items():
            ratio, best = _speedup(result["rows"]), _speedup(bound[context]["rows"])
            share = (1 - 1 / ratio) / (1 - 1 / best) if best > 1 else float("nan")
            shares.append(f"{100 * share:.0f} % at {CONTEXTS.get(context, context)} ({ratio:.2f}× against "
                          f"{best:.2f}×)")
            for k, v in result.get("rejected", {}).items():
                rejected[k] = rejected.get(k, 0) + v
        total = sum(rejected.values())
        top = sorted(rejected.items(), key=lambda kv: -kv[1])[:4]
        causes = ", ".join(f"{k} {100 * v / total:.0f} %" for k, v in top if v) if total else "none"
        notes.append(f"{what}: the map takes {' and '.join(shares)} of the oracle's end-to-end gain; its "
                     f"rejected drafts by cause: {causes}.")
    return notes


def long_rows(path: Path) -> list[list]:
    runs = json.loads(path.read_text(encoding="utf-8"))
    best = {s: min(r["wall"] for r in rs) for s, rs in runs["runs"].items()}
    out = []
    for system in best:
        if system.endswith("-map") and system[:-4] in best:
            mode = "`--batch-size 8`" if "batch" in system else "sequential"
            same = runs["runs"][system][0]["text"] == runs["runs"][system[:-4]][0]["text"]
            out.append([f"a {runs['minutes']:g} min file of prompts and readings, VAD on, {mode}", "the English "
                        "prompt inventory", "30 s", f"{best[system[:-4]] / best[system]:.2f}", "–", "–", "–",
                        "1/1" if same else "0/1"])
    return out


def wer_note(nomap: Path, with_map: Path) -> str:
    """The default's WER with the map against without, pooled and per set (points, 95 % paired bootstrap over
    files), loops and changed transcripts."""
    def per_file(path):
        return {r["id"]: r for r in json.loads(path.read_text(encoding="utf-8"))["results"] if r["context"] == "full"}
    plain, mapped = per_file(nomap), per_file(with_map)
    ids = sorted(plain.keys() & mapped.keys())
    groups: dict[str, list[str]] = {}
    for i in ids:
        groups.setdefault(plain[i]["set"], []).append(i)

    def delta(members):
        pairs = [(plain[i]["edits"], mapped[i]["edits"], plain[i]["words"]) for i in members]
        words = sum(p[2] for p in pairs)
        before, after = (100 * sum(p[k] for p in pairs) / words for k in (0, 1))
        low, high = delta_ci(pairs)
        return before, after, f"{signed(after - before)} [{signed(low)}, {signed(high)}]"

    before, after, pooled = delta(ids)
    sets = ", ".join(f"{name} {delta(members)[2]}" for name, members in sorted(groups.items()))
    loops = [sum(side[i]["loop"] for i in ids) for side in (plain, mapped)]
    changed = sum(plain[i]["hyp"] != mapped[i]["hyp"] for i in ids)
    return (f"WER with the map against without (`make bench-map-wer`: {len(ids)} held-out real prompts of the "
            f"short-context sets, each language's prompt inventory, 30 s, VAD off): {after:.2f} % against "
            f"{before:.2f} %, {pooled} points pooled; per set {sets}; loops {loops[0]} / {loops[1]}; "
            f"{changed} transcripts changed (int8 near-ties).")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=ROOT / "results" / "map")
    ap.add_argument("--section", required=True, help="the CPU kind (benchmarks/report.py kind)")
    ap.add_argument("--order", type=int, default=45)
    ap.add_argument("--encoder-auto", default="", help="what `tokenmap doctor` says auto encodes with")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    rows = []
    for name, what, map_name in PROFILES:
        if (args.results / name).is_file():
            rows += profile_rows(args.results / name, what, map_name)
    if (args.results / "long.json").is_file():
        rows += long_rows(args.results / "long.json")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    notes = oracle_notes(args.results)
    if (args.results / "wer-map.json").is_file() and (args.results / "wer-nomap.json").is_file():
        notes.append(wer_note(args.results / "wer-nomap.json", args.results / "wer-map.json"))
    table = {"section": args.section, "order": args.order, "title": "Map against no map, end to end",
             "text": "Each file transcribed by the default configuration (greedy, temperature 0) with its map and "
                     "without one, alternating, fresh draft controllers per file (but in the row run in one process, "
                     "as a user's process transcribing the files in turn); no-map time over map time (> 1: "
                     "the map is faster), summed over the files, end to end and for the decoder alone, each with "
                     "its 95 % paired bootstrap interval over files. A_r and tokens per verify pass are the map's. "
                     "The maps hold the prompts' text, never their recordings. The oracle's map holds the files' "
                     "own transcripts without a map (`benchmarks/oracle_maps.py`): a bound on what any map of "
                     "that text gives on this CPU, not a configuration.",
             "command": "make bench-map", "commit": commit, "date": datetime.date.today().isoformat(),
             "model": "base", "compute_type": "int8", "threads": 2, "encoder_auto": args.encoder_auto,
             "columns": ["workload (files)", "map", "context", "end to end [95 % CI]", "decoder [95 % CI]", "A_r %",
                         "tokens a pass", "texts equal"],
             "align": "lllrrrrl", "rows": rows, "notes": notes}
    args.out.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
