"""`tokenmap bench`: compare token-map drafting with greedy, the oracle, distil-spec and stock.

Examples::

    tokenmap bench --quick                                   # bench-data/quick.jsonl, about 15 min on 2 cores
    tokenmap bench --systems greedy,tokenmap,oracle --reps 5 --limit 50
    tokenmap bench --map-mode per-task,multi,balanced   # the full run (bench-data/full.jsonl, < 1 h)
    tokenmap bench --manifest bench-data/manifest.jsonl      # every utterance (about 3 h)
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import click

from .errors import fail as _fail
from .options import encoder_option

SYSTEMS = "greedy,tokenmap,oracle,distil-spec,stock,e2e"


def _require_bench() -> None:
    """Stop with one line when the benchmark's optional dependencies are missing.

    The benchmark package ``tokenmap_bench`` is installed with tokenmap; what it
    needs beyond tokenmap comes with the ``bench`` extra: jiwer for WER, and
    matplotlib for plots (skipped with a warning without it).
    """
    missing = [name for name in ("jiwer",) if importlib.util.find_spec(name) is None]
    if missing:
        _fail(f"tokenmap bench needs {' and '.join(missing)}: pip install 'tokenmap[bench]'")


class _Progress:
    """tqdm bar on stderr over utterances."""

    def __init__(self, total: int | None):
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit=" utt", file=sys.stderr, desc="maps", disable=None)

    def __call__(self, stage: str, utt) -> None:
        if stage == "utt":
            self.bar.set_description("bench")
            self.bar.update(1)
            self.bar.set_postfix_str(utt.id[-40:], refresh=False)

    def close(self) -> None:
        self.bar.close()


def _count_lines(path: Path, limit: int | None) -> int | None:
    try:
        n = sum(1 for line in path.open(encoding="utf-8") if line.strip())
    except OSError:
        return None
    return min(n, limit) if limit else n


@click.command()
@click.option("--manifest", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="JSON-lines manifest  [default: bench-data/full.jsonl (the full run), quick.jsonl with --quick; "
                   "manifest.jsonl holds every utterance]")
@click.option("--quick", is_flag=True, help="The quick set (bench-data/quick.jsonl: 30 real prompts and 30 dense "
              "call windows a language, the LibriVox clips), every system timed once.")
@click.option("--systems", default=SYSTEMS, show_default=True,
              help="Comma-separated systems (greedy is always run: it is the baseline).")
@click.option("--reps", default=None, type=click.IntRange(1, 100),
              help="Timed repetitions  [default: 3, 1 with --quick]")
@click.option("--reps-open", type=click.IntRange(1, 100), default=None,
              help="Timed repetitions of the open regime's clips  [default: --reps]. They are few and short "
                   "(about 1.3 s of decoder time for the 5 LibriVox clips), so 3 repetitions leave their S to "
                   "the machine's noise; make bench uses 15.")
@click.option("--e2e-reps", type=click.IntRange(0, 100), default=None,
              help="Repetitions of the end-to-end transcribes  [default: --reps, 1 with --quick]")
@click.option("--heavy-per-group", type=click.IntRange(0), default=None,
              help="Run the end-to-end systems and stock only on the first N utterances of each "
                   "set/domain/lang group (0 = all)  [default: 0, 1 with --quick]")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N utterances.")
@click.option("--threads", default=2, show_default=True, type=click.IntRange(1, 256), help="intra_threads.")
@click.option("--compute-type", default="int8", show_default=True, help="CTranslate2 compute type.")
@click.option("--model", default="base", show_default=True, help="Main Whisper model.")
@click.option("--draft-model", default="tiny.en", show_default=True, help="distil-spec draft model.")
@click.option("--spec-tokens", default=4, show_default=True, type=click.IntRange(1, 32), help="distil-spec K.")
@click.option("--timestamps/--no-timestamps", default=True, show_default=True,
              help="Decode with timestamps (faster-whisper's default) or with <|notimestamps|>.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="Results root: runs go to OUT/<timestamp>/, maps are cached in OUT/maps/.")
@click.option("--stock-python", default=".venv-stock/bin/python", show_default=True,
              help="Python of the stock faster-whisper environment (make bench-stock).")
@click.option("--map-mode", "map_modes", default="per-task", show_default=True,
              help="Comma-separated map modes: per-task (each task's own map; always run), multi (one map "
                   "over every task's corpus: system tokenmap-multi), balanced (the map set of `tokenmap build "
                   "--balance` over the same corpora: tokenmap-balanced), inferred (every task's own map: "
                   "tokenmap-inferred), taught (`--balance --teacher`, needs --teacher: tokenmap-taught); with a "
                   "set the task is inferred while decoding.")
@click.option("--learn", type=click.Path(exists=True, dir_okay=False), default=None,
              help="JSON lines of the model's transcripts of recordings of OTHER prompts than the measured ones "
                   "(`python benchmarks/telephone_teacher.py`, the train split): adds system tokenmap-learned on "
                   "the scripted tasks, whose map is the phrase inventory plus those transcripts. Refused if a "
                   "line is of a measured recording, in any codec.")
@click.option("--recall", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Recall index of recordings of OTHER prompts (`telephone_teacher.py --recall`): adds system "
                   "tokenmap-recall, the learned map plus the index (needs --learn). Refused if it holds a "
                   "measured recording (by its header, or by how its audio sounds).")
@click.option("--recall-inventory", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Recall index of the whole prompt inventory (`telephone_teacher.py --recall-inventory`), as "
                   "an IVR that plays every prompt would record it: adds system tokenmap-recall-inventory, "
                   "reported as the measured prompts' own studio takes heard through a telephone codec.")
@click.option("--teacher", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Teacher transcripts for map mode taught (`tokenmap build --balance --teacher`): the model's "
                   "greedy output on other audio of the same tasks, e.g. from `python benchmarks/teacher_texts.py` "
                   "on a run over bench-data/dev.jsonl. Refused if it holds an utterance this run decodes.")
@encoder_option
@click.option("--update-docs", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the report into the generated section of this Markdown file (docs/BENCHMARKS.md is "
                   "written by `make bench-report` from results/kept/ instead).")
def bench(manifest, quick, systems, reps, reps_open, e2e_reps, heavy_per_group, limit, threads, compute_type, model,
          draft_model, spec_tokens, timestamps, out, stock_python, map_modes, learn, recall, recall_inventory, teacher,
          encoder, update_docs):
    """Benchmark decoding systems on the same audio, interleaved; write results.json, report.md, plots."""
    _require_bench()
    from tokenmap_bench import BenchDataError, BenchOptions, markdown
    from tokenmap_bench import bench as run_bench
    from tokenmap_bench import update_docs as write_docs

    manifest = manifest or Path("bench-data") / ("quick.jsonl" if quick else "full.jsonl")
    reps = reps or (1 if quick else 3)
    if not manifest.is_file():
        _fail(f"{manifest}: no benchmark data; run `make bench-data` first")
    chosen = tuple(s.strip() for s in systems.split(",") if s.strip())
    try:
        options = BenchOptions(model=model, draft_model=draft_model, compute_type=compute_type, threads=threads,
                               encoder=encoder,
                               reps=reps, e2e_reps=e2e_reps if e2e_reps is not None else (1 if quick else reps),
                               open_reps=reps_open or 0,
                               systems=tuple(dict.fromkeys(("greedy",) + chosen)), timestamps=timestamps,
                               spec_tokens=spec_tokens, stock_python=stock_python, teacher=tuple(teacher),
                               learn=str(learn or ""), recall=str(recall or ""),
                               recall_inventory=str(recall_inventory or ""),
                               map_modes=tuple(dict.fromkeys(("per-task",) + tuple(
                                   m.strip() for m in map_modes.split(",") if m.strip()))),
                               heavy_per_group=heavy_per_group if heavy_per_group is not None else int(quick))
    except ValueError as exc:
        _fail(str(exc))
    bar = _Progress(_count_lines(manifest, limit))
    try:
        result, paths = run_bench(manifest, options, out, limit=limit, progress=bar, argv=["tokenmap", "bench",
                                                                                          *sys.argv[2:]])
    except BenchDataError as exc:
        bar.close()
        _fail(str(exc))
    bar.close()
    if update_docs:
        write_docs(update_docs, markdown(result))
    click.echo(summary(result))
    click.echo(f"wrote {paths['report'].parent}/ (results.json, report.md, {len(paths['plots'])} plots)"
               + (f"; updated {update_docs}" if update_docs else ""))


def summary(result: dict) -> str:
    """The end-of-run table: one line per system."""
    from tokenmap_bench import fmt, pct

    systems = result["aggregates"]["systems"]
    lines = [f"{'system':<18} {'utts':>4} {'time s':>8} {'S':>6} {'S/stock':>7} {'A_r%':>6} {'A_l':>5} "
             f"{'ident%':>6} {'WER%':>6}"]
    for name, v in systems.items():
        lines.append(f"{name:<18} {v['n']:>4} {v['decoder_s']:>8.3f} {fmt(v.get('S')):>6} "
                     f"{fmt(v.get('S_vs_stock')):>7} {pct(v['A_r']):>6} {fmt(v['A_l']):>5} "
                     f"{pct(v['identity']):>6} {pct(v['wer']):>6}")
    f = result["aggregates"]["fairness"]
    lines.append(f"unfairness U (D_T = 1 - A_r over domain/lang) = {fmt(f['U'], 4)}; "
                 f"S across tasks {fmt(f['S_spread']['min'])}..{fmt(f['S_spread']['max'])}")
    lines.append(f"threads {result['options']['threads']}, {result['options']['compute_type']}, "
                 f"{result['seconds']['total']:.0f} s total")
    return "\n".join(lines)
