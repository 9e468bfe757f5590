"""Long files: tokenmap's sequential and batched paths against tuned stock faster-whisper, sequential
and batched (``BatchedInferencePipeline``), on the same minutes of real speech.

    python benchmarks/long_bench.py --minutes 20 --reps 2
    python benchmarks/long_bench.py --minutes 5 --systems stock-seq,tokenmap-seq --reps 1
    python benchmarks/long_bench.py --minutes 60 --order 2 --systems tokenmap-seq,tokenmap-seq-noguard --reps 1 --probes
    python benchmarks/long_bench.py --minutes 3 --systems tokenmap-batch8,tokenmap-batch8-map --map MAP --reps 3

The audio is ``benchmarks/hour_bench.py``'s: the English Asterisk prompts and the five LibriVox
clips of pocketsphinx-testdata in a seeded order with pauses (``--order``), cut at ``--minutes`` (real
speech, one reader for the prompts; the reference is their texts in order; several prompts say the same
words, so the prompt-copy guard probes windows that really repeat). Every system runs in a process
of its own, greedy at temperature 0 (``--fallback``: faster-whisper's default temperatures), VAD on,
language given, base int8 on 2 threads, with the runtime settings tokenmap gives itself (stock:
:func:`tokenmap_bench.stock.tuned_environment`); systems alternate within each repetition. Stock runs
in ``.venv-stock`` (``make bench-stock``). Reported: the best wall time of the repetitions, its ratio
against stock batched at 8 and stock sequential, WER against the reference, peak RSS of the process
(its workers not counted), and tokenmap's windows that the prompt-copy guard decoded again or kept after
a probe, and its decodes stopped as loops (the first repetition's; ``--probes`` prints each such window's
text, to be read against the reference; a ``-noguard`` system runs with the guard off; a ``-map`` system
drafts from ``--map``, and is also compared with the same system without it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("stock-seq", "stock-batch4", "stock-batch8", "stock-batch16", "tokenmap-seq", "tokenmap-batch8")

CHILD = r"""
import json, logging, resource, sys, time
system, wav = sys.argv[1], sys.argv[2]
system, _, encoder = system.partition("@")
if system.startswith("tokenmap"):
    import tokenmap
    from tokenmap import BatchedInferencePipeline  # what `tokenmap transcribe --batch-size` runs
    from tokenmap.decode.guarding import Guard
    token_map = next((f[4:] for f in sys.argv[4:] if f.startswith("map=")), None) if "-map" in system else None
    model = tokenmap.WhisperModel("base", token_map, compute_type="int8", cpu_threads=2, session_cache=False,
                                  **({"encoder": encoder} if encoder else {}))
    if system.endswith("-noguard"):  # the prompt-copy guard off
        model.model.guard = Guard(copies=False)
    if "probes" in sys.argv[4:]:  # the guard's decisions, with each window's text, on stderr
        logging.getLogger("tokenmap").setLevel(logging.DEBUG)
        logging.getLogger("tokenmap").addHandler(logging.StreamHandler())
else:
    import faster_whisper
    from faster_whisper import BatchedInferencePipeline
    model = faster_whisper.WhisperModel(sys.argv[3], device="cpu", compute_type="int8", cpu_threads=2)
from faster_whisper import decode_audio
audio = decode_audio(wav)
kwargs = dict(language="en", beam_size=1, vad_filter=True)
if "fallback" not in sys.argv[4:]:
    kwargs["temperature"] = 0.0
started = time.perf_counter()
if "batch" in system:
    size = int(system.split("batch")[1].split("-")[0])
    segments, _ = BatchedInferencePipeline(model=model).transcribe(audio, batch_size=size, **kwargs)
else:
    segments, _ = model.transcribe(audio, **kwargs)
text = " ".join(s.text.strip() for s in segments)
wall = time.perf_counter() - started
stats = model.last_stats() if hasattr(model, "last_stats") else {}
print(json.dumps({"wall": wall, "text": text, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "stats": stats}))
"""


def run(system: str, wav: Path, model_dir: str, flags: list[str]) -> dict:
    from tokenmap_bench import tuned_environment

    python = str(ROOT / ".venv-stock/bin/python") if system.startswith("stock") else sys.executable
    out = subprocess.run([python, "-c", CHILD, system, str(wav), model_dir, *flags],
                         env=tuned_environment(), capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        raise SystemExit(f"{system} failed: {out.stderr.strip().splitlines()[-1:]}")
    decided = [line for line in out.stderr.splitlines() if "its previous text (" in line]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]), probes=decided)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0, help="minutes of audio [20]")
    parser.add_argument("--reps", type=int, default=2, help="repetitions; the best wall time is kept [2]")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help=f"comma-separated, of {', '.join(SYSTEMS)}; tokenmap-...@ENCODER sets WhisperModel's "
                        "encoder (e.g. tokenmap-batch8@openvino:bf16)")
    parser.add_argument("--order", type=int, default=0, help="the seed of the prompts' and clips' order [0]")
    parser.add_argument("--probes", action="store_true",
                        help="print each window the prompt-copy guard decoded again or kept (the first repetition's)")
    parser.add_argument("--fallback", action="store_true",
                        help="faster-whisper's default temperatures (the fallback) instead of temperature 0")
    parser.add_argument("--map", default=None, help="the token map of the -map systems (e.g. the English prompt "
                        "inventory's: tokenmap build corpora/telephony/en/train.txt corpora/telephony/en/test.txt)")
    parser.add_argument("--json", default=None, help="write every run here")
    args = parser.parse_args()
    if any("-map" in s for s in args.systems.split(",")) and not args.map:
        parser.error("a -map system needs --map")
    from hour_bench import build_audio

    from tokenmap.models import resolve_model
    from tokenmap_bench import wer

    systems = args.systems.split(",")
    wav, ref = build_audio(args.minutes, seed=args.order)
    reference = ref.read_text(encoding="utf-8")
    model_dir = str(resolve_model("base", download=False))
    runs: dict[str, list] = {s: [] for s in systems}
    for rep in range(args.reps):
        for system in systems:
            t = time.perf_counter()
            flags = ["probes"] * (args.probes and rep == 0) + ["fallback"] * args.fallback + [f"map={args.map}"] * bool(
                args.map)
            runs[system].append(run(system, wav, model_dir, flags))
            print(f"rep {rep + 1} {system}: {runs[system][-1]['wall']:.1f} s ({time.perf_counter() - t:.0f} s)",
                  file=sys.stderr)
    best = {s: min(r["wall"] for r in runs[s]) for s in systems}
    if args.probes:
        for s in systems:
            for line in runs[s][0]["probes"]:
                print(f"{s}: {line}")
        print(f"reference: {ref}\n")
    temperatures = "default temperatures" if args.fallback else "temperature 0"
    print(f"{args.minutes:g} min of audio (order {args.order}, {temperatures}), best of {args.reps}\n")
    print("| system | wall (s) | vs stock batched 8 | vs stock sequential | vs without the map | WER | peak RSS (MB) "
          "| prompt copies decoded again / kept after a probe | loops stopped |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in systems:
        vs = [f"{best[a] / best[s]:.2f}x" if a in best else "–"
              for a in ("stock-batch8", "stock-seq", s.replace("-map", "") if "-map" in s else None)]
        stats = runs[s][0]["stats"]
        copies = f"{stats['prompt_copies']} / {stats['copies_kept']}" if "prompt_copies" in stats else "–"
        error = 100 * wer([(reference, runs[s][0]['text'])])
        print(f"| {s} | {best[s]:.1f} | {vs[0]} | {vs[1]} | {vs[2]} | {error:.2f} % "
              f"| {max(r['peak_mb'] for r in runs[s]):.0f} | {copies} | {stats.get('loops_stopped', '–')} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"minutes": args.minutes, "runs": runs}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
