"""Where does an end-to-end ``transcribe()`` spend its time? Per stage, per system.

    python research/e2e_profile.py [--manifest bench-data/full.jsonl] [--set dictation] [--limit N] [--reps 2]
    python research/e2e_profile.py --systems tokenmap-nomap@ctranslate2,tokenmap-nomap@openvino,stock

Runs, alternating on each utterance: tokenmap's ``WhisperModel`` (default configuration,
the utterance's per-task map from ``--maps``; ``tokenmap-recall``: the same plus
``--recall``), faster-whisper on the fork in this process, and stock faster-whisper in ``.venv-stock``
(this same file, run there with
``--child``). Each engine object is wrapped so that every ``encode`` and ``generate``
call is timed; the rest of ``transcribe()`` (audio decoding, features, segment
building) is the remainder. Prints sums per system: windows, encode, generate, other, total.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Timed:
    """Times a ctranslate2 Whisper's ``encode`` and ``generate``, or tokenmap's encoder door's (``model.model.windows.
    encoder``) ``encode_held`` and ``encode``; a worker's encode may end inside ``generate``."""

    BUCKETS = {"encode": "encode", "encode_held": "encode", "generate": "generate"}

    def __init__(self, inner, t=None):
        self.inner, self.t = inner, t or {"encode": 0.0, "generate": 0.0, "windows": 0}

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if name not in self.BUCKETS:
            return attr

        def timed(*a, **k):
            t0 = time.perf_counter()
            out = attr(*a, **k)
            self.t[self.BUCKETS[name]] += time.perf_counter() - t0
            self.t["windows"] += name != "generate"
            return out
        return timed


def run_one(model, audio, lang, timestamps=True, vad=False):
    timed = Timed(model.model)
    windows = getattr(model.model, "windows", None)  # tokenmap: its encoder door
    model.model = timed
    if windows is not None:
        windows.encoder = Timed(windows.encoder, timed.t)
    try:
        t0 = time.perf_counter()
        segments, _ = model.transcribe(audio, language=lang, beam_size=1, vad_filter=vad,
                                       without_timestamps=not timestamps, temperature=0.0)
        text = " ".join(s.text.strip() for s in segments)
        total = time.perf_counter() - t0
    finally:
        model.model = timed.inner
        if windows is not None:
            windows.encoder = windows.encoder.inner
    return dict(timed.t, total=total, text=text)


def child(model_dir):
    """Serve stock faster-whisper: one JSON request per line (audio, lang), one JSON answer."""
    import faster_whisper
    model = faster_whisper.WhisperModel(model_dir, device="cpu", compute_type="int8", cpu_threads=2)
    out = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        out.write(json.dumps(run_one(model, req["audio"], req["lang"], vad=req.get("vad", False))) + "\n")
        out.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", default=str(ROOT / "bench-data/full.jsonl"))
    ap.add_argument("--set", default="dictation")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--maps", default=str(ROOT / "results/maps"))
    ap.add_argument("--recall", default=str(ROOT / "bench-data/recall-telephone.trec"),
                    help="recall index of system tokenmap-recall")
    ap.add_argument("--systems", default="tokenmap,fw-fork,stock",
                    help="of tokenmap (default configuration), tokenmap-same (int8 decoder, not exact), "
                    "tokenmap-nomap (default configuration, no drafts: its float32 greedy), tokenmap-recall "
                    "(tokenmap plus --recall), fw-fork, stock; a tokenmap system with @ENGINE encodes on that "
                    "engine (WhisperModel's encoder=, e.g. tokenmap-nomap@openvino)")
    ap.add_argument("--detect", action="store_true", help="no language given: every system detects it")
    ap.add_argument("--vad", action="store_true", help="vad_filter=True for every system")
    ap.add_argument("--child", default=None)
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    import tokenmap  # first: it sets the thread wait policy and decoder packing before CTranslate2 loads

    # isort: split
    import faster_whisper

    from tokenmap import load_maps, resolve_model
    from tokenmap_bench import tuned_environment

    model_dir = str(resolve_model("base", download=False))
    utts = [json.loads(line) for line in open(args.manifest)]
    utts = [u for u in utts if args.set in ("all", u["set"])][: args.limit]
    base = Path(args.manifest).parent
    stock = subprocess.Popen([str(ROOT / ".venv-stock/bin/python"), __file__, "--child", model_dir],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=tuned_environment())
    chosen = args.systems.split(",")
    kw = dict(compute_type="int8", cpu_threads=2, session_cache=False)
    tms = {"tokenmap": lambda **e: tokenmap.WhisperModel(model_dir, **kw, **e),
           "tokenmap-same": lambda **e: tokenmap.WhisperModel(model_dir, decoder_compute_type="same", **kw, **e),
           "tokenmap-nomap": lambda **e: tokenmap.WhisperModel(model_dir, prompt_lookup=False, **kw, **e),
           "tokenmap-recall": lambda **e: tokenmap.WhisperModel(model_dir, recall=args.recall, **kw, **e)}
    tms = {name: tms[name.partition("@")[0]](**({"encoder": name.partition("@")[2]} if "@" in name else {}))
           for name in chosen if name.partition("@")[0] in tms}
    fw = faster_whisper.WhisperModel(model_dir, device="cpu", compute_type="int8", cpu_threads=2)
    maps = {}

    def run_stock(audio, lang):
        stock.stdin.write(json.dumps({"audio": audio, "lang": lang, "vad": args.vad}) + "\n")
        stock.stdin.flush()
        return json.loads(stock.stdout.readline())

    sums = {s: {"encode": 0.0, "generate": 0.0, "other": 0.0, "total": 0.0, "windows": 0} for s in chosen}
    same = exact = 0
    for i, u in enumerate(utts):
        audio = str(base / u["audio"])
        key = f"{u.get('domain', u['set'])}-{u['lang']}"
        if key not in maps:
            path = Path(args.maps) / f"{key}.tmap"
            maps[key] = load_maps(str(path))[0] if path.exists() else None
        for name, tm in tms.items():
            tm.token_map = None if name.startswith("tokenmap-nomap") else maps[key]
        lang = None if args.detect else u["lang"]
        systems = {name: (lambda tm=tm: run_one(tm, audio, lang, vad=args.vad)) for name, tm in tms.items()}
        systems.update({"fw-fork": lambda: run_one(fw, audio, lang, vad=args.vad),
                        "stock": lambda: run_stock(audio, lang)})
        systems = {name: systems[name] for name in chosen}
        runs = {s: [] for s in systems}
        names = list(systems)
        for rep in range(args.reps + 1):  # the first round is a warm-up
            shift = (rep + i) % len(names)
            for s in names[shift:] + names[:shift]:
                r = systems[s]()
                if rep:
                    runs[s].append(r)
        line = [u["id"][:40]]
        for s, rs in runs.items():
            med = {k: statistics.median(r[k] for r in rs) for k in ("encode", "generate", "total")}
            med["windows"] = rs[0]["windows"]
            med["other"] = med["total"] - med["encode"] - med["generate"]
            for k in sums[s]:
                sums[s][k] += med[k]
            line.append(f"{s} w{med['windows']} e{med['encode']:.2f} g{med['generate']:.2f} "
                        f"o{med['other']:.2f} T{med['total']:.2f}")
        same += runs[chosen[0]][0]["text"] == runs[chosen[-1]][0]["text"]
        if "tokenmap" in runs and "tokenmap-nomap" in runs:
            exact += runs["tokenmap"][0]["text"] == runs["tokenmap-nomap"][0]["text"]
        print(" | ".join(line), flush=True)
    print(f"\n{len(utts)} utterances, texts {chosen[0]} == {chosen[-1]}: {same}")
    if "tokenmap" in chosen and "tokenmap-nomap" in chosen:
        print(f"texts tokenmap == tokenmap-nomap (plain decoding of the same configuration): {exact}")
    for s, d in sums.items():
        print(f"{s:9s} windows {d['windows']:3d} encode {d['encode']:6.2f} generate {d['generate']:6.2f} "
              f"other {d['other']:5.2f} total {d['total']:6.2f}  "
              f"{chosen[-1]}/this {sums[chosen[-1]]['total'] / d['total']:.3f}")
    stock.stdin.close()


if __name__ == "__main__":
    main()
