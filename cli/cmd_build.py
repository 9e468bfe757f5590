"""`tokenmap build` and `tokenmap inspect`: make and look into token maps.

Examples::

    tokenmap build corpora/maintenance/en/train.txt --model base -o maint.tmap
    tokenmap inspect maint.tmap --prefix "Hydraulic pump 3"
"""

from __future__ import annotations

import json
import os
import signal
import sys
from contextlib import contextmanager

import click
import numpy as np

from .errors import fail as _fail


@contextmanager
def _interrupt_parent_only():
    """Ctrl-C stops a build without the forked workers' tracebacks.

    The terminal sends SIGINT to the whole process group, so the tokenizing
    and counting workers (forked: they inherit this handler) get it too. They
    ignore it: a worker interrupted halfway through sending a result, or
    holding a queue's lock, could leave the pool unable to stop (the parent
    then hung). The parent's KeyboardInterrupt stops the build as before and
    terminates its pools (no partial file, an old map untouched).
    """
    parent = os.getpid()

    def on_interrupt(signum, frame):
        if os.getpid() != parent:
            return  # a worker: the parent terminates it
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    except KeyboardInterrupt:
        # Leave at once: a multiprocessing pool whose feeder thread was cut off mid-send can block the
        # interpreter's exit handlers for ever. The builder has already killed its workers, and the map
        # is written through a temporary file renamed at the end, so nothing partial is left behind.
        click.echo("Aborted!", err=True)
        sys.stderr.flush()
        os._exit(1)
    finally:
        signal.signal(signal.SIGINT, previous)


class _Bar:
    """tqdm progress on stderr (only on a terminal) fed by the builder's callback."""

    def __init__(self) -> None:
        from tqdm import tqdm

        self.stage = "load"
        self.bar = tqdm(unit=" utt", file=sys.stderr, disable=not sys.stderr.isatty(), desc=self.stage)

    def __call__(self, stage: str, n: int) -> None:
        if self.stage != stage:
            self.stage = stage
            self.bar.set_description(stage)
        if n:
            self.bar.update(n)

    def close(self) -> None:
        self.bar.close()


@click.command()
@click.argument("corpus", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Map file to write (.tmap).")
@click.option("--model", default="base", show_default=True, help="Whisper model name or CTranslate2 directory.")
@click.option("--depth", default=24, show_default=True, type=click.IntRange(2, 64),
              help="Longest token sequence the map keeps (context and continuation together).")
@click.option("--context-min-count", default=0, show_default=True, type=click.IntRange(0),
              help="Keep contexts seen this often; 0: every context of a corpus up to 200,000 tokens "
                   "(a phrase inventory), those seen twice in a larger one.")
@click.option("--text-column", default="text", show_default=True, help="Text column of .csv/.tsv inputs.")
@click.option("--style-bridge/--no-style-bridge", default=True, show_default=True,
              help="Rewrite lines in Whisper's style (capital, final period, digits).")
@click.option("--capitalize/--no-capitalize", default=True, help="Bridge: capital first letter.")
@click.option("--final-period/--no-final-period", default=True, help="Bridge: add a final period.")
@click.option("--digits/--no-digits", default=True, help="Bridge: number words to digits.")
@click.option("--add-raw", is_flag=True, help="Also add each original line when the bridge changed it.")
@click.option("--jobs", default=2, show_default=True, type=click.IntRange(1, 64), help="Worker processes.")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@click.option("--balance", is_flag=True,
              help="Write a map set, one map per task (domain/lang; the decoder infers the task), sharing the budget "
                   "by excess divergence D_T - D_min: thin tasks keep rarer contexts and count more teacher lines.")
@click.option("--teacher", multiple=True, type=click.Path(exists=True),
              help="The model's own transcripts of other in-domain audio (e.g. `tokenmap transcribe -o DIR` "
                   "output, one segment a line), read like a corpus without the style bridge: the map learns how "
                   "Whisper writes what it hears (commas, digits, sentence splits). With --balance, D_T is "
                   "measured on them and each task's section counts them, more often the worse its D_T. Never "
                   "use the audio you benchmark on. Repeatable.")
@click.option("--teacher-copies", default=2, show_default=True, type=click.IntRange(1, 16),
              help="Without --balance: how many times each teacher line is counted beside the corpus.")
def build(corpus, output, model, depth, context_min_count, text_column, style_bridge, capitalize, final_period,
          digits, add_raw, jobs, force, balance, teacher, teacher_copies):
    """Build a token map from domain transcripts (.txt, .jsonl, .csv, .tsv, dirs, .gz).

    The map holds every token sequence of the corpus up to --depth tokens
    with its counts, so the decoder drafts from the longest context it has
    seen (up to the whole segment) and cuts each draft where one more token
    would cost more than it is expected to save. Add --teacher with the
    model's own transcripts of other audio from the domain, so that the map
    learns how Whisper writes what it hears. With --balance, a map set of
    such maps, one per task.
    """
    from tokenmap.build.builder import BuildError, BuildOptions, build_map
    from tokenmap.build.corpus import CorpusError
    from tokenmap.build.style import NO_BRIDGE, StyleOptions
    from tokenmap.maps.schema import MapFormatError
    from tokenmap.textok import TokenizerError

    style = StyleOptions(capitalize, final_period, digits) if style_bridge else NO_BRIDGE
    options = BuildOptions(style=style, add_raw=add_raw, text_column=text_column, jobs=jobs, depth=depth,
                           min_count=context_min_count, teacher_copies=teacher_copies)
    bar = _Bar()
    try:
        with _interrupt_parent_only():
            if balance:
                from tokenmap.balance.sections import build_balanced
                result = build_balanced(corpus, output, model=model, options=options, force=force, progress=bar,
                                        teacher=teacher)
            else:
                result = build_map(corpus, output, model=model, options=options, force=force, progress=bar,
                                   teacher=teacher)
    except (BuildError, CorpusError, TokenizerError, MapFormatError, OSError, ValueError) as exc:
        bar.close()
        _fail(str(exc))
    bar.close()
    skipped = sum(v for k, v in result.skipped.items() if k != "empty")
    click.echo(f"wrote {result.path}: {result.size_bytes / 1e6:.2f} MB, {result.contexts} contexts "
               f"(up to {len(result.contexts_per_length)} tokens), {result.with_continuation} with a continuation"
               + (" over the task maps" if balance else ""))
    click.echo(f"corpus: {result.utterances} utterances, {result.tokens} tokens"
               + (f", {skipped} lines skipped" if skipped else "") + f"; built in {result.seconds:.1f} s")
    if balance:
        _balance_summary(output)
    cov = result.self_test
    if cov:
        click.echo(f"self-test on {cov.get('utterances', min(result.utterances, 2000))} training utterances, "
                   f"drafted as the decoder drafts: "
                   f"{cov['tokens_per_pass']:.2f} tokens per pass, acceptance {cov['acceptance']:.0%}"
                   + (f", modelled decoder speed-up {cov['speedup']:.2f}x" if cov.get("speedup") else ""))
    click.echo(f"cost model: {result.cost_source}")


def _balance_summary(path) -> None:
    """One line per task: D_T (dev split or teacher transcripts), w_T and the budget it got."""
    from tokenmap.maps.mapfile import load_maps

    bal = load_maps(path, verify=False)[0].header["balance"]  # just written and checksummed
    taught = any(t.get("teacher_lines") for t in bal["tasks"].values())
    where = "the model's teacher transcripts" if taught else "each task's dev split"
    click.echo(f"budgets (best task {bal['best']}; D_T on {where}, nats/token; min-count 0: the builder's rule):")
    for task, t in bal["tasks"].items():
        d_t = "   n/a" if t["D_T"] is None else f"{t['D_T']:6.3f}"
        click.echo(f"  {task:<20} D_T {d_t}  w {t['w']:.2f}  min-count {t['min_count']}"
                   + (f"  teacher {t['teacher_lines']} lines x{t['teacher']}" if taught else "")
                   + ("  (protected)" if task in bal["protected"] else ""))


@click.command("inspect")
@click.argument("map_path", metavar="MAP", type=click.Path())
@click.option("--prefix", default=None, help="Show the drafts proposed after this text.")
@click.option("--model", default=None, help="Tokenizer for --prefix (default: the map's model).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def inspect_map(map_path, prefix, model, as_json):
    """Show a token map's header, sizes, contexts per length and self-test.

    For a map set (``tokenmap build --balance``), each task's section in turn.
    """
    from tokenmap.maps.mapfile import load_maps
    from tokenmap.maps.schema import MapFormatError
    from tokenmap.textok import TokenizerError

    try:
        maps = load_maps(map_path)
        infos = [_summary(tm) for tm in maps]
        if prefix is not None:
            for tm, info in zip(maps, infos):
                info["prefix"] = _prefix_draft(tm, prefix, model, map_path)
    except (MapFormatError, TokenizerError, OSError) as exc:
        _fail(str(exc))
    if as_json:
        out = infos[0] if maps[0].task is None else {"path": str(map_path), "sections": infos}
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    if maps[0].task is not None:
        click.echo(f"{map_path}: a map set of {len(maps)} task sections (the decoder infers the task)")
    for info in infos:
        _print_summary(info, prefix)


def _summary(tm) -> dict:
    h = tm.header
    depths = np.bincount(tm.arrays["node_depth"], minlength=tm.depth + 1)[1:]
    return {
        "path": str(tm.path), "size_bytes": tm.path.stat().st_size if tm.path else None,
        "format": h.get("format_version"),
        "fingerprint": h.get("fingerprint"), "family": h.get("family"), "model": h.get("model"),
        "depth": tm.depth, "min_count": h.get("min_count"), "created": h.get("created"), "params": h.get("params"),
        "utterances": h.get("utterances"), "tokens": h.get("tokens"), "domains": h.get("domains"),
        "languages": h.get("languages"), "corpus_sha256": h.get("corpus_sha256"),
        "contexts": tm.num_nodes, "contexts_per_length": [int(x) for x in depths],
        "coverage": h.get("self_test"), "cost_model": h.get("cost_model"),
        **({"task": tm.task, "budget": h.get("budget"), "D_T": h.get("D_T")} if tm.task else {}),
    }


def _print_summary(info: dict, prefix) -> None:
    if info.get("task"):
        budget = info["budget"] or {}
        click.echo(f"section {info['task']}: D_T {info['D_T']}, budget min-count {budget.get('min_count')}, "
                   f"teacher copies {budget.get('teacher')}")
    click.echo(f"{info['path']}: {info['size_bytes'] / 1e6:.2f} MB, token map (format {info['format']}), "
               f"{info['family']} (model {info['model']}, tokenizer {str(info['fingerprint'])[:12]}…), "
               f"created {info['created']}")
    click.echo(f"corpus: {info['utterances']} utterances, {info['tokens']} tokens; "
               f"domains {info['domains']}, languages {info['languages']}")
    click.echo(f"contexts: {info['contexts']} of up to {info['depth']} tokens (min count {info['min_count']}); "
               f"per length: {', '.join(map(str, info['contexts_per_length'][:8]))}, …")
    cov = info["coverage"]
    if cov:
        click.echo(f"self-test: {cov['tokens_per_pass']:.2f} tokens per pass over {cov['tokens']} tokens, "
                   f"acceptance {cov['acceptance']:.0%}, modelled decoder speed-up {cov.get('speedup', 0):.2f}x")
    if prefix is not None:
        p = info["prefix"]
        click.echo(f"after {prefix!r}: " + (f"drafts {p['text']!r}  tokens {p['tokens']}  "
                                            f"E[accepted] {p['expected_accepted']:.2f}" if p["tokens"] else "no draft"))


def _prefix_draft(tm, prefix: str, model, map_path) -> dict:
    """What the decoder's drafter proposes after ``prefix`` at the start of an utterance (no timestamps)."""
    from tokenmap.decode.follow import FollowDrafter
    from tokenmap.textok import TextTokenizer

    tok = TextTokenizer.from_model(model or tm.header.get("model") or "base")
    if tok.fingerprint != tm.header["fingerprint"]:
        _fail(f"{map_path}: made for another tokenizer than {model or tm.header.get('model')}'s")
    ids = tok.encode_prefix(prefix)
    drafter = FollowDrafter(tm, timestamp_begin=None, eot=tm.bos)
    draft = [t for t in drafter.draft(ids, 64) if t < tm.bos]
    return {"text": tok.decode(draft), "ids": ids, "tokens": draft,
            "expected_accepted": round(drafter.last_expected, 3)}
