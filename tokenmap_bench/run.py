"""One benchmark run end to end: manifest -> maps -> systems -> results folder.

Example::

    >>> from tokenmap_bench.run import bench                                  # doctest: +SKIP
    >>> result, paths = bench("bench-data/quick.jsonl", BenchOptions(), Path("results"))   # doctest: +SKIP
"""

from __future__ import annotations

import datetime
import json
import logging
import time
from dataclasses import asdict
from pathlib import Path

from tokenmap.balance.divergence import cross_entropy
from tokenmap.decode.special import SpecialTokens
from tokenmap.maps.mapfile import load_maps
from tokenmap.models import resolve_model
from tokenmap_bench import metrics as M
from tokenmap_bench.aggregate import aggregate
from tokenmap_bench.data import BenchMaps, ensure_learned_maps, ensure_maps, ensure_shared_map, load_manifest
from tokenmap_bench.harness import BenchOptions, run_benchmark
from tokenmap_bench.leaks import check_disjoint
from tokenmap_bench.machine import checkout_root, machine_info
from tokenmap_bench.metrics import spearman
from tokenmap_bench.report import json_default, write_all

log = logging.getLogger("tokenmap")

ROOT = checkout_root()


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
    check_disjoint(utterances, learn=options.learn, teacher=options.teacher, recall=options.recall,
                   text_of=_decoder_of(options.model) if options.recall else None)
    if progress:
        progress("maps", None)
    maps = bench_maps(utterances, options, corpora, out_root / "maps")
    maps_s = time.perf_counter() - t0
    out_dir = out_dir or run_dir(out_root)
    with PartialRows(out_dir) as sink:
        result = run_benchmark(utterances, options, maps, sink=sink,
                               progress=(lambda u: progress("utt", u)) if progress else None)
    result["seconds"]["maps"] = round(maps_s, 1)
    result["seconds"]["total"] = round(time.perf_counter() - t0, 1)
    complete(result, utterances, options, maps, manifest, argv)
    paths = write_all(result, out_dir)
    sink.path.unlink(missing_ok=True)  # results.json holds every row now
    return result, paths


def _decoder_of(model: str):
    """Token ids -> text with ``model``'s tokenizer (timestamps and special tokens left out)."""
    from tokenizers import Tokenizer

    from tokenmap.models import resolve_model

    tokenizer = Tokenizer.from_file(str(resolve_model(model) / "tokenizer.json"))
    eot = tokenizer.token_to_id("<|endoftext|>")
    return lambda ids: tokenizer.decode([t for t in ids if t < eot])


def bench_maps(utterances, options: BenchOptions, corpora: Path, cache: Path) -> BenchMaps:
    """The maps a run drafts from, built into ``cache`` when missing or stale."""
    maps = BenchMaps()
    if "tokenmap" in options.systems or "e2e" in options.systems:
        maps.tasks = ensure_maps(utterances, corpora, cache, options.model)
        if options.learn:
            maps.learned = ensure_learned_maps(utterances, corpora, cache, options.model, Path(options.learn))
    tasks = {(u.domain, u.lang) for u in utterances}
    for mode in options.map_modes[1:]:
        maps.shared[mode] = (maps.inferred(tasks) if mode == "inferred" else
                             ensure_shared_map(mode, tasks, corpora, cache, options.model, teacher=options.teacher))
    return maps


def complete(result: dict, utterances, options: BenchOptions, maps: BenchMaps, manifest, argv=None) -> dict:
    """Add to ``result`` (its ``rows`` measured) what the report needs besides them: machine,
    options, maps and every aggregate, the cross-entropy fairness included."""
    result.update(machine=machine_info(ROOT, argv).as_dict(), options=asdict(options), manifest=str(manifest),
                  utterances=len(utterances), maps=maps.as_dict())
    result["aggregates"] = aggregate(result["rows"])
    eot = _eot(options.model)
    result["aggregates"]["fairness_ce"] = cross_entropy_fairness(result["rows"], maps.drafted_by("tokenmap"),
                                                                 result["aggregates"], eot)
    for mode in options.map_modes[1:]:
        system = f"tokenmap-{mode}"
        result["aggregates"]["map_modes"][system]["fairness_ce"] = cross_entropy_fairness(
            result["rows"], maps.drafted_by(system), result["aggregates"], eot, system=system)
    return result


def report_partial(rows_path: Path, options: BenchOptions, manifest: Path, command: str = "make bench",
                   docs: Path | None = None) -> Path:
    """Report a run that stopped before its report, from its ``rows.partial.jsonl``.

    Writes results.json, report.md and the plots beside the rows, with everything a finished
    run writes (maps, aggregates, the cross-entropy fairness) except its timings and memory
    peaks; the maps come from the same cache (``results/maps``). The manifest line says how
    many utterances ran when the run stopped early; ``docs`` is a Markdown file whose
    generated section is regenerated. Returns the folder written.
    """
    from tokenmap.decode.cost import load_cost_model
    from tokenmap_bench.report import markdown, update_docs

    rows_path = Path(rows_path)
    rows = [json.loads(line) for line in rows_path.open(encoding="utf-8")]
    ids = {r["id"] for r in rows}
    utterances = [u for u in load_manifest(manifest) if u.id in ids]
    total = sum(1 for line in Path(manifest).open(encoding="utf-8") if line.strip())
    maps = bench_maps(utterances, options, ROOT / "corpora", ROOT / "results" / "maps")
    shown = (manifest if len(ids) == total
             else f"{manifest} (first {len(ids)} of {total} utterances: the run was stopped)")
    cost = load_cost_model(resolve_model(options.model), options.compute_type, options.threads)
    result = {"rows": rows, "peak_rss_mb": {}, "seconds": {}, "cost_model": cost.to_json()}
    complete(result, utterances, options, maps, shown, command.split())
    result["machine"]["command"] = command
    ended = datetime.datetime.fromtimestamp(rows_path.stat().st_mtime, datetime.timezone.utc)
    reported = result["machine"]["date"]
    result["machine"]["date"] = f"ending {ended:%Y-%m-%d %H:%M} UTC (its last row; reported {reported})"
    write_all(result, rows_path.parent)
    if docs:
        update_docs(Path(docs), markdown(result))
    return rows_path.parent


class PartialRows:
    """Appends each utterance's rows to ``out_dir/rows.partial.jsonl`` as they are measured, so a
    run that dies late keeps what it measured (the file is removed once results.json is written)."""

    def __init__(self, out_dir: Path):
        self.path = Path(out_dir) / "rows.partial.jsonl"
        self._fh = None

    def __enter__(self) -> "PartialRows":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("w", encoding="utf-8")
        return self

    def __call__(self, rows: list[dict]) -> None:
        for row in rows:
            self._fh.write(json.dumps(row, ensure_ascii=False, default=json_default) + "\n")
        self._fh.flush()

    def __exit__(self, exc_type, exc, tb) -> None:
        self._fh.close()
        if exc_type is not None:
            log.error("benchmark stopped (%s); the rows measured so far are in %s", exc_type.__name__, self.path)


def _eot(model: str) -> int:
    return SpecialTokens.from_model_dir(str(resolve_model(model))).eot


def cross_entropy_fairness(rows: list[dict], maps: dict, aggregates: dict, eot: int,
                           system: str = "tokenmap") -> dict:
    """Definition 1 with D_T = cross-entropy (nats/token) of the map ``system`` drafts from
    (``maps[(domain, lang)]``; of a map set, the task's own section, the one the decoder should
    infer) against the model's greedy text tokens on that task's audio, and how well D_T ranks
    ``system``'s S (Spearman)."""
    per_task: dict = {}
    for r in rows:
        if r["system"] == "greedy" and maps.get((r["domain"], r["lang"])):
            per_task.setdefault((r["domain"], r["lang"]), []).append(r.get("token_ids") or [])
    d_t, loaded = {}, {}  # a shared map serves every task: load (and verify) it once
    for (domain, lang), sequences in sorted(per_task.items()):
        path, task = maps[(domain, lang)], f"{domain}/{lang}"
        if path not in loaded:
            loaded[path] = {m.task: m for m in load_maps(path)}
        tm = loaded[path].get(task) or next(iter(loaded[path].values()))  # a map set: the task's own section
        d_t[task] = cross_entropy(tm, [[t for t in s if t < eot] for s in sequences])
    tasks = aggregates["groups"]["task"]
    s_t = {t: tasks[t][system]["S"] for t in d_t if system in tasks.get(t, {})}
    speed = M.spread(s_t)
    common = sorted(set(d_t) & set(s_t))
    rho = spearman([d_t[t] for t in common], [s_t[t] for t in common]) if len(common) > 2 else None
    return {"D_T": d_t, "U": M.unfairness(d_t) if d_t else None, "spearman_D_S": rho, "S_spread": speed,
            "D_T_definition": "cross-entropy of the map's smoothed next-token distribution against greedy tokens"}
