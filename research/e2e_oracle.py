#!/usr/bin/env python3
"""How much can any token map gain end to end on short prompts? The oracle, measured through ``transcribe``.

Every file is transcribed, interleaved and in rotating order, by ``tokenmap.WhisperModel`` at
``audio_context="auto"`` (base, int8, 2 threads, language given, greedy, no VAD, no session cache)
with:

* ``nomap``: no map (windows go to plain ``generate``, on stock CTranslate2 in the worker);
* ``train``: a map of the language's ``corpora/telephony/<lang>/train.txt`` (the measured prompts'
  text is not in it);
* ``inventory``: a map of the whole inventory, train and test text (the bench's map of the task,
  ``tokenmap_bench.ensure_map``: the measured prompts' text is in it, never their audio);
* ``oracle``: the speculative loop drafting the window's own tokens, as recorded by a first decode of
  the same model without drafts (a perfect map: every pass verifies the rest of the window), with
  no window gate.

Languages outside ``corpora/telephony`` (the WER sets' Asterisk prompts in Italian and Russian) have no
train split: ``--prompt-list LANG=FILE`` names their prompt list (Asterisk's ``core-sounds-LANG.txt.gz``,
``name: text`` lines), whose map is ``inventory``; ``train`` is then not run.

Prints per language the sum of the medians of ``--reps`` timed rounds (after a warm-up round) and each
system's ratio to ``nomap``, and whether the transcripts equal ``nomap``'s.

    .venv/bin/python research/e2e_oracle.py --manifest bench-data/full.jsonl --set telephony --reps 3
    .venv/bin/python research/e2e_oracle.py --manifest bench-data/wer-150/manifest.jsonl --set asterisk-it \
        --prompt-list it=/usr/share/doc/asterisk-core-sounds-it/core-sounds-it.txt.gz --limit 60
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import statistics
import time
from pathlib import Path

import tokenmap
import tokenmap.decode.model_drafting as drafting
from tokenmap import build_map, load_maps, resolve_model
from tokenmap.decode.drafters import FixedDrafter
from tokenmap_bench import ensure_map

ROOT = Path(__file__).resolve().parents[1]


class Recorder:
    """Wraps ``decode_window`` where :mod:`tokenmap.decode.model_drafting` calls it: records each window's tokens
    while ``on``."""

    def __init__(self):
        self.on, self.windows, self.inner = False, [], drafting.decode_window

    def __call__(self, *args, **kwargs):
        result = self.inner(*args, **kwargs)
        if self.on:
            self.windows.append([t for t in result.tokens])
        return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest", default=str(ROOT / "bench-data/full.jsonl"))
    ap.add_argument("--set", default="telephony")
    ap.add_argument("--cache", default="/tmp/e2e-oracle-maps")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--prompt-list", action="append", default=[], metavar="LANG=FILE",
                    help="the prompt list of a language without corpora/telephony/LANG")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.manifest)]
    rows = [r for r in rows if r["set"] == args.set][: args.limit]
    base = Path(args.manifest).parent
    model_dir = str(resolve_model("base", download=False))
    recorder = drafting.decode_window = Recorder()
    kw = dict(compute_type="int8", cpu_threads=2, session_cache=False, audio_context="auto")
    models = {name: tokenmap.WhisperModel(model_dir, **kw) for name in ("nomap", "train", "inventory", "oracle")}
    oracle_windows: list = []
    models["oracle"].model.drafting.make_drafter = lambda *a, **k: FixedDrafter(oracle_windows.pop(0)
                                                                                if oracle_windows else [])
    models["oracle"].model.drafting.adaptive = False  # no window gate: every window drafts
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    maps = {}
    lists = dict(item.split("=", 1) for item in args.prompt_list)
    for lang in sorted({r["lang"] for r in rows}):
        if lang in lists:
            inventory = cache / f"prompt-list-{lang}.tmap"
            if not inventory.exists():
                text = cache / f"prompt-list-{lang}.txt"
                text.write_text("\n".join(prompt_list(lists[lang])) + "\n", encoding="utf-8")
                build_map([text], inventory, model="base", force=True)
            inv = load_maps(str(inventory))[0]
            maps[lang] = {"train": None, "inventory": inv, "oracle": inv}
            continue
        train = cache / f"telephony-{lang}-train.tmap"
        if not train.exists():
            build_map([ROOT / "corpora/telephony" / lang / "train.txt"], train, model="base", force=True)
        maps[lang] = {"train": load_maps(str(train))[0],
                      "inventory": load_maps(str(ensure_map(ROOT / "corpora", "telephony", lang, cache, "base")))[0],
                      "oracle": load_maps(str(train))[0]}  # any map: it only opens the speculative path

    def run(name, audio, lang):
        model = models[name]
        if name == "oracle":
            oracle_windows[:] = [list(w) for w in recorded]
        t = time.perf_counter()
        segments, _ = model.transcribe(audio, language=lang, beam_size=1, temperature=0.0, vad_filter=False)
        text = " ".join(s.text.strip() for s in segments)
        return time.perf_counter() - t, text

    sums = collections.defaultdict(lambda: collections.defaultdict(float))
    same = collections.defaultdict(lambda: collections.defaultdict(int))
    for i, r in enumerate(rows):
        audio, lang = str(base / r["audio"]), r["lang"]
        names = [n for n in models if n in ("nomap", "oracle") or maps[lang][n] is not None]
        for name in ("train", "inventory", "oracle"):
            models[name].token_map = maps[lang][name]
        recorder.on, recorder.windows, oracle_windows[:] = True, [], []  # the loop without drafts
        segments, _ = models["oracle"].transcribe(audio, language=lang, beam_size=1, temperature=0.0,
                                                  vad_filter=False)
        list(segments)  # decoding happens as the segments are read
        recorder.on = False
        recorded = list(recorder.windows)
        times = collections.defaultdict(list)
        texts = {}
        for rep in range(args.reps + 1):
            shift = (rep + i) % len(names)
            for name in names[shift:] + names[:shift]:
                seconds, texts[name] = run(name, audio, lang)
                if rep:
                    times[name].append(seconds)
        for name in names:
            for key in (lang, "all"):
                sums[key][name] += statistics.median(times[name])
                same[key][name] += texts[name] == texts["nomap"]
        for key in (lang, "all"):  # a system a language does not run is left out of its row
            sums[key].setdefault("train", float("nan"))
        sums[lang]["files"] += 1
        sums["all"]["files"] += 1
        print(r["id"][:50], " ".join(f"{n} {statistics.median(times[n]) * 1e3:.0f}ms" for n in names), flush=True)
    names = list(models)
    print("\n| lang | files | " + " | ".join(f"{n} s (vs nomap, same text)" for n in names) + " |")
    print("| --- | --- |" + " --- |" * len(names))
    for key, d in sums.items():
        cells = [f"{d[n]:.2f} ({d['nomap'] / d[n]:.2f}×, {same[key][n]})" if d[n] == d[n] else "–" for n in names]
        print(f"| {key} | {int(d['files'])} | " + " | ".join(cells) + " |")


def prompt_list(path: str) -> list[str]:
    """The prompts' texts of an Asterisk prompt list (``name: text`` lines, ``;`` comments; gzip or not)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8-sig") as f:
        lines = [line.split(":", 1)[1].strip() for line in f if ":" in line and not line.startswith(";")]
    return [line for line in lines if line]


if __name__ == "__main__":
    main()
