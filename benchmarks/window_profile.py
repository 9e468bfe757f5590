"""Window by window: where a window decoded with a map spends its time, against the same window without one.

    python benchmarks/window_profile.py --manifest bench-data/e2e-all.jsonl --set synthetic --contexts full,auto
    python benchmarks/window_profile.py --set telephony --maps results/e2e/maps --map-of maintenance-en --json out.json

Each file is transcribed by tokenmap's default configuration twice per repetition, alternating: with
the file's map (``--maps``/``DOMAIN-LANG.tmap``, or ``--map-of`` for every file: a wrong-domain map)
and without a map, at each audio context of ``--contexts``, in a process with tokenmap's allocator
policy as the ``tokenmap`` command applies it (``--no-malloc-policy``: glibc's defaults here). Every
run starts with fresh draft controllers and no session cache, as a new process would. The engine
calls are timed where they happen: the encoder, the loop's ``prefill`` and its passes
(``forward_step``/``forward_batch`` on the fork), and plain ``generate`` (stock CTranslate2 in the
worker, where windows without drafts go); the loop's Python is its wall time less its engine calls.

Prints, per context, the time with a map over the time without (> 1: the map is faster), the split
of the decoder's time, and the window gate's decisions (windows the loop decoded or sent to
``generate``); ``--windows`` prints every file.
"""
import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("encode", "prefill", "passes", "python", "generate", "total", "rules", "drafter", "replay")
#: the systems a file is transcribed by: with its map, without one, (``--without-replay``) with its map
#: but a window gate that does not learn from the windows it sends to plain ``generate``, and
#: (``--numpy-rules``) with its map but the loop's row math in numpy instead of tokenmap's C library, and
#: (``--without-spelling``) with its map but drafts that match token ids only (no spelling resync)
SYSTEMS = ("map", "nomap", "map0", "mapnp", "mapid")


class Clock:
    """Seconds spent in named calls, summed; :meth:`wrap` times a callable under a name."""

    def __init__(self):
        self.t = dict.fromkeys(FIELDS, 0.0)
        self.calls = {"generate": 0, "passes": 0}
        self.replaying = False

    def wrap(self, name: str, fn):
        def timed(*args, **kwargs):
            if self.replaying and name == "drafter":  # a replay's drafts are the replay's time
                return fn(*args, **kwargs)
            self.replaying = name == "replay"
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.t[name] += time.perf_counter() - started
                self.replaying = False
                if name in self.calls:
                    self.calls[name] += 1
        return timed


class TimedDecoder:
    """The fork's model with ``prefill`` and the passes timed on a :class:`Clock`."""

    def __init__(self, inner, clock: Clock):
        self.inner = inner
        self.prefill = clock.wrap("prefill", inner.prefill)
        self.forward_step = clock.wrap("passes", inner.forward_step)
        self.forward_batch = clock.wrap("passes", inner.forward_batch)

    def __getattr__(self, name):
        return getattr(self.inner, name)


CLASSES = ("another time", "segment went on", "segment ended", "first words", "tokenization", "punctuation",
           "map branch", "unseen")


class Losses:
    """Every verify pass's draft and outcome (``_Window.verify`` wrapped), and the first wrong token of each
    rejected draft classified, in this order: both a timestamp, of another time; a drafted timestamp where
    the model wrote text; the model's timestamp or end of text where the draft went on; within the
    first two text tokens of a segment; the same text split into other tokens (one token's text a prefix of
    the other's); punctuation on either side; a continuation the map holds after the context's last two
    tokens (another branch); else content the map never saw there."""

    def __init__(self, special, text):
        self.special, self.text = special, text
        self.passes: list[tuple[list[int], list[int], int, int]] = []  # (tokens before, draft, kept, model's next)
        self.counts = dict.fromkeys(CLASSES, 0)
        self.lost = dict.fromkeys(CLASSES, 0)  # drafted tokens rejected, by the class of the first

    def install(self):
        from tokenmap.decode import speculative

        original = speculative._Window.verify
        passes = self.passes

        def verify(win, state, feed, draft):
            before = list(win.tokens)
            out = original(win, state, feed, draft)
            passes.append((before, list(draft), out[1], out[0][0]))
            return out
        speculative._Window.verify = verify
        return lambda: setattr(speculative._Window, "verify", original)

    def classify(self, token_map) -> None:
        """Classify the rejected drafts recorded since the last call, against ``token_map``."""
        windows: list[list] = []
        for entry in self.passes:  # a pass with no tokens before it opens a window
            if not entry[0] or not windows:
                windows.append([])
            windows[-1].append(entry)
        for passes in windows:
            before, draft, kept, model_next = passes[-1]
            final = before + draft[:kept] + [model_next]  # the window's tokens, as the model decided them
            for before, draft, kept, model_next in passes:
                if kept < len(draft):
                    kind = self.kind(before + draft[:kept], draft[kept:], final[len(before) + kept:], token_map)
                    self.counts[kind] += 1
                    self.lost[kind] += len(draft) - kept
        self.passes.clear()

    def kind(self, context: list[int], drafted: list[int], model: list[int], token_map) -> str:
        eot = self.special.eot
        if drafted[0] >= eot or model[0] >= eot:
            if drafted[0] > eot and model[0] > eot:
                return CLASSES[0]
            return CLASSES[1 if model[0] < eot else 2]
        stamps = [i for i, t in enumerate(context) if t >= eot]
        if len(context) - (stamps[-1] + 1 if stamps else 0) < 2:
            return CLASSES[3]
        d, m = self.text(drafted[:1]), self.text(model[:1])
        d_run = self.text([t for t in drafted[:4] if t < eot])
        m_run = self.text([t for t in model[:4] if t < eot])
        same = 0
        while same < min(len(d_run), len(m_run)) and d_run[same] == m_run[same]:
            same += 1
        if same >= max(len(d), len(m)):  # the same text, split into other tokens
            return CLASSES[4]
        if any(x.strip() and not any(c.isalnum() for c in x) for x in (d, m)):
            return CLASSES[5]
        node = token_map.walk(context[-2:]) if token_map is not None else -1
        if node > 0 and token_map.child(node, model[0]) > 0:
            return CLASSES[6]
        return CLASSES[7]


def run_once(model, audio: str, lang: str, token_map, context: str, controllers: dict | None = None,
             replay: bool = True, native: bool = True, spelling: bool = True) -> dict:
    """One transcription; its clock, decoder statistics and text. ``controllers``: the draft controllers
    to decode with (what the earlier files of a session taught them; kept there), else fresh ones, as a
    new process has. ``replay=False``: the window gate does not learn from the windows it sends to plain
    ``generate`` (the replay of their tokens is skipped), as before it did. ``native=False``: the loop's
    row math runs in numpy (``tokenmap.runtime.nativelib.row_math`` answers None). ``spelling=False``: the
    map's drafter matches token ids only (the model's :class:`tokenmap.decode.special.SpecialTokens` without
    its spelling)."""
    sm = model.model
    model.token_map = token_map
    sm.drafting._per_map = {} if controllers is None else controllers
    clock = Clock()
    decoder, plain, encode = sm.decoder, sm.plain.generate, sm.windows.encode
    sm.decoder = TimedDecoder(decoder, clock)
    sm.plain.generate = clock.wrap("generate", plain)
    sm.windows.encode = clock.wrap("encode", encode)  # each call's session passes through
    restore = None if replay else without_replay()
    unnative = None if native else without_native()
    special = sm.drafting.special
    if not spelling:
        sm.drafting.special = dataclasses.replace(special, spelling=None)
    untime = time_parts(clock)
    try:
        started = time.perf_counter()
        segments, _ = model.transcribe(audio, language=lang, beam_size=1, temperature=0.0,
                                       vad_filter=False, audio_context=context)
        text = " ".join(s.text.strip() for s in segments)
        clock.t["total"] = time.perf_counter() - started
    finally:
        sm.decoder, sm.drafting.special = decoder, special
        del sm.plain.generate, sm.windows.encode  # the instance attributes; the methods show through again
        untime()
        if restore:
            restore()
        if unnative:
            unnative()
    stats = model.last_stats()
    loop_s = stats["decoder_seconds"] - clock.t["generate"]  # the decoder's time, less plain generate's
    clock.t["python"] = max(0.0, loop_s - clock.t["prefill"] - clock.t["passes"])
    counts = {k: stats[k] for k in ("windows", "plain_windows", "tokens", "drafts", "drafted", "accepted", "guarded")}
    return dict(clock.t, text=text, n_passes=stats["passes"], **counts)


def time_parts(clock: Clock):
    """Time the loop's rules (``RuleSet.choose_rows``), its drafter and the replays of plain windows on
    ``clock``; returns what undoes it."""
    from tokenmap.decode import model_drafting as drafting
    from tokenmap.decode.drafters import ChainDrafter
    from tokenmap.decode.rules import RuleSet

    saved = RuleSet.choose_rows, ChainDrafter.draft, drafting.replay_generated
    RuleSet.choose_rows = clock.wrap("rules", saved[0])
    ChainDrafter.draft = clock.wrap("drafter", saved[1])
    drafting.replay_generated = clock.wrap("replay", saved[2])

    def undo():
        RuleSet.choose_rows, ChainDrafter.draft, drafting.replay_generated = saved
    return undo


def without_replay():
    """Turn off the replay of plain windows into the window gate; returns what turns it on again."""
    from tokenmap.decode import model_drafting as drafting
    from tokenmap.decode.gate import WindowGate

    replay, record = drafting.replay_generated, WindowGate.record_replay
    drafting.replay_generated = lambda *args, **kwargs: None
    WindowGate.record_replay = lambda self, stats: None

    def restore():
        drafting.replay_generated, WindowGate.record_replay = replay, record
    return restore


def without_native():
    """Run the loop's row math in numpy; returns what restores tokenmap's C library."""
    from tokenmap.runtime import nativelib

    saved = nativelib.row_math
    nativelib.row_math = lambda: None

    def restore():
        nativelib.row_math = saved
    return restore


def map_file(folder: Path, key: str) -> Path:
    """``folder/KEY.tmap``; when missing, built from the domain's corpus in corpora/ (``KEY`` is
    ``DOMAIN-LANG``) as ``tokenmap bench`` builds its maps."""
    path = folder / f"{key}.tmap"
    if path.exists():
        return path
    from tokenmap_bench import ensure_map

    domain, lang = key.rsplit("-", 1)
    built = ensure_map(ROOT / "corpora", domain, lang, folder, "base")
    if built is None:
        raise SystemExit(f"no map {path}, and no corpus in corpora/ to build it from")
    return built


def median_run(runs: list[dict]) -> dict:
    out = {k: statistics.median(r[k] for r in runs) for k in FIELDS}
    out.update({k: v for k, v in runs[0].items() if k not in FIELDS})
    return out


def summarize(rows: list[dict], context: str) -> str:
    sums = {s: {k: sum(r[s][k] for r in rows) for k in FIELDS + ("tokens", "n_passes", "windows", "plain_windows",
                                                                  "drafts", "drafted", "accepted")}
            for s in SYSTEMS if s in rows[0]}
    m, n = sums["map"], sums["nomap"]
    lines = [f"context {context}: {len(rows)} files, map vs no map {n['total'] / m['total']:.3f}x "
             f"(no map {n['total']:.2f} s, map {m['total']:.2f} s), texts equal "
             f"{sum(r['map']['text'] == r['nomap']['text'] for r in rows)}/{len(rows)}"]
    same = [r for r in rows if r["map"]["tokens"] == r["nomap"]["tokens"]]
    if same and len(same) < len(rows):
        lines.append("  like for like (" + f"{len(same)} files both decoded to the same tokens): " + ", ".join(
            f"{name} {_sum(same, 'nomap', 'total') / _sum(same, name, 'total'):.3f}x end to end, decoder "
            f"{_decoder(same, 'nomap') / _decoder(same, name):.3f}x" for name in sums if name != "nomap"))
    for other, what in (("map0", "without replays into the gate"), ("mapnp", "the row math in numpy"),
                        ("mapid", "drafts by token ids only")):
        if other in sums:
            lines.append(f"  {what}: map vs no map {n['total'] / sums[other]['total']:.3f}x "
                         f"(map {sums[other]['total']:.2f} s)")
    for name, s in sums.items():
        dec = s["prefill"] + s["passes"] + s["python"] + s["generate"]
        lines.append(f"  {name:5s} encode {s['encode']:6.2f} decoder {dec:6.2f} = prefill {s['prefill']:5.2f} "
                     f"passes {s['passes']:5.2f} python {s['python']:5.2f} generate {s['generate']:5.2f} | "
                     f"windows {s['windows']} to generate {s['plain_windows']} | tokens {s['tokens']} "
                     f"passes {s['n_passes']}")
    loop = [r["map"] for r in rows if r["map"]["windows"] > r["map"]["plain_windows"]]
    if loop:
        tokens = sum(r["tokens"] for r in loop)
        lines.append(f"  loop windows: {sum(r['windows'] - r['plain_windows'] for r in loop)}, tokens {tokens}, "
                     f"passes {sum(r['n_passes'] for r in loop)}, drafts {sum(r['drafts'] for r in loop)}, drafted "
                     f"{sum(r['drafted'] for r in loop)}, kept {sum(r['accepted'] for r in loop)}")
    for name in ("map", "mapnp"):
        if name in sums:
            lines.extend(_python_line(rows, name, sums[name]))
    plain = sum(r["map"]["plain_windows"] for r in rows)
    if plain:
        lines.append(f"  replays: {m['replay'] * 1e3 / plain:.1f} ms a plain window")
    return "\n".join(lines)


def _sum(rows: list[dict], name: str, field: str) -> float:
    return sum(r[name][field] for r in rows)


def _decoder(rows: list[dict], name: str) -> float:
    return sum(_sum(rows, name, k) for k in ("prefill", "passes", "python", "generate"))


def _python_line(rows: list[dict], name: str, m: dict) -> list[str]:
    passes = sum(r[name]["n_passes"] - r[name]["windows"] + r[name]["plain_windows"] for r in rows)
    if not passes:
        return []
    return [f"  {name}: the loop's Python a pass {m['python'] * 1e3 / passes:.2f} ms: "
            f"rules {m['rules'] * 1e3 / passes:.2f}, "
            f"drafter {m['drafter'] * 1e3 / passes:.2f}; passes {m['passes'] * 1e3 / passes:.2f} ms, "
            f"prefill {m['prefill'] * 1e3 / max(1, m['windows'] - m['plain_windows']):.1f} ms a loop window"]


def profile_file(model, u: dict, base: Path, token_map, context: str, index: int, reps: int,
                 sessions: list | None, losses: Losses, systems: tuple = SYSTEMS[:2]) -> dict:
    """One file by each of ``systems``, in turn (the order rotates per file and repetition), after a
    warm-up round; the medians, and the first timed map run's rejected drafts classified. ``sessions``:
    per repetition, each system's controllers (what the earlier files taught them)."""
    runs = {name: [] for name in systems}
    for rep in range(reps + 1):
        shift = (rep + index) % len(systems)
        for name in systems[shift:] + systems[:shift]:
            controllers = sessions[rep].setdefault(name, {}) if sessions is not None and name != "nomap" else None
            r = run_once(model, str(base / u["audio"]), u["lang"], None if name == "nomap" else token_map, context,
                         controllers, replay=name != "map0", native=name != "mapnp", spelling=name != "mapid")
            if rep:
                runs[name].append(r)
            if rep == 1 and name == "map":
                losses.classify(token_map)
            losses.passes.clear()
    row = {name: median_run(rs) for name, rs in runs.items()}
    row["id"] = u["id"]
    return row


def file_line(row: dict) -> str:
    m, n = row["map"], row["nomap"]
    return (f"{row['id'][:44]:44s} {n['total'] / m['total']:.3f}x map: pre {m['prefill']*1e3:4.0f} pass "
            f"{m['passes']*1e3:4.0f} py {m['python']*1e3:3.0f} gen {m['generate']*1e3:4.0f} tok {m['tokens']} "
            f"passes {m['n_passes']} drafts {m['drafts']} kept {m['accepted']}/{m['drafted']} | nomap gen "
            f"{n['generate']*1e3:4.0f} tok {n['tokens']}")


def _systems(args) -> tuple:
    return SYSTEMS[:2] + (("map0",) if args.without_replay else ()) + (("mapnp",) if args.numpy_rules else ()) \
        + (("mapid",) if args.without_spelling else ())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--manifest", default=str(ROOT / "bench-data/e2e-all.jsonl"))
    ap.add_argument("--set", default="synthetic", help="the manifest's set field (all: every line)")
    ap.add_argument("--langs", default=None, help="comma-separated languages to keep (default: all)")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--stride", type=int, default=1, help="every N-th file of the set")
    ap.add_argument("--reps", type=int, default=2, help="timed repetitions per file and system (after a warm-up)")
    ap.add_argument("--maps", default=str(ROOT / "results/e2e/maps"),
                    help="folder of DOMAIN-LANG.tmap (a missing one is built from corpora/DOMAIN)")
    ap.add_argument("--map-of", default=None, help="one DOMAIN-LANG map for every file (a wrong domain)")
    ap.add_argument("--contexts", default="full,auto")
    ap.add_argument("--windows", action="store_true", help="print every file")
    ap.add_argument("--session", action="store_true",
                    help="one process transcribing the files in turn: the draft controllers and the window gate "
                    "learn across files (one set per repetition, so no run learns from its own file's earlier run)")
    ap.add_argument("--without-replay", action="store_true",
                    help="a third system: the map, with a window gate that does not learn from the windows it "
                    "sends to plain generate (their tokens are not replayed through the drafters)")
    ap.add_argument("--numpy-rules", action="store_true",
                    help="a system more: the map, with the loop's row math in numpy instead of tokenmap's C library")
    ap.add_argument("--without-spelling", action="store_true",
                    help="a system more: the map, with a drafter that matches token ids only instead of following "
                    "words the model spells in other pieces than the map's")
    ap.add_argument("--encoder", default="auto", help="the encoder engine (tokenmap.WhisperModel's encoder=)")
    ap.add_argument("--json", default=None, help="write every file's rows here")
    ap.add_argument("--no-malloc-policy", action="store_true",
                    help="leave this process's allocator at glibc's defaults, as a library process that did not "
                    "ask for tokenmap's policy (the stock worker keeps it); default: applied, as the tokenmap "
                    "command does")
    args = ap.parse_args(argv)
    import tokenmap
    from tokenmap import load_maps, resolve_model
    from tokenmap.runtime import memory

    if not args.no_malloc_policy:
        memory.install()  # as the tokenmap command does, before any model loads (TOKENMAP_MALLOC=default: off)

    utts = [json.loads(line) for line in open(args.manifest)]
    utts = [u for u in utts if args.set in ("all", u["set"]) and (not args.langs or u["lang"] in args.langs.split(","))]
    utts = utts[:: args.stride][: args.limit]
    base = Path(args.manifest).parent
    model = tokenmap.WhisperModel(str(resolve_model("base", download=False)), compute_type="int8", cpu_threads=2,
                                  encoder=args.encoder,
                                  session_cache=False)
    special = model.model.special
    losses = Losses(special, lambda ids: model.hf_tokenizer.decode([t for t in ids if t < special.eot]))
    losses.install()
    maps, out = {}, {}
    for context in args.contexts.split(","):
        losses.counts, losses.lost = dict.fromkeys(CLASSES, 0), dict.fromkeys(CLASSES, 0)
        sessions = [{} for _ in range(args.reps + 1)]  # per repetition and system: its controllers, per map
        rows = []
        for i, u in enumerate(utts):
            key = args.map_of or f"{u['domain']}-{u['lang']}"
            if key not in maps:
                maps[key] = load_maps(str(map_file(Path(args.maps), key)))[0]
            rows.append(profile_file(model, u, base, maps[key], context, i, args.reps,
                                     sessions if args.session else None, losses,
                                     _systems(args)))
            if args.windows:
                print(file_line(rows[-1]), flush=True)
        print(summarize(rows, context), flush=True)
        total = sum(losses.counts.values()) or 1
        print("  rejected drafts: " + ", ".join(f"{k} {v} ({v / total:.0%}; {losses.lost[k]} tokens)"
                                                for k, v in losses.counts.items()), flush=True)
        out[context] = {"rows": rows, "rejected": losses.counts, "rejected_tokens": losses.lost}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
