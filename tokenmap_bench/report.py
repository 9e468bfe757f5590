"""Write a benchmark run: ``results.json``, ``report.md``, PNG plots, the docs section.

Example::

    >>> fmt(1.23456), fmt(float("nan")), pct(0.5)
    ('1.23', '–', '50.0')
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

from tokenmap_bench.aggregate import VOICE_BOUND_WER, oracle_fractions
from tokenmap_bench.plots import write_plots

log = logging.getLogger("tokenmap")

BEGIN = "<!-- BEGIN GENERATED: tokenmap bench -->"
END = "<!-- END GENERATED: tokenmap bench -->"

#: token-map paper, Table I (S, A_r %, A_l) for comparison
PAPER_TABLE_I = [
    ("paper: large-v3 + turbo-v3 draft (distil-spec)", "CI-AVSR", 1.02, 44.1, 3.46),
    ("paper: large-v3 + turbo-v3 draft (distil-spec)", "Internal", 1.27, 85.8, 8.41),
    ("paper: large-v3 + token map", "CI-AVSR", 1.27, 38.6, 3.42),
    ("paper: large-v3 + token map", "Internal", 1.37, 85.6, 3.92),
    ("paper: medium + token map", "CI-AVSR", 1.12, 56.0, 2.32),
    ("paper: medium + token map", "Internal", 1.36, 95.9, 3.95),
    ("paper: small + token map", "CI-AVSR", 1.09, 51.1, 1.83),
    ("paper: small + token map", "Internal", 1.35, 97.1, 3.96),
]
DECODER_ORDER = ("greedy", "tokenmap", "tokenmap-learned", "tokenmap-recall", "tokenmap-recall-inventory",
                 "tokenmap-mismatch", "oracle",
                 "greedy-nots", "distil-spec", "stock")
E2E_ORDER = ("fw-e2e", "tokenmap-nomap-e2e", "tokenmap-e2e", "tokenmap-exact-e2e", "tokenmap-short-e2e",
             "tokenmap-short-nomap-e2e", "tokenmap-mismatch-e2e", "tokenmap-recall-e2e", "stock-e2e",
             "stock-untuned-e2e", "stock-defaults-e2e")


def fmt(x, digits: int = 2) -> str:
    """``x`` with ``digits`` decimals, or a dash for a missing value: ``fmt(1.2345) == "1.23"``."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def pct(x) -> str:
    """A fraction as a percentage with one decimal: ``pct(0.1234) == "12.3"``."""
    return fmt(x * 100 if x is not None and not math.isnan(x) else math.nan, 1)


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(map(str, r)) + " |" for r in rows])


def _ordered(systems: dict, order) -> list[str]:
    return [s for s in order if s in systems] + sorted(set(systems) - set(order) - set(DECODER_ORDER + E2E_ORDER))


def system_table(systems: dict) -> str:
    rows = [[s, v["n"], fmt(v["decoder_s"], 3), fmt(v.get("S")), fmt(v.get("S_vs_stock")), fmt(v["rtf"], 3),
             pct(v["A_r"]), fmt(v["A_l"]), pct(v["identity"]), pct(v["wer"]), loops(v)]
            for s, v in ((s, systems[s]) for s in _ordered(systems, DECODER_ORDER))]
    return table(["system", "utts", "decoder s (sum of medians)", "S vs greedy", "S vs stock", "RTF (decoder)",
                  "A_r %", "A_l", "identical to greedy %", "WER %", "loops (stopped)"], rows)


def loops(summary: dict) -> str:
    """Transcripts that loop, and decodes the loop stop cut short: ``"1 (2)"``."""
    return f"{summary.get('loops', 0)} ({summary.get('loops_stopped', 0)})"


def e2e_table(systems: dict) -> str:
    rows = [[s, v["n"], fmt(v["decoder_s"], 2), fmt(v["rtf"], 3), fmt(v.get("S_vs_stock")),
             fmt(v.get("S_vs_untuned")), fmt(v.get("S")), pct(v["wer"]), loops(v)]
            for s, v in ((s, systems[s]) for s in E2E_ORDER if s in systems)]
    return table(["system", "utts", "transcribe s (sum of medians)", "RTF", "S vs tuned stock",
                  "S vs untuned stock", "S vs fw-e2e", "WER %", "loops (stopped)"], rows)


def group_table(groups: dict, name: str) -> str:
    fractions = oracle_fractions(groups)
    rows = []
    for key, s in groups.items():
        tm, orc, ds = s.get("tokenmap", {}), s.get("oracle", {}), s.get("distil-spec", {})
        g, e2e = s.get("greedy", {}), s.get("tokenmap-e2e", {})
        rows.append([key, g.get("n", 0), fmt(g.get("decoder_s"), 3), fmt(tm.get("S")), pct(tm.get("A_r")),
                     fmt(tm.get("A_l")), pct(tm.get("identity")), fmt(orc.get("S")),
                     pct(fractions.get(key)), fmt(ds.get("S")), fmt(e2e.get("S")),
                     pct(g.get("wer")), pct(tm.get("wer")), loops(g), loops(tm), loops(e2e) if e2e else "–"])
    return table([name, "utts", "greedy s", "S map", "A_r %", "A_l", "identical %", "S oracle", "oracle fraction %",
                  "S distil-spec", "S e2e", "WER greedy %", "WER map %", "loops greedy", "loops map (stopped)",
                  "loops e2e (stopped)"], rows)


def paper_table(agg: dict) -> str:
    rows = [[m, d, fmt(s), fmt(a, 1), fmt(al)] for m, d, s, a, al in PAPER_TABLE_I]
    systems = agg["systems"]
    for name in ("distil-spec", "tokenmap", "tokenmap-mismatch", "oracle"):
        if name in systems:
            v = systems[name]
            rows.append([f"ours: base + {name}", "this run (all)", fmt(v.get("S")), pct(v["A_r"]), fmt(v["A_l"])])
    for task, s in agg["groups"]["task"].items():
        if "tokenmap" in s:
            v = s["tokenmap"]
            rows.append(["ours: base + token map", task, fmt(v.get("S")), pct(v["A_r"]), fmt(v["A_l"])])
    return table(["method", "data", "S", "A_r %", "A_l"], rows)


def fairness_text(f: dict) -> str:
    sp = f["S_spread"]
    rows = [[t, fmt(d, 3)] for t, d in f["D_T"].items()]
    return (f"Tasks T = domain × language; system `{f['system']}`; D_T = {f['D_T_definition']}.\n\n"
            + table(["task", "D_T"], rows)
            + f"\n\nU = {fmt(f['U'], 4)}; S across tasks: min {fmt(sp['min'])} ({sp.get('argmin', '–')}), "
              f"max {fmt(sp['max'])} ({sp.get('argmax', '–')}), mean {fmt(sp['mean'])}, std {fmt(sp['std'], 3)}.")


def fairness_ce_text(f: dict) -> str:
    if not f or not f.get("D_T"):
        return ""
    rows = [[t, fmt(d, 3)] for t, d in f["D_T"].items()]
    rho = f.get("spearman_D_S")
    return ("\n\nWith D_T = " + f["D_T_definition"] + " (nats/token; the disparate-impacts paper's "
            "estimate, the map standing for the drafter):\n\n" + table(["task", "D_T (nats)"], rows)
            + f"\n\nU = {fmt(f['U'], 4)}; Spearman rank correlation of D_T with S: "
              f"{fmt(rho, 2) if rho is not None else '–'} (negative: higher divergence, lower speed-up).")


def map_modes_text(agg: dict) -> str:
    """Per-task maps against one multi-task map and the map sets (`--map-mode`), same audio."""
    modes = agg.get("map_modes", {})
    if len(modes) < 2:
        return ""
    rows = []
    for name, f in modes.items():
        ce = agg.get("fairness_ce") if name == "tokenmap" else f.get("fairness_ce")
        sp = f["S_spread"]
        rows.append([f"`{name}`", fmt(f["U"], 4), fmt((ce or {}).get("U"), 4), fmt(sp["mean"]), fmt(sp["std"], 3),
                     f"{fmt(sp['min'])} ({sp.get('argmin', '–')})", f"{fmt(sp['max'])} ({sp.get('argmax', '–')})"])
    return ("\n\n#### Map modes (`--map-mode`)\n\n`tokenmap` drafts from each task's own map, "
            "`tokenmap-multi` from one map built over every task's corpus, `tokenmap-balanced` from "
            "the map set of `tokenmap build --balance` over the same corpora (a section per task with the "
            "budget its excess divergence earns), `tokenmap-inferred` from every task's own map (default "
            "budget), `tokenmap-taught` from the balanced set also taught the model's own transcripts of "
            "other audio of each task (`--balance --teacher`, counted more often the worse the task's D_T); "
            "in the map sets the decoder infers the task. U with D_T = 1 − A_r and with D_T = the "
            "map's cross-entropy on the task's greedy output (for a set, of the task's own section)."
            "\n\n"
            + table(["system", "U (1 − A_r)", "U (cross-entropy)", "mean S", "std S", "min S (task)",
                     "max S (task)"], rows) + map_modes_identical_text(agg.get("map_modes_identical")))


def map_modes_identical_text(same: dict) -> str:
    """The map modes on the utterances all of them decoded exactly as greedy did, per task."""
    if not same or not same.get("task"):
        return ""
    modes = same["modes"]
    rows = []
    for name, f in modes.items():
        sp = f["S_spread"]
        rows.append([f"`{name}`", fmt(f["U"], 4), fmt(sp["mean"]), fmt(sp["std"], 3),
                     f"{fmt(sp['min'])} ({sp.get('argmin', '–')})", f"{fmt(sp['max'])} ({sp.get('argmax', '–')})"])
    per_task = [[t, str(v["greedy"]["n"]), *(f"{fmt(v.get(m, {}).get('S'))} / {pct(v.get(m, {}).get('A_r'))}"
                                             for m in modes)] for t, v in same["task"].items()]
    return (f"\n\nOn the {same['utterances']} utterances that every map mode decoded exactly as greedy did "
            "(elsewhere an int8 batched pass changed a token, and a changed output can loop or stop early, "
            "which moves a small task's S more than drafting does):\n\n"
            + table(["system", "U (1 − A_r)", "mean S", "std S", "min S (task)", "max S (task)"], rows)
            + "\n\nS / A_r (%) per task on those utterances:\n\n"
            + table(["task", "utts", *(f"`{m}`" for m in modes)], per_task))


REGIME_SYSTEMS = ("tokenmap", "tokenmap-learned", "tokenmap-recall", "tokenmap-mismatch", "oracle")


def regime_text(agg: dict) -> str:
    """Per regime: S, A_r, A_l, tokens per pass, the oracle's share and identity, voice-bound tasks apart."""
    reg = agg.get("regimes")
    if not reg or not reg["table"]:
        return "no regime rows"
    rows = []
    for regime, systems in reg["table"].items():
        for name in REGIME_SYSTEMS:
            if name not in systems:
                continue
            s = systems[name]
            share = reg["oracle_fraction"].get(regime) if name == "tokenmap" else None
            rows.append([regime, f"`{name}`", str(s["n"]), fmt(s.get("S")), pct(s["A_r"]), fmt(s["A_l"]),
                         fmt(s.get("tokens_per_pass")), pct(share) if share is not None else "–",
                         pct(s["identity"]), pct(systems["greedy"]["wer"])])
    bound = ", ".join(f"{t} ({pct(w)} %)" for t, w in sorted(reg["voice_bound"].items())) or "none"
    return (table(["regime", "system", "utts", "S", "A_r %", "A_l", "tokens/pass", "oracle share %",
                   "identical %", "greedy WER %"], rows)
            + f"\n\nTTS voices left out here, from the headline and from fairness (greedy WER above "
            f"{pct(VOICE_BOUND_WER)} %: they measure the voice, not drafting): {bound}. "
            "Their utterances are in the per-task table below.")


def regime_e2e_text(agg: dict) -> str:
    """End to end per regime and set: short prompts (telephony), dense windows (calls: prompts back
    to back; dictation; LibriVox), against faster-whisper on the fork and stock faster-whisper on
    stock CTranslate2."""
    reg = agg.get("regimes") or {}
    by_set = reg.get("by_set") or {regime: {"all": systems} for regime, systems in reg.get("table", {}).items()}
    rows = []
    for regime, set_, systems in ((r, s, v) for r, sets in by_set.items() for s, v in sets.items()):
        for name in E2E_ORDER[1:]:
            s = systems.get(name)
            if s:
                rows.append([regime, set_, f"`{name}`", str(s["n"]), fmt(s["audio_s"] / s["n"], 1),
                             fmt(s["decoder_s"], 2), fmt(s.get("S_vs_stock")), fmt(s.get("S_vs_untuned")),
                             fmt(s.get("S"))])
    if not rows:
        return "no end-to-end rows"
    return table(["regime", "set", "system", "utts", "audio s per utterance", "transcribe s (sum of medians)",
                  "S vs tuned stock", "S vs untuned stock", "S vs fw-e2e"], rows)


def bucket_e2e_text(agg: dict) -> str:
    """End to end per duration bucket and language: speed against tuned stock, WER, and how often the
    short-context guard sent a window back to 30 s."""
    rows = []
    for field in ("bucket", "lang"):
        for key, systems in (agg.get("groups") or {}).get(field, {}).items():
            for name in E2E_ORDER[1:]:
                s = systems.get(name)
                if s:
                    guard = f"{s['guarded']} of {s['short_windows']}" if s.get("short_windows") else "–"
                    rows.append([f"{field} {key}", f"`{name}`", str(s["n"]), fmt(s.get("S_vs_stock")),
                                 fmt(s.get("S_vs_untuned")), pct(s["wer"]), loops(s), guard])
    if not rows:
        return "no end-to-end rows"
    return table(["group", "system", "files", "S vs tuned stock", "S vs untuned stock", "WER %", "loops (stopped)",
                  "guard: windows sent back to 30 s"], rows)


def header_text(result: dict) -> str:
    m, o = result["machine"], result["options"]
    open_reps = f"open regime {o['open_reps']}; " if o.get("open_reps") else ""
    return (f"Run {m['date']} on {m['cpu']} ({m['cores']} cores), git {m['git_commit']}.\n"
            f"Command: `{m['command']}`\n"
            f"Model {o['model']} ({o['compute_type']}, intra_threads={o['threads']}), draft model {o['draft_model']} "
            f"(K={o['spec_tokens']}), timestamps {'on' if o['timestamps'] else 'off'}, {o['reps']} repetitions "
            f"({open_reps}end-to-end {o['e2e_reps']}), medians; manifest `{result['manifest']}` "
            f"({result['utterances']} utterances). "
            f"Cost model: {result['cost_model'].get('source', '')}. "
            f"Peak RSS (MiB): {result['peak_rss_mb']}.")


def markdown(result: dict) -> str:
    """The Markdown report of a run's ``result``: its header, then per regime, per system, end to
    end, fairness and map-mode tables (what report.md holds and ``update_docs`` writes)."""
    agg = result["aggregates"]
    parts = [header_text(result), "### Per regime (decoder speed-up against plain greedy)", regime_text(agg),
             "### Decoder, per system", system_table(agg["systems"]),
             "### End to end (transcribe)", e2e_table(agg["systems"]),
             "### End to end, per regime", regime_e2e_text(agg),
             "### End to end, per duration and language", bucket_e2e_text(agg),
             "### Per domain × language", group_table(agg["groups"]["task"], "task"),
             "### Per voice", group_table(agg["groups"]["voice"], "voice"),
             "### Per set", group_table(agg["groups"]["set"], "set"),
             "### Beside the paper's Table I", paper_table(agg),
             "### Speed-up unfairness (disparate-impacts paper, Definition 1)",
             fairness_text(agg["fairness"]) + fairness_ce_text(agg.get("fairness_ce")) + map_modes_text(agg),
             "### Definitions", DEFINITIONS]
    if result.get("stock_skipped"):
        parts.insert(1, f"**stock skipped:** {result['stock_skipped']}")
    if result.get("failed_runs"):
        failed = "; ".join(f"{s} on {u}: {e}" for u, f in result["failed_runs"].items() for s, e in f.items())
        parts.insert(1, f"**failed runs (left out of the tables):** {failed}")
    return "\n\n".join(parts) + "\n"


DEFINITIONS = """- S = Σ T_greedy / Σ T_system over the group's utterances (token-map paper eq. 3), T = median of the \
repetitions of the decoder call on one 30 s window (encoder excluded; distil-spec includes its draft encoder and is \
compared with greedy without timestamps). `S vs stock` divides stock's time by ours (> 1: we are faster).
- Stock is faster-whisper 1.2.1 on stock CTranslate2 4.8.5 in its own process. *Tuned stock* (`stock`, \
`stock-e2e`) runs with the OpenMP thread wait, BLAS thread and glibc malloc settings tokenmap applies to itself \
(`OMP_WAIT_POLICY=ACTIVE GOMP_SPINCOUNT=100000 OPENBLAS_NUM_THREADS=1 MALLOC_ARENA_MAX=1 MALLOC_MMAP_MAX_=0 \
MALLOC_TRIM_THRESHOLD_=536870912 MALLOC_TOP_PAD_=67108864`): the anchor of every end-to-end figure. *Untuned \
stock* (`stock-untuned-e2e`) runs without those settings. Both decode greedily at temperature 0 (no \
fallback). *faster-whisper's defaults* (`stock-defaults-e2e`) is untuned stock calling \
`transcribe(audio, language=...)` with nothing else: beam 5, the temperature fallback, the previous text as prompt.
- A_r = accepted / drafted draft tokens (eq. 4); A_l = accepted tokens per verified draft (eq. 5).
- oracle fraction = (T_greedy − T_map) / (T_greedy − T_oracle): the share of a perfect drafter's saving the map gets.
- identical = token-identical to greedy `generate` on the fork (int8 batched logits can flip near-ties).
- WER: jiwer on text normalised by `tokenmap_bench.metrics.normalize_text` (NFKC, lowercase, punctuation dropped, \
thousands separators removed, symbols split off; numbers are not spelled out) against the manifest references.
- End to end: `transcribe()` of the whole file (decode audio, features, all windows), language given, VAD off, greedy.
- RTF = seconds / audio seconds."""


def write_json(result: dict, path: Path) -> None:
    path.write_text(json.dumps(result, indent=1, default=json_default) + "\n", encoding="utf-8")


def json_default(obj):
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    return str(obj)


def update_docs(path: Path, section: str) -> None:
    """Replace the generated section of ``path`` (between the markers), or append one."""
    block = f"{BEGIN}\n<!-- regenerated by `tokenmap bench --update-docs`; do not edit by hand -->\n\n{section}\n{END}"
    text = path.read_text(encoding="utf-8") if path.is_file() else "# Benchmarks\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n## Latest run\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_all(result: dict, out: Path) -> dict:
    """results.json, report.md and the plots into ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(result, out / "results.json")
    plots = write_plots(result, out)
    md = markdown(result)
    if plots:
        md += "\n" + "\n".join(f"![{p.stem}]({p.name})" for p in plots) + "\n"
    (out / "report.md").write_text(md, encoding="utf-8")
    return {"json": out / "results.json", "report": out / "report.md", "plots": plots}
