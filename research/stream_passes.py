"""Where a beta-0 streaming update spends its decoder time, and the perfect-aligner floor.

How far could drafting from the previous hypothesis go at best?

Runs the streams of ``stream_bench.py`` (speculative, beta 0, no token map), times every
decoder call by kind (prefill, forward_batch = a verify pass, forward_step = a token no
draft covered), and compares each update's output with its draft (the previous
hypothesis) by a token diff (any timestamp matches any timestamp). The *perfect-aligner
floor* assumes a drafter that proposes every matching block of the previous hypothesis
in one verify pass (the token after each block comes free from that pass) and decodes
every other new token by a step: no drafter built only on the previous hypothesis
needs fewer passes.

    .venv/bin/python research/stream_passes.py --files 3

Every update is also re-decoded from scratch with ``generate`` (interleaved), for the ratios.
Prints a Markdown table; times in ms per update (wall clock, this process).
"""

from __future__ import annotations

import difflib
import time
from collections import Counter, defaultdict

from stream_bench import run, stream_arguments, streams

from tokenmap.audio import load_audio
from tokenmap.stream.live import StreamModel, StreamOptions, StreamTranscriber

CALLS = ("prefill", "forward_batch", "forward_step", "generate")


class TimedModel:
    """Wraps the CTranslate2 model: counts and times the decoder calls by name."""

    def __init__(self, model):
        self.model, self.seconds, self.calls = model, defaultdict(float), Counter()

    def __getattr__(self, name):
        fn = getattr(self.model, name)
        if name not in CALLS:
            return fn

        def timed(*args, **kwargs):
            t = time.perf_counter()
            out = fn(*args, **kwargs)
            self.seconds[name] += time.perf_counter() - t
            self.calls[name] += 1
            return out

        return timed


def diff_blocks(draft: list[int], output: list[int], ts0: int) -> tuple[int, int]:
    """(matching blocks, output tokens + end-of-text not in any block) of ``output`` against ``draft``."""
    norm = [t if t < ts0 else -1 for t in draft], [t if t < ts0 else -1 for t in output]
    matcher = difflib.SequenceMatcher(a=norm[0], b=norm[1], autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    return len(blocks), len(output) + 1 - sum(b.size for b in blocks)


def main(argv=None):
    args = stream_arguments(__doc__.splitlines()[0]).parse_args(argv)
    engine = StreamModel.load(args.model, compute_type=args.compute_type, threads=args.threads)
    timed = engine.model = TimedModel(engine.model)
    seen = []
    decode = StreamTranscriber.decode

    def traced(self, enc, prompt, draft):
        out = decode(self, enc, prompt, draft)
        seen.append(diff_blocks(list(draft), list(out.tokens), engine.special.timestamp_begin))
        return out

    StreamTranscriber.decode = traced
    decoded = 0.0
    for _, path, _ in streams(args.files):
        st = run(engine, load_audio(path), StreamOptions(scratch="generate"))
        decoded += sum(u.decode_seconds for u in st.metrics.updates)
    n = len(seen)
    blocks, novel = sum(b for b, _ in seen) / n, sum(v for _, v in seen) / n
    step_ms = 1000 * timed.seconds["forward_step"] / max(1, timed.calls["forward_step"])
    batch_ms = 1000 * timed.seconds["forward_batch"] / max(1, timed.calls["forward_batch"])
    prefill_ms = 1000 * timed.seconds["prefill"] / max(1, timed.calls["prefill"])
    print(f"{n} updates, {args.model} {args.compute_type}, {args.threads} threads; decode {1000 * decoded / n:.0f} "
          "ms/update\n\n| pass | per update (measured) | ms each | ms per update | perfect-aligner floor |\n"
          "|---|---|---|---|---|")
    floor = {"prefill": 1.0, "forward_batch": blocks, "forward_step": max(0.0, novel - blocks)}
    for name, each in (("prefill", prefill_ms), ("forward_batch", batch_ms), ("forward_step", step_ms)):
        per = timed.calls[name] / n
        print(f"| {name} | {per:.2f} | {each:.1f} | {each * per:.1f} | {floor[name]:.2f} |")
    cost = prefill_ms + batch_ms * blocks + step_ms * floor["forward_step"]
    scratch = 1000 * timed.seconds["generate"] / max(1, timed.calls["generate"])
    calls = sum(1000 * timed.seconds[k] for k in CALLS[:3]) / n
    print(f"\nnew tokens an update (output + end-of-text outside every block matching the previous hypothesis): "
          f"{novel:.2f}; matching blocks {blocks:.2f}. Re-decoding from scratch (generate, same run): "
          f"{scratch:.0f} ms/update. Decoder calls now: {calls:.0f} ms/update = {calls / scratch:.2f}x; "
          f"floor at these pass costs: {cost:.0f} ms/update = {cost / scratch:.2f}x")


if __name__ == "__main__":
    main()
