"""Identity and decoder speed of map decoding per decoder compute type, interleaved.

    python research/exact_bench.py --set telephony --limit 20 --reps 3 [--extra tests/data/x.flac]

Every utterance is encoded once by the int8 model; on that encoder output four
systems decode its first 30 s window, in a rotating order, ``--reps`` times:

* ``greedy-int8``   plain ``generate(beam_size=1)`` on the int8 model
* ``greedy-f32dec`` plain ``generate(beam_size=1)`` on a float32 copy of the model
* ``map-int8``      :func:`tokenmap.decode.speculative.decode_window` on the int8 model
* ``map-f32dec``    the same on the float32 copy

Identity is map-X against greedy-X (the same configuration); S is the sum of
greedy-int8 decoder seconds over the sum of each system's (median per
utterance). Each task's map comes from its whole phrase inventory
(corpora/<task>/train.txt + test.txt); each compute type gets its own cost
curve, calibrated in this process (nothing is written to the calibration cache).
"""
import argparse
import collections
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tokenmap import load_maps, resolve_model
from tokenmap.build.builder import BuildOptions, build_map
from tokenmap.context import AudioContext
from tokenmap.decode.calibration import calibrate
from tokenmap.decode.drafters import default_drafter
from tokenmap.decode.gate import WindowGate
from tokenmap.decode.rules import GREEDY_KW
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import decode_window
from tokenmap_bench import Recording, features, load_manifest

ROOT = Path(__file__).resolve().parents[1]

SYSTEMS = ("greedy-int8", "greedy-f32dec", "map-int8", "map-f32dec")


def pick(args) -> list:
    per_task = collections.defaultdict(list)
    for u in load_manifest(args.manifest):
        if u.set in args.set and (not args.limit or len(per_task[u.task]) < args.limit):
            per_task[u.task].append(u)
    utts = [u for task in per_task for u in per_task[task]]
    for path in args.extra:  # e.g. the long IVR menu of tests/data, decoded with the telephony/en map
        utts.append(Recording(id=Path(path).name, audio=str(Path(path).resolve()), text="", domain="telephony",
                              lang=Path(path).name[:2], voice="", source="", set="telephony"))
    return utts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", default=str(ROOT / "bench-data/manifest.jsonl"))
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--limit", type=int, default=0, help="utterances per task (0: all)")
    ap.add_argument("--extra", action="append", default=[], help="more audio files (telephony/<lang> map)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--out", default="")
    ap.add_argument("--report", default="", help="only report an earlier --out file (adds WER against the manifest)")
    ap.add_argument("--audio-context", default="full", choices=["full", "auto"],
                    help="auto: encode each file as tokenmap's short audio context does (tokenmap.context)")
    args = ap.parse_args()
    args.set = args.set or ["telephony"]
    systems = args.systems.split(",")
    if args.report:
        rows = [json.loads(line) for line in Path(args.report).read_text().splitlines() if line.strip()]
        report(rows, systems)
        word_error_rates(rows, systems, args.manifest)
        return
    import ctranslate2

    model_dir = resolve_model("base", download=False)
    models = {ct: ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type=ct, intra_threads=2)
              for ct in ("int8", "float32")}
    special = SpecialTokens.from_model_dir(str(model_dir))
    vocab = (model_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    index = {t: i for i, t in enumerate(vocab)}
    costs = {ct: calibrate(model_dir, ct, 2, reps=5) for ct in models}
    for ct, c in costs.items():
        print(f"cost {ct}: step {c.step_ms:.1f} ms, batch 2/5/9/17: "
              f"{c.batch(2):.1f}/{c.batch(5):.1f}/{c.batch(9):.1f}/{c.batch(17):.1f} ms", file=sys.stderr)
    utts = pick(args)
    tmp = Path(tempfile.mkdtemp(prefix="exact-"))
    maps = {}
    for task in sorted({u.task for u in utts}):
        files = [ROOT / "corpora" / task / n for n in ("train.txt", "test.txt")]
        out = tmp / f"{task.replace('/', '-')}.tmap"
        build_map([str(f) for f in files if f.exists()], out, model="base",
                  options=BuildOptions(jobs=1, cost=costs["int8"]))
        maps[task] = load_maps(out)[0]
    controllers = {(t, ct): WindowGate(costs[ct]) for t in maps for ct in costs}
    rows, t_start = [], time.time()
    context = AudioContext(args.audio_context)
    for i, u in enumerate(utts):
        mel, seconds = features(u)
        frames = context.frames(min(seconds, 30.0))
        if frames:
            mel = ctranslate2.StorageView.from_array(np.ascontiguousarray(np.asarray(mel)[:, :, :frames]))
        enc = models["int8"].encode(mel)
        prompt = [special.sot, index[f"<|{u.lang}|>"], index["<|transcribe|>"]]
        times, out = collections.defaultdict(list), {}
        for rep in range(args.reps):
            shift = (rep + i) % len(systems)
            for name in systems[shift:] + systems[:shift]:
                kind, ct = name.split("-")
                ct = "int8" if ct == "int8" else "float32"
                t0 = time.perf_counter()
                if kind == "greedy":
                    out[name] = list(models[ct].generate(enc, [prompt], **GREEDY_KW)[0].sequences_ids[0])
                else:
                    drafter = default_drafter(maps[u.task], special, controllers=controllers[(u.task, ct)],
                                              cost=costs[ct])
                    out[name] = decode_window(models[ct], enc, prompt, special, drafter, **GREEDY_KW).tokens
                times[name].append(time.perf_counter() - t0)
        row = {"id": u.id, "task": u.task, "tokens": len(out.get("greedy-int8", out[systems[0]]))}
        row.update({f"{n}_s": statistics.median(times[n]) for n in systems})
        row.update({f"{n}_tokens": out[n] for n in systems})
        rows.append(row)
        if i % 20 == 0:
            print(f"{i} utterances, {time.time() - t_start:.0f} s", file=sys.stderr)
    if args.out:
        Path(args.out).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report(rows, systems)


def report(rows, systems):
    by = collections.defaultdict(list)
    for r in rows:
        by[r["task"]].append(r)
    by["ALL"] = rows
    pairs = [(m, m.replace("map", "greedy")) for m in systems if m.startswith("map") and
             m.replace("map", "greedy") in systems]
    pairs += [("greedy-f32dec", "greedy-int8")] if {"greedy-f32dec", "greedy-int8"} <= set(systems) else []
    head = "".join(f" {'S ' + n:>18s}" for n in systems) + "".join(f" {a + '=' + b:>28s}" for a, b in pairs)
    print(f"{'task':16s} {'n':>4s}{head}")
    for task, rs in by.items():
        ref = sum(r[f"{systems[0]}_s"] for r in rs)
        line = "".join(f" {ref / sum(r[f'{n}_s'] for r in rs):18.3f}" for n in systems)
        line += "".join(f" {sum(r[a + '_tokens'] == r[b + '_tokens'] for r in rs) / len(rs):28.1%}" for a, b in pairs)
        print(f"{task:16s} {len(rs):4d}{line}")


def word_error_rates(rows, systems, manifest) -> None:
    """WER of each system against the manifest's transcripts (utterances that have one)."""
    from tokenizers import Tokenizer

    from tokenmap_bench import wer

    tok = Tokenizer.from_file(str(resolve_model("base", download=False) / "tokenizer.json"))
    refs = {u.id: u.text for u in load_manifest(manifest)}
    rows = [r for r in rows if refs.get(r["id"])]

    def text(ids):
        return tok.decode([t for t in ids if t < 50257])

    print(f"WER on {len(rows)} utterances with a reference: " + ", ".join(
        f"{n} {wer((refs[r['id']], text(r[n + '_tokens'])) for r in rows):.2%}" for n in systems))


if __name__ == "__main__":
    main()
