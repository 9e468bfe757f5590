#!/usr/bin/env python3
"""When has a greedy decode clearly started to repeat? The loop rule measured on real speech.

Two steps:

``collect`` transcribes real speech with ``tokenmap.WhisperModel`` (no map, base int8, the loop stop
off) and writes every ``generate`` call's prompt and hypotheses, one JSON line a window::

    .venv/bin/python research/loop_rule.py collect --encoder ctranslate2 --out results/loops/ct2.jsonl
    .venv/bin/python research/loop_rule.py collect --encoder openvino --out results/loops/ov.jsonl

The sets, split so that nothing reported was tuned on (``dev`` tunes, ``test`` reports):

* ``telephony-train`` (dev): ``--per-lang`` Asterisk prompts a language (en, es, fr) of the corpora's
  train split; ``telephony`` (test): every prompt of the test split;
* ``bench-data/wer/`` (``benchmarks/wer_sets.py``: Asterisk it/ru, Fish Fillets cs/nl, Tux Paint ro),
  each utterance in the split the manifest gives it;
* ``librivox`` (test): the 5 pocketsphinx LibriVox clips, and ``librivox-paused``: the same clips with
  7 s of silence between them (53 s; VAD on, faster-whisper's default temperatures, the reading of
  issue 58). Short files are decoded at temperature 0 without VAD, as the benchmarks decode them.

``analyze`` labels every greedy window (temperature 0) that did not end before the maximum length, or
whose text's compression ratio is above faster-whisper's 2.4, a *loop*, every other a *legit* window,
and measures :class:`tokenmap.decode.loops.LoopRule` on them: false alarms on legit windows with the
margin (the longest repetition and the highest compression ratio any legit window reached against the
rule's thresholds), and for each loop the token at which the rule stops it::

    .venv/bin/python research/loop_rule.py analyze results/loops/ct2.jsonl results/loops/ov.jsonl

``cost`` times cases (the 53 s reading, a crafted loop, ``bench-data/wer`` ids) at faster-whisper's default
temperatures on tokenmap with the stop on and off and on tuned stock, alternated, a fresh model per run::

    .venv/bin/python research/loop_rule.py cost --cases reading,fillets-nl/labyrinth/bl-v-pozadi --reps 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

VOICES = {"en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June"}
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")


def _telephony(split: str, per_lang: int | None):
    from tokenmap_bench import decode_g722

    for lang, voice in VOICES.items():
        rows = []
        for line in (ROOT / "corpora/telephony" / lang / f"{split}.tsv").read_text(encoding="utf-8").splitlines():
            name, _, text = line.partition("\t")
            path = Path("/usr/share/asterisk/sounds") / voice / f"{name}.g722"
            if path.exists() and text.strip():
                rows.append((hashlib.sha256(f"{lang}/{name}".encode()).hexdigest(), name, text.strip(), path))
        rows.sort()
        for _, name, text, path in rows[:per_lang]:
            yield {"set": "telephony" if split == "test" else "telephony-train", "split": "test" if split == "test"
                   else "dev", "id": f"{lang}/{name}", "lang": lang, "text": text,
                   "load": lambda p=path: decode_g722(str(p))}


def utterances(per_lang: int, wer_manifest: Path, sets: set[str] | None, per_set: dict | None = None):
    """Every utterance to decode: dict with set, split, id, lang, text, load (-> samples), long (VAD, default temps)."""
    from tokenmap.audio import load_audio

    items = list(_telephony("train", per_lang)) + list(_telephony("test", None))
    if wer_manifest.exists():
        for line in wer_manifest.read_text().splitlines():
            row = json.loads(line)
            path = wer_manifest.parent / row["audio"]
            items.append({"set": row["set"], "split": row["split"], "id": row["id"], "lang": row["lang"],
                          "text": row["text"], "load": lambda p=path: load_audio(str(p))})
    for path in sorted(LIBRIVOX.glob("*.wav")):
        items.append({"set": "librivox", "split": "test", "id": path.stem, "lang": "en", "text": "",
                      "load": lambda p=path: load_audio(str(p))})
    items.append({"set": "librivox-paused", "split": "test", "id": "librivox-paused", "lang": "en", "text": "",
                  "load": paused_reading, "long": True})
    items = [item for item in items if sets is None or item["set"] in sets]
    if per_set:  # at most per_set of each (set, split), in the order of a hash of their ids
        items.sort(key=lambda item: hashlib.sha256(item["id"].encode()).hexdigest())
        counts: dict = {}
        kept = []
        for item in items:
            key = (item["set"], item["split"])
            counts[key] = counts.get(key, 0) + 1
            if counts[key] <= per_set.get(item["set"], per_set.get("*", 10 ** 9)):
                kept.append(item)
        items = kept
    return items


def paused_reading(load_audio=None):
    """The 5 LibriVox clips in name order with 7 s of silence between them (53 s; research/vad_table.py's)."""
    import numpy as np

    if load_audio is None:
        from tokenmap.audio import load_audio
    pause = np.zeros(7 * 16000, dtype=np.float32)
    clips = [load_audio(str(path)) for path in sorted(LIBRIVOX.glob("*.wav"))]
    return np.concatenate([piece for clip in clips for piece in (clip, pause)][:-1])


class Recorder:
    """Wraps a SpeculativeModel's ``generate``: every call's prompt, options and hypotheses."""

    def __init__(self, speculative):
        self.model = speculative
        self.inner = speculative.generate
        self.calls: list[dict] = []
        speculative.generate = self

    def __call__(self, features, prompts, **kwargs):
        started = time.perf_counter()
        results = self.inner(features, prompts, **kwargs)
        seconds = time.perf_counter() - started
        for prompt, result in zip(prompts, results):
            self.calls.append({
                "prompt": list(prompt), "max_length": kwargs.get("max_length", 448),
                "temperature": kwargs.get("sampling_temperature", 0.0) if kwargs.get("sampling_topk", 1) != 1 else 0.0,
                "hypotheses": [list(map(int, seq)) for seq in result.sequences_ids],
                "scores": [float(s) for s in (result.scores or [])],
                "audio_seconds": getattr(features, "seconds", None) or getattr(getattr(self.model, "_local", None),
                                                                               "seconds", None),
                "decode_seconds": seconds})
        return results


def collect(args) -> int:
    from tokenmap import WhisperModel

    model = WhisperModel(args.model, compute_type="int8", cpu_threads=args.threads, encoder=args.encoder,
                         malloc_policy=True, loop_stop=False)  # the decodes as they would run, loops and all
    recorder = Recorder(model.model)
    per_set = {k: int(v) for k, v in (p.split("=") for p in args.per_set.split(","))} if args.per_set else None
    items = utterances(args.per_lang, Path(args.wer_manifest), set(args.sets.split(",")) if args.sets else None,
                       per_set)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as out:
        for n, item in enumerate(items):
            audio = item["load"]()
            recorder.calls.clear()
            started = time.perf_counter()
            long = item.get("long", False)
            kwargs = {"vad_filter": True} if long else {"temperature": 0.0}
            segments, info = model.transcribe(audio, language=item["lang"], **kwargs)
            text = " ".join(s.text.strip() for s in segments)
            row = {k: item[k] for k in ("set", "split", "id", "lang", "text")}
            row.update(encoder=args.encoder, model=args.model, hypothesis=text, seconds=time.perf_counter() - started,
                       audio_seconds=len(audio) / 16000, windows=recorder.calls)
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
            if n % 25 == 0:
                print(f"{n}/{len(items)} {item['set']} {item['id']}", file=sys.stderr, flush=True)
    return 0


def windows(paths):
    """(row, window) of every recorded greedy window (temperature 0) in the JSON-lines files."""
    for path in paths:
        for line in Path(path).read_text().splitlines():
            row = json.loads(line)
            for window in row["windows"]:
                if window["temperature"] == 0.0:
                    yield row, window


def longest_repetitions(tokens, special, max_unit: int) -> dict:
    """{repeats: (span, unit)}: the longest back-to-back repetition of a unit of 1..``max_unit`` text tokens
    repeated at least ``repeats`` times (2, 3, 4), in text tokens."""
    text = [t for t in tokens if t < special.eot]
    best: dict = {}
    for n in range(1, max_unit + 1):
        run = 0
        for i in range(n, len(text)):
            run = run + 1 if text[i] == text[i - n] else 0
            span = run + n
            for repeats in (2, 3, 4):
                if run and span >= repeats * n and span > best.get(repeats, (0,))[0]:
                    best[repeats] = (span, text[i - n + 1: i + 1])
    return best


def analyze(args) -> int:
    from tokenizers import Tokenizer

    from tokenmap.decode.loops import LoopOptions, compression_ratio, cut_tokens, find_loop, steps_of
    from tokenmap.decode.special import SpecialTokens
    from tokenmap.models import resolve_model

    model_dir = resolve_model("base")
    special = SpecialTokens.from_model_dir(str(model_dir))
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))

    def text(ids):
        return tokenizer.decode([t for t in ids if t < special.eot]).strip()

    options = LoopOptions()
    legit: dict[str, dict] = {}
    loops = []
    for row, window in windows(args.files):
        tokens = window["hypotheses"][0]
        prompt_len = len(window["prompt"])
        unfinished = len(tokens) >= steps_of(window["max_length"], prompt_len)
        ratio = compression_ratio(text(tokens))
        loop = find_loop(tokens, options, special.timestamp_begin, special.eot)
        split = row["split"]
        if unfinished or ratio > 2.4:
            loops.append((row, window, unfinished, ratio, loop, prompt_len))
            continue
        entry = legit.setdefault(split, {"windows": 0, "false_alarms": [], "spans": {}, "max_ratio": (0.0, None),
                                         "max_rate": (0.0, None), "tokens": (0, None)})
        entry["windows"] += 1
        if loop is not None:
            entry["false_alarms"].append((row["set"], row["id"], text(tokens)[:120]))
        where = f"{row['set']}/{row['id']}"
        for repeats, (span, unit) in longest_repetitions(tokens, special, options.max_unit).items():
            if span > entry["spans"].get(repeats, (0,))[0]:
                entry["spans"][repeats] = (span, f"{where}: {text(unit)!r}")
        text_tokens = [t for t in tokens if t < special.eot]
        for end in range(args.ratio_min_tokens, len(text_tokens) + 1):
            r = compression_ratio(text(text_tokens[:end]))
            if r > entry["max_ratio"][0]:
                entry["max_ratio"] = (r, where)
        seconds = window.get("audio_seconds") or 30.0
        rate = len(text_tokens) / max(seconds, 1.0)
        if rate > entry["max_rate"][0]:
            entry["max_rate"] = (rate, f"{where} {len(tokens)} tokens, {seconds:.1f} s")
        if len(tokens) > entry["tokens"][0]:
            entry["tokens"] = (len(tokens), f"{where}, {seconds:.1f} s")
        cap = int(options.cap_tokens + options.cap_rate * (window.get("audio_seconds") or 30.0))
        share = len(tokens) / min(cap, steps_of(window["max_length"], prompt_len))
        entry["recapped"] = entry.get("recapped", 0) + (share >= 1.0)
        if share > entry.get("cap_share", (0.0,))[0]:
            entry["cap_share"] = (share, f"{where}: {len(tokens)} tokens, first cap {cap} steps, {seconds:.1f} s")
    print(f"rule: {options}")
    for split, entry in sorted(legit.items()):
        print(f"[{split}] legit windows {entry['windows']}, false alarms {len(entry['false_alarms'])}")
        for alarm in entry["false_alarms"]:
            print("   false alarm:", alarm)
        for repeats in (2, 3, 4):
            span, where = entry["spans"].get(repeats, (0, "none"))
            print(f"   longest back-to-back repetition of >= {repeats} units (of 1-{options.max_unit} tokens) on a "
                  f"legit window: {span} text tokens ({where}); the rule needs {options.min_span} and "
                  f"{options.min_repeats} units")
        print(f"   highest compression ratio of a legit window's text past {args.ratio_min_tokens} text tokens: "
              f"{entry['max_ratio'][0]:.2f} ({entry['max_ratio'][1]})")
        print(f"   most text tokens a second of audio: {entry['max_rate'][0]:.1f} ({entry['max_rate'][1]})")
        print(f"   most tokens in a window: {entry['tokens'][0]} ({entry['tokens'][1]})")
        print(f"   plain generate's first cap: highest share a legit window used {entry['cap_share'][0]:.2f} "
              f"({entry['cap_share'][1]}); windows decoded twice: {entry.get('recapped', 0)}")
    print("WER at temperature 0, the loop stop off / on (a stopped window's text cut where its repetition began):")
    from tokenmap_bench import wer

    pairs: dict = {}
    for path in args.files:
        for line in Path(path).read_text().splitlines():
            row = json.loads(line)
            greedy = [w for w in row["windows"] if w["temperature"] == 0.0]
            if not row["text"] or row.get("long") or len(greedy) != 1:
                continue
            tokens = greedy[0]["hypotheses"][0]
            loop = find_loop(tokens, options, special.timestamp_begin, special.eot)
            cut = cut_tokens(tokens, loop, special.timestamp_begin) if loop else tokens
            entry = pairs.setdefault((row["encoder"], row["set"]), ([], [], [0]))
            entry[0].append((row["text"], text(tokens)))
            entry[1].append((row["text"], text(cut)))
            entry[2][0] += loop is not None
    for (encoder, set_), (off, on, stopped) in sorted(pairs.items()):
        print(f"   {encoder:12s} {set_:16s} {len(off):3d} files, loops {stopped[0]}: "
              f"WER {wer(off):.1%} / {wer(on):.1%}")
    print(f"loops {len(loops)}:")
    for row, window, unfinished, ratio, loop, prompt_len in loops:
        budget = steps_of(window["max_length"], prompt_len)
        tokens = window["hypotheses"][0]
        how = (f"stopped at token {loop.stop} of {len(tokens)} (max {budget}), kept {loop.second}" if loop
               else "NOT stopped")
        print(f"  [{row['split']}] {row['encoder']} {row['set']}/{row['id']}: "
              f"{'unfinished' if unfinished else 'finished'}, ratio {ratio:.1f}, {how}: {text(tokens)[:100]!r}")
    return 0


def cost_case(name):
    """``(audio, language, transcribe kwargs)``: ``reading`` (the 53 s reading, VAD on); ``noise``: 12 s of faint
    noise after a prompt of "Thank you." said 3 times (it loops); else a ``bench-data/wer`` utterance id."""
    import numpy as np
    from faster_whisper.audio import decode_audio

    if name in ("reading", "reading-3x"):  # the second: read three times over (2.9 min), a file that repeats itself
        once = np.concatenate([paused_reading(decode_audio), np.zeros(7 * 16000, np.float32)])
        return np.tile(once, 3 if name == "reading-3x" else 1)[:-7 * 16000], "en", {"vad_filter": True}
    if name == "noise":
        noise = (0.003 * np.random.default_rng(0).standard_normal(16000 * 12)).astype(np.float32)
        return noise, "en", {"initial_prompt": " Thank you. Thank you. Thank you."}
    row = next(json.loads(x) for x in (ROOT / "bench-data/wer/manifest.jsonl").open() if json.loads(x)["id"] == name)
    return decode_audio(str(ROOT / "bench-data/wer" / row["audio"])), row["lang"], {}


def reading_words(name: str) -> str | None:
    """The reference text of a ``reading`` case (its clips' transcripts from corpora/opendomain), else None."""
    if name not in ("reading", "reading-3x"):
        return None
    texts = dict(line.split("\t", 1) for line in (ROOT / "corpora/opendomain/en/test.tsv").read_text().splitlines()
                 if "\t" in line)
    once = " ".join(texts[path.stem] for path in sorted(LIBRIVOX.glob("*.wav")))
    return " ".join([once] * (3 if name == "reading-3x" else 1))


def cost_child(args) -> int:
    """A system (``on``/``off``: tokenmap's loop stop; ``generate``: on, sampled hypotheses going on by ``generate``
    as before the fork did it; ``stock``), a fresh warmed model per case read on stdin."""
    from tokenmap.decode.guarding import Guard
    from tokenmap.decode.loops import LoopOptions, StoppingDecoder
    if args.system == "generate":
        StoppingDecoder.resumable = lambda self, kwargs: False
    for name in sys.stdin:
        audio, lang, kwargs = cost_case(name.strip())
        if args.system == "stock":
            import faster_whisper
            model = faster_whisper.WhisperModel(args.model, compute_type="int8", cpu_threads=args.threads)
        else:
            from tokenmap import WhisperModel
            model = WhisperModel(args.model, compute_type="int8", cpu_threads=args.threads, encoder=args.encoder,
                                 session_cache=False, loop_stop=args.system != "off")
            if args.system.startswith("share"):  # "share0.75": on, the sampled calls' first cap at that share
                model.model.loop = LoopOptions(sampled_share=float(args.system[5:]))
            if args.system == "noguard":  # on, the prompt-copy guard off
                model.model.guard = Guard(copies=False)
        list(model.transcribe(audio[:16000], language=lang, vad_filter=True)[0])
        started = time.perf_counter()
        segments = list(model.transcribe(audio, language=lang, beam_size=1, **dict({"vad_filter": False}, **kwargs))[0])
        text = " ".join(s.text.strip() for s in segments)
        stats = model.last_stats() if hasattr(model, "last_stats") else {}
        print(json.dumps({"seconds": time.perf_counter() - started, "text": text, "loops": stats.get("loops_stopped"),
                          "copies": stats.get("prompt_copies"), "kept": stats.get("copies_kept"),
                          "temperatures": sorted({s.temperature for s in segments})}), flush=True)
    return 0


def cost(args) -> int:
    """Each case on each system (a process each; stock in ``.venv-stock`` with tokenmap's runtime settings),
    faster-whisper's default temperatures, systems alternated in each repetition: wall time and transcript."""
    import statistics
    import subprocess

    from tokenmap import resolve_model
    from tokenmap_bench import tuned_environment, wer

    model = str(resolve_model(args.model, download=False))
    procs = {system: subprocess.Popen(
        [str(ROOT / (".venv-stock" if system == "stock" else ".venv") / "bin/python"), __file__, "cost-child", system,
         "--model", model, "--encoder", args.encoder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env=tuned_environment(), cwd=ROOT) for system in args.systems.split(",")}
    names, times = list(procs), {}
    for rep in range(args.reps):
        for case in args.cases.split(","):
            for system in names[rep % len(names):] + names[: rep % len(names)]:
                procs[system].stdin.write(case + "\n")
                procs[system].stdin.flush()
                got = json.loads(next(line for line in procs[system].stdout if line.startswith("{")))
                times.setdefault((case, system), []).append(got["seconds"])
                ref = reading_words(case)
                score = f"WER {100 * wer([(ref, got['text'])]):.1f} %, " if ref else ""
                print(f"{case} {system}: {got['seconds']:.2f} s, {score}loops stopped {got['loops']}, decoded again as "
                      f"copies {got['copies']}, kept after a probe {got['kept']}, temperatures "
                      f"{got['temperatures']}: {got['text'][:60]!r}", flush=True)
    for case in args.cases.split(","):
        med = {system: statistics.median(times[(case, system)]) for system in names}
        print(f"{case}: median " + ", ".join(f"{s} {t:.2f} s" for s, t in med.items()) + "; time over the last's: "
              + ", ".join(f"{s} {med[s] / med[names[-1]]:.2f}" for s in names[:-1]))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--encoder", default="ctranslate2")
    c.add_argument("--model", default="base")
    c.add_argument("--threads", type=int, default=2)
    c.add_argument("--per-lang", type=int, default=40, help="telephony-train prompts a language [40]")
    c.add_argument("--wer-manifest", default=str(ROOT / "bench-data/wer/manifest.jsonl"))
    c.add_argument("--sets", default=None, help="comma-separated sets (default: all)")
    c.add_argument("--per-set", default=None,
                   help="at most N utterances of each set's split: 'telephony=60,*=20' (default: all)")
    c.add_argument("--out", type=Path, required=True)
    a = sub.add_parser("analyze")
    a.add_argument("files", nargs="+")
    a.add_argument("--ratio-min-tokens", type=int, default=32, help="compression ratios of prefixes this long [32]")
    for name in ("cost", "cost-child"):
        k = sub.add_parser(name)
        k.add_argument("--encoder", default="auto")
        k.add_argument("--model", default="base")
        k.add_argument("--threads", type=int, default=2)
        k.add_argument("--reps", type=int, default=3)
        k.add_argument("--cases", default="reading,noise")
        k.add_argument("--systems", default="on,off,stock", help="of on, off (tokenmap's loop stop), generate, stock, "
                       "shareX (on, sampled calls first capped at X of the greedy cap), noguard (on, no copy guard)")
        if name == "cost-child":
            k.add_argument("system")
    args = ap.parse_args(argv)
    return {"collect": collect, "analyze": analyze, "cost": cost, "cost-child": cost_child}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
