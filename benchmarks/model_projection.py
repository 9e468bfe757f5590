"""Project tokenmap's speed on larger Whisper sizes from base's tokens and each size's measured costs.

Whisper small, medium, large-v3 and turbo cannot be installed here, so their
transcripts cannot be decoded; their costs can (``make shapes``,
``benchmarks/model_costs.py``, ``tokenmap calibrate --model DIR``). This script
combines the two under one stated assumption: **base's greedy tokens stand in
for each size's**. Larger models transcribe a little differently, and the
paper's Table I reports A_r per size to compare with.

Inputs:

- a ``tokenmap bench`` run with systems ``e2e,stock`` (timestamps on): its
  greedy token streams, its per-task maps and base's measured end-to-end times;
- optionally a ``--no-timestamps`` run of the same manifest, for the decoder S
  without timestamps;
- ``model_costs.py --json`` rows (encoder and prefill at several contexts);
- the calibrated curves of every size (``tokenmap calibrate --model DIR``, and
  ``--exact`` for the float32 decoder).

What is projected, per size and compute type:

- **decoder S** per regime, against tokenmap's own greedy loop (as ``tokenmap
  bench`` reports it): today's drafter, with its controllers and window gate,
  replayed on the recorded tokens (:func:`tokenmap.decode.speculative.replay_window`)
  under that size's curve, one controller set per task in manifest order;
- **end to end against tuned stock faster-whisper** on the same shape. A file
  costs ``other + encoder + decoder``. ``other`` (audio decoding, features,
  VAD, faster-whisper's Python) is taken from base's measured tuned-stock time
  less base's modelled encoder and decoder, and is the same for every size
  and system. Stock's decoder is ``prefill + tokens x (step - loop)`` (the
  loop's Python is what ``generate`` does not pay); tokenmap's is the
  replay, or stock's when the window gate sends a window to ``generate``.
  With ``--audio-context auto`` the encoder and prefill cost what the
  measured short context costs (audio + 4 s, at least 5 s); a window the
  guard rejected in base's run pays the 30 s encoder and decode again.
  Passes keep the 30 s curve (a short context makes them a little cheaper:
  conservative for tokenmap). One window per file.

For base itself the projection can be checked against the run's measured
ratios; the script prints both.

Example::

    .venv/bin/python benchmarks/model_projection.py results/e2e/<run>/results.json \\
        --no-timestamps-run results/nots/<run>/results.json --costs results/sizes/costs.json
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

import numpy as np

from tokenmap import load_maps, resolve_model
from tokenmap.decode.cost import CostModel, calibration_path
from tokenmap.decode.drafters import FixedDrafter, Heard, default_drafter
from tokenmap.decode.gate import WindowGate
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import replay_window

ROOT = Path(__file__).resolve().parent.parent

REGIMES = ("scripted", "structured", "open")
#: end-to-end systems: name -> (audio context, with a map, decoder compute type)
SYSTEMS = {"default": ("full", True, "int8"), "auto": ("auto", True, "int8"),
           "auto, no map": ("auto", False, "int8"), "exact": ("full", True, "float32"),
           "exact, auto": ("auto", True, "float32")}
MEASURED = {"default": "tokenmap-e2e", "auto": "tokenmap-short-e2e", "auto, no map": "tokenmap-short-nomap-e2e",
            "exact": "tokenmap-exact-e2e"}


def context_s(audio_s: float) -> float:
    """Seconds the ``auto`` audio context encodes for a window of ``audio_s`` (audio + 4 s, 5..30 s)."""
    return min(30.0, max(5.0, audio_s + 4.0))


class Shape:
    """One model at one compute type: its curve and its encoder and prefill costs by context."""

    def __init__(self, name: str, model_dir: Path, compute_type: str, costs_row: dict, threads: int = 2):
        path = calibration_path(model_dir, compute_type, threads)
        if not path.is_file():
            exact = " --exact" if compute_type == "float32" else ""
            raise SystemExit(f"{name}: no {compute_type} calibration ({path}); run "
                             f"`tokenmap calibrate --model {model_dir}{exact}`")
        self.name, self.compute_type = name, compute_type
        self.cost = CostModel.from_json(json.loads(path.read_text())).smoothed()
        self.row = costs_row

    def _interp(self, prefix: str, seconds: float) -> float:
        points = sorted((int(k[len(prefix):-1]), v) for k, v in self.row.items()
                        if k.startswith(prefix) and k.endswith("s") and k[len(prefix):-1].isdigit())
        xs, ys = zip(*points)
        return float(np.interp(seconds, xs, ys))

    def encoder_ms(self, seconds: float = 30.0) -> float:
        return self._interp("encoder_", seconds)

    def prefill_ms(self, seconds: float = 30.0) -> float:
        if any(k.startswith("prefill_") for k in self.row):
            return self._interp("prefill_", seconds)
        return self.row["prefill"]

    def stock_decoder_ms(self, tokens: int, seconds: float = 30.0) -> float:
        """``generate``: the prefill, then a step without the loop's Python per token (EOT included)."""
        return self.prefill_ms(seconds) + (tokens + 1) * (self.cost.step_ms - self.cost.loop_ms)


def replay_file(ctl: WindowGate, token_map, row: dict, shape: Shape, special: SpecialTokens,
                with_ts: bool, context: float) -> tuple[float, float, int, int]:
    """``(tokenmap decoder ms, tokenmap greedy-loop decoder ms, tokens drafted, tokens accepted)`` of one
    window, prefill included."""
    feed = 2 if with_ts else 3
    cost, truth = shape.cost, row["token_ids"]
    prefill = shape.prefill_ms(context)
    if not ctl.use_speculation():
        st = replay_window(FixedDrafter([]), truth, special.eot, with_ts, special.timestamp_begin, cost, feed=feed)
        return shape.stock_decoder_ms(len(truth), context), prefill + st.greedy_ms, 0, 0
    drafter = default_drafter(token_map, special, controllers=ctl, cost=cost,
                              heard=Heard(seconds=min(row["audio_s"], 30.0) or None))
    st = replay_window(drafter, truth, special.eot, with_ts, special.timestamp_begin, cost, feed=feed)
    ctl.record_window(st)
    return prefill + st.ms, prefill + st.greedy_ms, st.drafted, st.accepted


def decoder_s(run: dict, maps: dict, shape: Shape, special: SpecialTokens, with_ts: bool) -> tuple[dict, dict]:
    """Projected decoder S per regime against tokenmap's greedy loop (30 s context, each task's own map),
    and the acceptance rate A_r (accepted / drafted tokens) per regime."""
    sums = collections.defaultdict(lambda: [0.0, 0.0, 0, 0])
    controllers: dict = {}
    for row in (r for r in run["rows"] if r["system"] == "greedy"):
        ctl = controllers.setdefault(row["task"], WindowGate(shape.cost))
        result = replay_file(ctl, maps[row["task"]], row, shape, special, with_ts, 30.0)
        acc = sums[row["regime"]]
        for i, (ms_or_n) in enumerate((result[1], result[0], result[2], result[3])):
            acc[i] += ms_or_n
    return ({k: g / t for k, (g, t, _, _) in sums.items()},
            {k: 100.0 * a / d for k, (_, _, d, a) in sums.items() if d})


def end_to_end(run: dict, maps: dict, shapes: dict, base: dict, special: SpecialTokens) -> dict:
    """Projected end-to-end time per (model, system, regime), and tuned stock's, in ms (timestamps on).

    ``shapes[(model, compute_type)]``; ``base``: base's int8 and float32 :class:`Shape`, whose modelled
    encoder and decoder are taken out of base's measured stock time to leave ``other``."""
    rows = collections.defaultdict(dict)
    for r in run["rows"]:
        rows[r["id"]][r["system"]] = r
    out = collections.defaultdict(float)
    models = sorted({m for m, _ in shapes})
    for model in models:
        controllers: dict = {}
        for uid, by_system in rows.items():
            greedy, stock = by_system["greedy"], by_system.get("stock-e2e")
            if stock is None:
                continue
            tokens, regime = len(greedy["token_ids"]), greedy["regime"]
            b = base["int8"]
            other = max(0.0, stock["decoder_s"] * 1000.0 - b.encoder_ms() - b.stock_decoder_ms(tokens))
            s8 = shapes[(model, "int8")]
            out[(model, "stock", regime)] += other + s8.encoder_ms() + s8.stock_decoder_ms(tokens)
            guarded = by_system.get("tokenmap-short-e2e", {}).get("guarded", 0)
            for system, (audio_context, with_map, ct) in SYSTEMS.items():
                shape = shapes.get((model, ct))
                if shape is None:
                    continue
                ctx = context_s(greedy["audio_s"]) if audio_context == "auto" else 30.0
                ctl = controllers.setdefault((system, greedy["task"]), WindowGate(shape.cost))
                token_map = maps[greedy["task"]] if with_map else None
                dec, *_ = replay_file(ctl, token_map, greedy, shape, special, True, ctx)
                total = other + s8.encoder_ms(ctx) + dec
                if audio_context == "auto" and guarded:
                    total += guarded * (s8.encoder_ms() + dec)
                out[(model, system, regime)] += total
    return out


def measured_base(run: dict) -> dict:
    """Base's measured end-to-end ratios against tuned stock per (system, regime)."""
    sums = collections.defaultdict(float)
    for r in run["rows"]:
        if r["kind"] == "e2e":
            sums[(r["system"], r["regime"])] += r["decoder_s"]
    return {(name, regime): sums[("stock-e2e", regime)] / sums[(system, regime)]
            for name, system in MEASURED.items() for regime in REGIMES if sums[(system, regime)]}


def measured_decoder_s(run: dict) -> dict:
    """Base's measured decoder S (greedy over tokenmap decoder time) per regime of a decoder run."""
    sums = collections.defaultdict(float)
    for r in run["rows"]:
        if r["system"] in ("greedy", "tokenmap"):
            sums[(r["system"], r["regime"])] += r["decoder_s"]
    return {g: sums[("greedy", g)] / sums[("tokenmap", g)] for g in REGIMES if sums[("tokenmap", g)]}


def load_run(path: Path) -> tuple[dict, dict]:
    run = json.loads(path.read_text())
    maps = {k: load_maps(ROOT / v)[0] for k, v in run["maps"].items() if isinstance(v, str)}  # checkout-relative
    return run, maps


def fmt(values: dict, keys=REGIMES, digits: int = 2) -> str:
    return " / ".join(f"{values[k]:.{digits}f}" if k in values else "–" for k in keys)


def scaled(raw: dict, base_raw: dict, base_measured: dict) -> dict:
    """``raw`` times base's measured / projected, key by key (raw where base has no measurement)."""
    return {k: v * base_measured[k] / base_raw[k] if k in base_measured and base_raw.get(k) else v
            for k, v in raw.items()}


class Projection:
    """Every projected figure, raw and scaled by base's measured / projected ratio (the float32
    decoder S stays raw: no run measures it)."""

    def __init__(self, args, shapes: dict, special: SpecialTokens):
        self.models = [m for m in args.models.split(",") if (m, "int8") in shapes]
        run, maps = load_run(args.run)
        self.run = run
        e2e = end_to_end(run, maps, shapes, {ct: shapes[("base", ct)] for ct in ("int8", "float32")}, special)
        measured = measured_base(run)
        base_e2e = {(n, g): e2e[("base", "stock", g)] / e2e[("base", n, g)] for n in SYSTEMS for g in REGIMES}
        measured.update({("exact, auto", g): measured[("exact", g)] * base_e2e[("exact, auto", g)]
                         / base_e2e[("exact", g)] for g in REGIMES if ("exact", g) in measured})
        self.e2e_raw, self.e2e, self.e2e_base = {}, {}, (base_e2e, measured)
        for m in self.models:
            raw = {(n, g): e2e[(m, "stock", g)] / e2e[(m, n, g)] for n in SYSTEMS for g in REGIMES
                   if e2e.get((m, n, g))}
            self.e2e_raw[m], self.e2e[m] = raw, scaled(raw, base_e2e, measured)
        self.dec, self.dec_raw, self.a_r, self.dec_base = {}, {}, {}, {}
        runs = (("timestamps", args.decoder_run, True), ("no timestamps", args.no_timestamps_run, False))
        for label, path, ts in runs:
            if path is None:
                continue
            drun, dmaps = load_run(path)
            for ct in ("int8", "float32"):
                raws = {m: decoder_s(drun, dmaps, shapes[(m, ct)], special, ts) for m in self.models}
                base_measured = measured_decoder_s(drun) if ct == "int8" else {}
                self.dec_base[(label, ct)] = (raws["base"][0], base_measured)
                for m, (raw, a_r) in raws.items():
                    self.dec_raw[(label, ct, m)] = raw
                    self.dec[(label, ct, m)] = scaled(raw, raws["base"][0], base_measured)
                    self.a_r[(label, ct, m)] = a_r

    def table(self, ct: str, shapes: dict) -> list[str]:
        systems = ["exact", "exact, auto"] if ct == "float32" else ["default", "auto", "auto, no map"]
        names = ("`--exact` / `--exact --audio-context auto`" if ct == "float32"
                 else "default / `--audio-context auto` / `auto` without a map")
        lines = ["| model | encoder 30 s (ms) | step (ms) | pass of 5 (ms) | decoder S, timestamps | "
                 "decoder S, no timestamps | A_r % | end to end vs tuned stock: " + names + " |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for m in self.models:
            shape = shapes[(m, ct)]
            per = "; ".join(" / ".join(f"{self.e2e[m][(s, g)]:.2f}" for s in systems) for g in REGIMES)
            lines.append(f"| {m} | {shapes[(m, 'int8')].encoder_ms():.0f} | {shape.cost.step_ms:.1f} | "
                         f"{shape.cost.batch(5):.1f} | {fmt(self.dec.get(('timestamps', ct, m), {}))} | "
                         f"{fmt(self.dec.get(('no timestamps', ct, m), {}))} | "
                         f"{fmt(self.a_r.get(('timestamps', ct, m), {}), digits=0)} | {per} |")
        return lines

    def check(self) -> list[str]:
        base_e2e, measured = self.e2e_base
        lines = ["Base, measured against the raw projection (scripted / structured / open):", ""]
        for label, ct in self.dec_base:
            raw, meas = self.dec_base[(label, ct)]
            if meas:
                lines.append(f"- decoder S, {label}: measured {fmt(meas)}, replayed {fmt(raw)}")
        for name in MEASURED:
            seen = {g: measured[(name, g)] for g in REGIMES if (name, g) in measured}
            lines.append(f"- end to end, {name}: measured {fmt(seen)}, "
                         f"projected {fmt({g: base_e2e[(name, g)] for g in REGIMES})}")
        return lines


def main(argv=None) -> int:
    from model_shapes import SHAPES, default_root

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="results.json of `tokenmap bench --systems e2e,stock` (timestamps)")
    ap.add_argument("--decoder-run", type=Path, help="results.json of `tokenmap bench --systems tokenmap`")
    ap.add_argument("--no-timestamps-run", type=Path, help="the same with `--no-timestamps`")
    ap.add_argument("--costs", type=Path, required=True, help="model_costs.py --json output (base included)")
    ap.add_argument("--root", type=Path, default=None, help="where model_shapes.py built the shapes")
    ap.add_argument("--models", default=",".join(["base", *SHAPES]))
    ap.add_argument("--md", type=Path, default=None, help="also write the tables here")
    args = ap.parse_args(argv)
    root = (args.root or default_root()).expanduser()
    cost_rows = {(r["model"], r["compute_type"]): r for r in json.loads(args.costs.read_text())["rows"]}
    base_dir = resolve_model("base", download=False)
    shapes = {}
    for model in args.models.split(","):
        model_dir = base_dir if model == "base" else root / model
        for ct in ("int8", "float32"):
            if (model, ct) in cost_rows:
                shapes[(model, ct)] = Shape(model, model_dir, ct, cost_rows[(model, ct)])
    special = SpecialTokens.from_model_dir(str(base_dir))
    proj = Projection(args, shapes, special)
    machine = proj.run["machine"]
    lines = [f"End to end projected from `{machine['command']}` ({machine['date'][:16]}Z, {machine['cpu']}, "
             f"{machine['cores']} cores); base's greedy tokens stand in for each size's. Every figure is the raw "
             "projection times base's measured / projected ratio for the same system and regime.", ""]
    for ct in ("int8", "float32"):
        lines += [f"{ct} decoder" + (" (`--exact`; encoder int8; anchor: tuned stock at int8)" if ct == "float32" else
                                     "; each cell of the last column: scripted; structured; open"), ""]
        lines += proj.table(ct, shapes) + [""]
    lines += proj.check()
    text = "\n".join(lines) + "\n"
    print(text)
    if args.md:
        args.md.parent.mkdir(parents=True, exist_ok=True)
        args.md.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
