"""Streaming benchmark: beta sweep (paper Table 3) and mask-k (paper Table 4) on our data.

Each stream is played as fast as possible in updates of ``--update`` seconds; every
update is also decoded from scratch with ``generate(beam_size=1)`` on the same buffer
and prompt (same process, interleaved), which gives the decode cost ratio.

    .venv/bin/python research/stream_bench.py --files 2 --betas 0,0.2,0.4 --out /tmp/stream.md

Prints (and writes) Markdown tables; rows aggregate all streams (ratios of sums).
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from tokenmap.audio import load_audio
from tokenmap.decode.reference import GREEDY_KW
from tokenmap.stream.audio import FileSource
from tokenmap.stream.live import Decoded, StreamModel, StreamOptions, StreamTranscriber
from tokenmap.stream.metrics import normalized_erasure
from tokenmap_bench import wer

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ("tests/en-basic-pbx-ivr-main", ROOT / "tests/data/en-basic-pbx-ivr-main.flac",
           "Thank you for calling Super Awesome Company, Asterisk's premier provider of perfect products. If you "
           "know your party's extension, you may dial it at any time. To establish a sales partnership, press one. "
           "To speak with a customer advocate, press two. For accounting or accounts receivable, press three. "
           "For a company directory, press four. For an operator, press zero.")


def streams(n_files: int):
    out = [FIXTURE]
    manifest = ROOT / "bench-data/manifest.jsonl"
    if manifest.exists() and n_files > 1:
        rows = [json.loads(line) for line in manifest.open()]
        dictation = [r for r in rows if r["set"] == "dictation"]
        picked = dictation[:: max(1, len(dictation) // (n_files - 1))][: n_files - 1]
        out += [(r["id"], ROOT / "bench-data" / r["audio"], r["text"]) for r in picked]
    return out


class Regenerate(StreamTranscriber):
    """Re-decodes every update from scratch with CTranslate2's ``generate`` (the baseline)."""

    def decode(self, enc, prompt, draft):
        t = time.perf_counter()
        g = self.engine.model.generate(enc, [prompt], **GREEDY_KW)[0]
        return Decoded(list(g.sequences_ids[0]), time.perf_counter() - t, g.no_speech_prob, float(g.scores[0]))


class MaskedDraft(StreamTranscriber):
    """The paper's plain mask-k: the last ``k`` tokens of the previous hypothesis are not drafted."""

    def __init__(self, engine, options, k: int):
        super().__init__(engine, options)
        self.k = k

    def next_draft(self):
        return self.previous[: max(0, len(self.previous) - self.k)]


def run(engine, audio, options, transcriber=StreamTranscriber, **extra):
    st = transcriber(engine, options, **extra)
    for _ in st.run(FileSource(audio).chunks(options.update_seconds)):
        pass
    return st


def aggregate(results, mask_k=0):
    """Ratios of sums over streams."""
    ups = [u for st, _ in results for u in st.metrics.updates]
    timed = [u for u in ups if u.scratch_decode is not None]
    spec, scratch = sum(u.decode_seconds for u in timed), sum(u.scratch_decode for u in timed)
    erased = final = 0
    for st, _ in results:
        d = st.metrics.displays(mask_k)
        erased += normalized_erasure(d) * len(d[-1]) if d and d[-1] else 0
        final += len(d[-1]) if d else 0
    return {
        "wer": wer([(ref, st.committed_text) for st, ref in results]),
        "ne": erased / final if final else 0.0,
        "a_d": sum(u.accepted for u in ups) / max(1, sum(u.draft for u in ups)),
        "a_o": sum(u.accepted for u in ups) / max(1, sum(u.output for u in ups)),
        "ms": 1000 * spec / max(1, len(timed)), "scratch_ms": 1000 * scratch / max(1, len(timed)),
        "cost": spec / scratch if scratch else float("nan"),
        "identical": sum(bool(u.scratch_same) for u in timed) / max(1, len(timed)),
        "latency": _mean([x for u in ups for x in u.commit_latencies]),
        "updates": len(ups),
        "buffer": _mean([u.buffer_seconds for u in ups]),
        "tokens": _mean([u.output for u in ups]),
    }


def _mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def row(label, a):
    return (f"| {label} | {a['wer']:.1%} | {a['ne']:.2f} | {a['a_d']:.1%} | {a['a_o']:.1%} | {a['ms']:.0f} | "
            f"{a['scratch_ms']:.0f} | {a['cost']:.2f}x | {1 / a['cost']:.2f}x | {a['identical']:.0%} | "
            f"{a['latency']:.1f} s | {a['buffer']:.1f} s | {a['tokens']:.1f} |")


HEADER = ("| {0} | WER | NE | A/D | A/O | decode ms/update | scratch ms/update | cost vs scratch | speed-up | "
          "same tokens as generate | commit latency | mean buffer | tokens/update |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def final_vs_scratch(engine, data, base, by_beta):
    """The final committed transcript of each run against a stream that re-decodes every update
    from scratch with ``generate`` (same commit policy)."""
    opts = dict(base, scratch=None)
    plain = [(run(engine, a, StreamOptions(**opts), Regenerate), ref) for _, a, ref in data]
    out = ["| run | WER | WER against the scratch run's transcript | streams with the same final text |",
           "|---|---|---|---|",
           f"| re-decode from scratch (generate) | {wer([(ref, st.committed_text) for st, ref in plain]):.1%} "
           f"| 0.0% | {len(plain)}/{len(plain)} |"]
    for beta, res in by_beta.items():
        pairs = [(p.committed_text, st.committed_text) for (st, _), (p, _) in zip(res, plain)]
        same = sum(a == b for a, b in pairs)
        out.append(f"| speculative, beta {beta:g} | {wer([(ref, st.committed_text) for st, ref in res]):.1%} "
                   f"| {wer(pairs):.1%} | {same}/{len(pairs)} |")
    return out


def stream_arguments(description: str) -> argparse.ArgumentParser:
    """The options every streaming benchmark takes: model, compute type, threads, how many streams."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", default="base")
    p.add_argument("--compute-type", default="int8")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--files", type=int, default=3, help="the IVR fixture plus N-1 dictation streams")
    return p


def main(argv=None):
    p = stream_arguments(__doc__.splitlines()[0])
    p.add_argument("--update", type=float, default=1.0)
    p.add_argument("--betas", default="0,0.1,0.2,0.3,0.5")
    p.add_argument("--mask", default="3,5")
    p.add_argument("--draft-mask", action="store_true", help="also run the paper's plain mask-k (draft trimmed)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    engine = StreamModel.load(args.model, compute_type=args.compute_type, threads=args.threads)
    data = [(name, load_audio(path), ref) for name, path, ref in streams(args.files)]
    started = time.perf_counter()
    base = dict(update_seconds=args.update, scratch="generate")
    lines = [f"Streams: {', '.join(n for n, _, _ in data)}; {args.model} {args.compute_type}, "
             f"{args.threads} threads, update {args.update} s.", "", HEADER.format("beta")]
    by_beta = {}
    for beta in [float(b) for b in args.betas.split(",")]:
        by_beta[beta] = [(run(engine, a, StreamOptions(beta=beta, **base)), ref) for _, a, ref in data]
        lines.append(row(f"{beta:g}", aggregate(by_beta[beta])))
    masks = [int(k) for k in args.mask.split(",") if k]
    ref_beta = 0.2 if 0.2 in by_beta else next(iter(by_beta))
    lines += ["", HEADER.format(f"mask-k (beta {ref_beta:g})"), row("-", aggregate(by_beta[ref_beta]))]
    if args.draft_mask:
        for k in masks:
            res = [(run(engine, a, StreamOptions(beta=ref_beta, **base), MaskedDraft, k=k), ref) for _, a, ref in data]
            lines.append(row(f"mask-{k} (draft)", aggregate(res)))
    for k in masks:
        lines.append(row(f"display-only mask-{k}", aggregate(by_beta[ref_beta], mask_k=k)))
    if 0.0 in by_beta and ref_beta != 0.0:
        lines.append(row("beta 0, no mask", aggregate(by_beta[0.0])))
        for k in masks:
            lines.append(row(f"beta 0, display-only mask-{k}", aggregate(by_beta[0.0], mask_k=k)))
    lines += ["", *final_vs_scratch(engine, data, base, by_beta), "", f"({time.perf_counter() - started:.0f} s)"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
