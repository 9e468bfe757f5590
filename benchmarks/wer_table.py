#!/usr/bin/env python3
"""WER of ``audio_context="full"`` against ``"auto"``, VAD off and on, on the real-speech sets of wer_sets.py.

Every file of the manifest's split is transcribed once per configuration (context x VAD), the
configurations interleaved file by file, with ``tokenmap.WhisperModel(model, compute_type="int8",
cpu_threads=2, audio_context=CTX, session_cache=False)`` (one model per context, no token map, no
learning across files) and ``transcribe(language=<the set's>, beam_size=1, temperature=0.0,
vad_filter=VAD)``. ``auto`` is ``tokenmap.context.AudioContext("auto")`` as the product builds it, or,
with ``--margin``/``--min``, ``AudioContext("auto", margin_s=--margin, min_s=--min)`` for every
language (not the per-language table of versions that have one). After each file
``model.last_stats()`` gives the windows decoded on a short context (``short_windows``) and those
the guard sent back to 30 s (``guarded``).

WER is corpus WER per set (summed edits over summed reference words, jiwer's alignment) after
:func:`normalize`: ``tokenmap_bench.metrics.normalize_text`` (NFKC, lower case, punctuation
dropped) preceded by a few per-language rules applied to both sides alike (Russian ё -> е;
Romanian cedilla s/t -> comma s/t; Italian elision apostrophes -> a space; number words zero to
ten -> digits, since Whisper writes either). The delta is ``auto - full`` in WER points, with a 95 %
interval from a paired bootstrap over the files (seeded) and the count of files whose normalised
transcript changed, got worse or better. Decode seconds are wall time of ``transcribe`` plus reading
the segments; they are only comparable within one run (``--full-from`` reuses another run's).

A file *loops* for a context when its hypothesis runs away (:func:`loops`: more than twice the
reference's words plus five, as ``encoder_wer.py`` counts them). Loops are counted apart per context,
and the ``clean`` columns (WER, delta and its interval) leave out the files where either context looped.

``--sweep 4:5,4:10,2:10`` decodes several ``auto`` configurations (margin:min) in one run, one model each,
interleaved with ``full`` file by file (the order rotates from file to file), so each configuration's
speed against ``full`` comes from the same run; ``--json`` then names a file per configuration with
``{config}`` (``m4-n10``), each holding the full-context results and that configuration's, in the
format of a single run (``--from-json``, ``--full-from`` and ``wer_sweep.py`` read them). Files are
taken round-robin across sets and the JSON is rewritten every 50 files, so a run stopped early leaves a
balanced partial result (``params.partial``). ``--map LANG=PATH`` (repeatable) decodes that language's
files with the token map on every context; ``--worse`` lists, for each set whose clean interval lies
above zero, the files that got worse with both transcripts.

Usage::

    .venv/bin/python benchmarks/wer_sets.py                               # the sets, once
    .venv/bin/python benchmarks/wer_table.py --split dev --json results/wer/dev.json
    .venv/bin/python benchmarks/wer_table.py --split test --json results/wer/test.json
    .venv/bin/python benchmarks/wer_table.py --split dev --full-from results/wer/dev.json --margin 2 --min 8
    .venv/bin/python benchmarks/wer_table.py --from-json results/wer/dev.json   # the tables again, no decoding
    .venv/bin/python benchmarks/wer_table.py --manifest bench-data/wer69/manifest.jsonl --split dev --vad off \
        --sweep 4:5,4:8,4:10,4:12,4:15 --json 'results/wer69/dev-{config}.json'
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTEXTS = ("full", "auto")
VADS = ("off", "on")

#: number words written as digits on both sides (Whisper writes "1" or "uno" for the same audio)
NUMBER_WORDS = {
    "it": "zero uno due tre quattro cinque sei sette otto nove dieci",
    "ru": "ноль один два три четыре пять шесть семь восемь девять десять",
    "cs": "nula jedna dva tři čtyři pět šest sedm osm devět deset",
    "nl": "nul één twee drie vier vijf zes zeven acht negen tien",
    "ro": "zero unu doi trei patru cinci șase șapte opt nouă zece",
    "en": "zero one two three four five six seven eight nine ten",
    "es": "cero uno dos tres cuatro cinco seis siete ocho nueve diez",
    "fr": "zéro un deux trois quatre cinq six sept huit neuf dix",
}
_NUMBERS = {lang: {w: str(i) for i, w in enumerate(words.split())} for lang, words in NUMBER_WORDS.items()}


def normalize(text: str, lang: str) -> str:
    """The WER normaliser of this table (both sides).

    >>> normalize("Premere 1 per l'aiuto, o UNO per uscire!", "it")
    'premere 1 per l aiuto o 1 per uscire'
    >>> normalize("Ещё раз: нажмите «два».", "ru")
    'еще раз нажмите 2'
    >>> normalize("O mașină, ştii?", "ro")
    'o mașină știi'
    """
    from tokenmap_bench import normalize_text

    text = unicodedata.normalize("NFC", text)
    if lang == "ru":
        text = text.replace("ё", "е").replace("Ё", "Е")
    elif lang == "ro":
        text = text.translate(str.maketrans("şŞţŢ", "șȘțȚ"))
    elif lang == "it":
        text = re.sub(r"(?<=\w)['’](?=\w)", " ", text)
    words = normalize_text(text).split()
    numbers = _NUMBERS.get(lang, {})
    return " ".join(numbers.get(w, w) for w in words)


def loops(reference: str, hypothesis: str, lang: str) -> bool:
    """Whether ``hypothesis`` ran away: more than twice the reference's words plus five (after :func:`normalize`).

    >>> loops("uno due", "uno due tre quattro cinque sei sette otto nove dieci", "it"), loops("a b", "a b", "en")
    (True, False)
    """
    return len(normalize(hypothesis, lang).split()) > 2 * len(normalize(reference, lang).split()) + 5


def word_errors(reference: str, hypothesis: str, lang: str) -> tuple[int, int]:
    """``(edits, reference words)`` after :func:`normalize`."""
    ref, hyp = normalize(reference, lang), normalize(hypothesis, lang)
    n_ref = len(ref.split())
    if not ref or not hyp:
        return max(n_ref, len(hyp.split())), n_ref
    import jiwer

    out = jiwer.process_words(ref, hyp)
    return out.substitutions + out.deletions + out.insertions, n_ref


def read_manifest(path: Path, split: str, sets: list[str] | None, limit: int | None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if split == "all" or r["split"] == split]
    if sets:
        rows = [r for r in rows if r["set"] in sets]
    if limit:
        seen: dict[str, int] = {}
        kept = []
        for r in rows:
            seen[r["set"]] = seen.get(r["set"], 0) + 1
            if seen[r["set"]] <= limit:
                kept.append(r)
        rows = kept
    for r in rows:
        r["path"] = str((path.parent / r["audio"]).resolve())
    by_set: dict[str, list[dict]] = {}
    for r in rows:
        by_set.setdefault(r["set"], []).append(r)
    queues = list(by_set.values())   # round-robin across sets: a run stopped early is balanced
    return [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]


def auto_context(cls, margin: float | None, minimum: float | None):
    """``auto`` as the product builds it when neither is given (with the per-language table of
    ``tokenmap.context``, where this version has one); else exactly ``margin`` and ``minimum`` for
    every language, so that a sweep measures the values it names."""
    if margin is None and minimum is None:
        return cls("auto")
    default = cls("auto")
    fixed = {"by_language": False} if "by_language" in getattr(cls, "__dataclass_fields__", {}) else {}
    return cls("auto", margin_s=default.margin_s if margin is None else margin,
               min_s=default.min_s if minimum is None else minimum, **fixed)


def decode(rows: list[dict], args, checkpoint=None) -> list[dict]:
    """One result per (file, VAD, context), the configurations interleaved file by file (full and every
    ``args.autos`` configuration, in an order that rotates from file to file); ``checkpoint(results)``
    every 50 files."""
    import tokenmap
    from tokenmap.assembly import load_token_maps
    from tokenmap.context import AudioContext
    from tokenmap.models import resolve_model

    model_dir = str(resolve_model(args.model, download=False))
    contexts: dict[str, tuple[str, str | None, object]] = {}
    if "full" in args.contexts:
        contexts["full"] = ("full", None, AudioContext("full"))
    if "auto" in args.contexts:
        contexts.update({label: ("auto", label, ctx) for label, ctx in args.autos.items()})
    models = {key: tokenmap.WhisperModel(model_dir, compute_type="int8", cpu_threads=args.threads,
                                         audio_context=ctx, session_cache=False)
              for key, (_, _, ctx) in contexts.items()}
    for key, model in models.items():
        if not model.drafting:
            sys.exit(f"the engine fork is not loaded ({key}): audio_context would be ignored; see docs/ENGINE.md")
    tokenizer = next(iter(models.values())).hf_tokenizer
    maps = {lang: load_token_maps(path, tokenizer) for lang, path in args.maps.items()}
    out = []
    started = time.perf_counter()
    for n, r in enumerate(rows, 1):
        keys = list(models)
        keys = keys[n % len(keys):] + keys[:n % len(keys)]
        for vad in args.vad:
            for key in keys:
                model = models[key]
                if maps:
                    model.token_map = maps.get(r["lang"])
                t0 = time.perf_counter()
                segments, _ = model.transcribe(r["path"], language=r["lang"], beam_size=1, temperature=0.0,
                                               vad_filter=vad == "on")
                hyp = "".join(s.text for s in segments).strip()
                seconds = time.perf_counter() - t0
                stats = model.last_stats()
                edits, words = word_errors(r["text"], hyp, r["lang"])
                out.append({"id": r["id"], "set": r["set"], "lang": r["lang"], "split": r["split"],
                            "duration": r["duration"], "vad": vad, "context": contexts[key][0],
                            "config": contexts[key][1], "token_map": r["lang"] in maps, "ref": r["text"],
                            "hyp": hyp, "edits": edits, "words": words, "loop": loops(r["text"], hyp, r["lang"]),
                            "seconds": round(seconds, 4), "windows": stats["windows"],
                            "short_windows": stats["short_windows"], "guarded": stats["guarded"]})
        if n % 10 == 0 or n == len(rows):
            print(f"  {n}/{len(rows)} files, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        if checkpoint is not None and n % 50 == 0 and n < len(rows):
            checkpoint(out)
    return out


def delta_ci(pairs: list[tuple[int, int, int]], resamples: int = 1000, seed: int = 0) -> list[float]:
    """95 % interval of ``auto - full`` corpus WER points from a paired bootstrap over files; ``pairs``:
    (full edits, auto edits, reference words) per file. Seeded: the same results give the same interval.

    >>> delta_ci([(1, 1, 10)] * 5)
    [0.0, 0.0]
    """
    import random

    rng = random.Random(seed)
    n = len(pairs)
    deltas = []
    for _ in range(resamples):
        sample = [pairs[rng.randrange(n)] for _ in range(n)]
        words = sum(p[2] for p in sample)
        deltas.append(100 * sum(p[1] - p[0] for p in sample) / words if words else 0.0)
    deltas.sort()
    return [deltas[int(0.025 * resamples)], deltas[int(0.975 * resamples) - 1]]


def summarize(results: list[dict]) -> list[dict]:
    """Per (VAD, set) and an ``all`` row: files, minutes, WER and decode time per context, guard counts."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in results:
        groups.setdefault((r["vad"], r["set"]), []).append(r)
        groups.setdefault((r["vad"], "all"), []).append(r)
    out = []
    for (vad, set_name), rs in groups.items():
        by_ctx: dict[str, list[dict]] = {}
        for r in rs:
            by_ctx.setdefault(r["context"], []).append(r)
        first = next(iter(by_ctx.values()))
        langs = sorted({r["lang"] for r in first})
        row = {"vad": vad, "set": set_name, "lang": ",".join(langs), "files": len(first),
               "minutes": sum(r["duration"] for r in first) / 60}
        looped = {r["id"] for r in rs if r.get("loop")}
        for ctx, cr in by_ctx.items():
            words = sum(r["words"] for r in cr)
            row[f"wer_{ctx}"] = 100 * sum(r["edits"] for r in cr) / words if words else math.nan
            row[f"seconds_{ctx}"] = sum(r["seconds"] for r in cr)
            row[f"windows_{ctx}"] = sum(r["windows"] for r in cr)
            row[f"loops_{ctx}"] = sum(1 for r in cr if r.get("loop"))
            clean = [r for r in cr if r["id"] not in looped]
            words = sum(r["words"] for r in clean)
            row[f"wer_clean_{ctx}"] = 100 * sum(r["edits"] for r in clean) / words if words else math.nan
            if ctx == "auto":
                row["short_windows"] = sum(r["short_windows"] for r in cr)
                row["guarded"] = sum(r["guarded"] for r in cr)
        if "full" in by_ctx and "auto" in by_ctx:
            row["delta"] = row["wer_auto"] - row["wer_full"]
            full = {r["id"]: r for r in by_ctx["full"]}
            row["changed"] = sum(1 for r in by_ctx["auto"]   # as WER sees them: not case or punctuation
                                 if normalize(r["hyp"], r["lang"]) != normalize(full[r["id"]]["hyp"], r["lang"]))
            row["delta_ci"] = delta_ci([(full[r["id"]]["edits"], r["edits"], r["words"]) for r in by_ctx["auto"]])
            row["worse"] = sum(1 for r in by_ctx["auto"] if r["edits"] > full[r["id"]]["edits"])
            row["better"] = sum(1 for r in by_ctx["auto"] if r["edits"] < full[r["id"]]["edits"])
            row["clean_files"] = len({r["id"] for r in by_ctx["auto"]} - looped)
            row["delta_clean"] = row["wer_clean_auto"] - row["wer_clean_full"]
            row["delta_clean_ci"] = delta_ci([(full[r["id"]]["edits"], r["edits"], r["words"])
                                              for r in by_ctx["auto"] if r["id"] not in looped])
            row["speed"] = row["seconds_full"] / row["seconds_auto"] if row["seconds_auto"] else math.nan
        out.append(row)
    order = {"off": 0, "on": 1}
    return sorted(out, key=lambda x: (order.get(x["vad"], 2), x["set"] == "all", x["set"]))


def _f(v, fmt: str) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def table(summary: list[dict], vad: str) -> str:
    rows = [s for s in summary if s["vad"] == vad]
    head = ("| set | lang | files | minutes | WER full % | WER auto % | Δ auto−full (pts) | Δ 95 % CI "
            "| loops full / auto | clean Δ [95 % CI] | files changed (worse / better) | short windows | guarded "
            "| decode s full / auto (x) |")
    lines = [head, "|" + "|".join([" --- "] * 14) + "|"]
    for s in rows:
        flag = " ⚠" if s.get("delta") is not None and s["delta"] > 0.3 else ""
        name = "**all**" if s["set"] == "all" else s["set"]
        ci = f"{s['delta_ci'][0]:+.1f} … {s['delta_ci'][1]:+.1f}" if s.get("delta_ci") else "–"
        clean = (f"{s['delta_clean']:+.2f} [{s['delta_clean_ci'][0]:+.2f}, {s['delta_clean_ci'][1]:+.2f}]"
                 if s.get("delta_clean_ci") else "–")
        speed = f" ({s['speed']:.2f}x)" if s.get("speed") else ""
        lines.append(
            f"| {name} | {s['lang']} | {s['files']} | {s['minutes']:.1f} | {_f(s.get('wer_full'), '.2f')} "
            f"| {_f(s.get('wer_auto'), '.2f')} | {_f(s.get('delta'), '+.2f')}{flag} | {ci} "
            f"| {_f(s.get('loops_full'), 'd')} / {_f(s.get('loops_auto'), 'd')} | {clean} "
            f"| {_f(s.get('changed'), 'd')} ({_f(s.get('worse'), 'd')} / {_f(s.get('better'), 'd')}) "
            f"| {_f(s.get('short_windows'), 'd')} | {_f(s.get('guarded'), 'd')} "
            f"| {_f(s.get('seconds_full'), '.0f')} / {_f(s.get('seconds_auto'), '.0f')}{speed} |")
    return "\n".join(lines)


def worse_files(results: list[dict], summary: list[dict], vad: str) -> str:
    """For each set whose clean interval lies above zero (and the loops of any set): the files ``auto``
    transcribed worse or that looped, with the reference and both transcripts."""
    lines = []
    full = {(r["id"], r["vad"]): r for r in results if r["context"] == "full"}
    for s in summary:
        if s["vad"] != vad or s["set"] == "all":
            continue
        above = bool(s.get("delta_clean_ci")) and s["delta_clean_ci"][0] > 0
        for r in results:
            if r["context"] != "auto" or r["vad"] != vad or r["set"] != s["set"]:
                continue
            f = full.get((r["id"], vad))
            if f is None:
                continue
            worse = above and r["edits"] > f["edits"]
            if worse or r.get("loop") or f.get("loop"):
                why = "loop" if (r.get("loop") or f.get("loop")) else f"+{r['edits'] - f['edits']} edits"
                lines.append(f"- {r['id']} ({r['duration']:.1f} s, {why}; guarded {r['guarded']})\n"
                             f"  ref:  {r['ref']}\n  full: {f['hyp']}\n  auto: {r['hyp']}")
    return "\n".join(lines)


def environment(args) -> dict:
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "tokenmap"],
                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        commit, dirty = "?", False
    import tokenmap

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else "?"
    path = Path(tokenmap.__file__).resolve().parent
    if path != ROOT / "tokenmap":   # imported from elsewhere (PYTHONPATH): this checkout's commit says nothing
        commit, dirty = f"unknown: tokenmap imported from {path}", None
    return {"commit": commit, "tokenmap_tree_dirty": dirty, "tokenmap_path": str(path),
            "cpu": cpu, "cores": os.cpu_count(), "model": args.model, "compute_type": "int8",
            "threads": args.threads, "time_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--manifest", type=Path, default=ROOT / "bench-data" / "wer" / "manifest.jsonl",
                    help="manifest of wer_sets.py (default %(default)s)")
    ap.add_argument("--split", choices=("dev", "test", "all"), default="dev", help="default %(default)s")
    ap.add_argument("--sets", default="", help="comma-separated sets to keep (default: all in the manifest)")
    ap.add_argument("--limit", type=int, default=0, help="at most N files per set (0: all)")
    ap.add_argument("--model", default="base", help="packaged model name or a model folder (default %(default)s)")
    ap.add_argument("--threads", type=int, default=2, help="cpu_threads (default %(default)s)")
    ap.add_argument("--margin", type=float, default=None, help="auto: seconds after the audio (default: the product's)")
    ap.add_argument("--min", type=float, default=None, help="auto: least context, seconds (default: the product's)")
    ap.add_argument("--sweep", default="",
                    help="several auto configurations in one run, margin:min comma-separated (4:5,4:10); "
                         "--json then needs {config} in its name")
    ap.add_argument("--map", action="append", default=[], metavar="LANG=PATH",
                    help="decode LANG's files with this token map (every context); repeatable")
    ap.add_argument("--worse", action="store_true",
                    help="list the files that got worse in each set whose clean interval lies above zero, and loops")
    ap.add_argument("--contexts", default="full,auto", help="comma-separated, of full,auto (default %(default)s)")
    ap.add_argument("--vad", default="off,on", help="comma-separated, of off,on (default %(default)s)")
    ap.add_argument("--full-from", type=Path,
                    help="take the full-context results from this earlier --json (same manifest and split) "
                         "instead of decoding them again: for margin sweeps")
    ap.add_argument("--json", type=Path, help="write per-file results and the summary here")
    ap.add_argument("--from-json", type=Path, help="print the tables of an earlier --json, decode nothing")
    return ap


def _reused_full(ap, args, rows: list[dict]) -> list[dict]:
    """The full-context results of ``--full-from`` for ``rows`` (and ``full`` taken out of the contexts
    to decode), or none without it."""
    if not (args.full_from and "full" in args.contexts):
        return []
    wanted = {(r["id"], vad) for r in rows for vad in args.vad}
    reused = [r for r in json.loads(args.full_from.read_text(encoding="utf-8"))["results"]
              if r["context"] == "full" and (r["id"], r["vad"]) in wanted]
    if len(reused) != len(wanted):
        ap.error(f"{args.full_from} lacks full-context results for {len(wanted) - len(reused)} files")
    args.contexts = [c for c in args.contexts if c != "full"]
    return reused


def _configs(ap, args, cls) -> dict:
    """label (``m4-n10``) -> AudioContext of each auto configuration: ``--sweep``'s, or ``--margin``/``--min``."""
    pairs = [(args.margin, args.min)]
    if args.sweep:
        try:
            pairs = [tuple(float(x) for x in item.split(":")) for item in args.sweep.split(",") if item]
        except ValueError:
            ap.error("--sweep takes margin:min pairs, comma-separated")
    out = {}
    for margin, minimum in pairs:
        ctx = auto_context(cls, margin, minimum)
        out[f"m{ctx.margin_s:g}-n{ctx.min_s:g}"] = ctx
    return out


def _measure(ap, args) -> list[tuple[list[dict], dict, list[dict]]]:
    """Decode the manifest's files as the arguments say; per auto configuration, the summary, the run's
    parameters and the results."""
    from tokenmap.context import AudioContext

    args.autos = _configs(ap, args, AudioContext)
    args.contexts = [c for c in CONTEXTS if c in args.contexts.split(",")]
    args.vad = [v for v in VADS if v in args.vad.split(",")]
    if not args.contexts or not args.vad:
        ap.error("--contexts needs full and/or auto, --vad off and/or on")
    if len(args.autos) > 1 and args.json and "{config}" not in str(args.json):
        ap.error("--sweep with several configurations: --json needs {config} in its name")
    try:
        args.maps = dict(item.split("=", 1) for item in args.map)
    except ValueError:
        ap.error("--map takes LANG=PATH")
    if not args.manifest.exists():
        ap.error(f"{args.manifest} is missing: run benchmarks/wer_sets.py first")
    sets = [s for s in args.sets.split(",") if s] or None
    rows = read_manifest(args.manifest, args.split, sets, args.limit or None)
    if not rows:
        ap.error(f"no {args.split} files in {args.manifest}")
    print(f"{len(rows)} files ({sum(r['duration'] for r in rows) / 60:.1f} min), contexts {args.contexts}, "
          f"VAD {args.vad}, auto {', '.join(args.autos)}, maps {args.maps or 'none'}", file=sys.stderr)
    reused = _reused_full(ap, args, rows)
    env = environment(args)

    def runs(results: list[dict], partial: bool) -> list[tuple[list[dict], dict, list[dict]]]:
        out = []
        for label, ctx in args.autos.items():
            mine = [r for r in results if r["context"] == "full" or r.get("config", label) == label]
            kinds = {r["context"] for r in mine}
            done = {r["id"] for r in mine if r["context"] == "auto"} if "auto" in kinds else None
            if done is not None and "full" in kinds:   # a stopped run: only the files every context decoded
                mine = [r for r in mine if r["id"] in done]
            params = {"manifest": str(args.manifest), "split": args.split, "margin_s": ctx.margin_s,
                      "min_s": ctx.min_s, "by_language": getattr(ctx, "by_language", False), "config": label,
                      "sweep": list(args.autos), "contexts": args.contexts, "vad": args.vad, "maps": args.maps,
                      "full_from": str(args.full_from) if reused else None, "partial": partial,
                      "files_done": len({r["id"] for r in mine}), **env}
            summary = summarize(mine)
            if args.json:
                path = Path(str(args.json).replace("{config}", label))
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps({"params": params, "summary": summary, "results": mine},
                                           ensure_ascii=False, indent=1), encoding="utf-8")
            out.append((summary, params, mine))
        return out

    results = (decode(rows, args, checkpoint=lambda rs: runs(rs + reused, True)) if args.contexts else []) + reused
    return runs(results, False)


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    for given in (args.from_json, args.full_from):
        if given and not given.exists():
            ap.error(f"{given} does not exist")
    if args.from_json:
        data = json.loads(args.from_json.read_text(encoding="utf-8"))
        runs = [(summarize(data["results"]), data["params"], data["results"])]
    else:
        runs = _measure(ap, args)
    for summary, params, results in runs:
        table_note = " (languages in tokenmap.context.LANGUAGE_CONTEXT: their own)" if params.get("by_language") else ""
        partial = " PARTIAL" if params.get("partial") else ""
        print(f"\nsplit {params['split']}; auto = margin {params['margin_s']} s, min {params['min_s']} s{table_note}; "
              f"{params.get('model', 'base')} int8, {params.get('threads', 2)} threads; "
              f"maps {params.get('maps') or 'none'}; "
              f"{params.get('cpu', '?')}; {params.get('time_utc', '')}{partial}")
        for vad in VADS:
            if any(s["vad"] == vad for s in summary):
                print(f"\nVAD {vad}\n\n{table(summary, vad)}")
                if args.worse:
                    print(f"\nFiles worse in sets whose interval lies above zero, and loops (VAD {vad}):\n"
                          f"{worse_files(results, summary, vad) or '(none)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
