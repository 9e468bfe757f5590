"""Where does tokenmap's decoder time go on the real path? Engine calls by kind and length, drafter, the rest.

    python research/decoder_anatomy.py results/<run>/results.json --task telephony/en --set telephony [--reps 3]

Loads the fork (base, int8, 2 threads), encodes every utterance of the task and set in
``bench-data/full.jsonl`` once, then per repetition and utterance runs plain ``generate`` and
``decode_window`` with the run's map for the task and its cost curve (one ``ControllerSet`` for
the task, as the bench keeps it). Every engine call inside ``decode_window`` is timed by kind
(``prefill``, or a pass of n tokens), and so is the drafter; "rest" is the Python of the loop (rules,
log-softmax, bookkeeping) plus ``truncate_to_step``. Prints the totals and each pass length's
cost in steps (a step = the median ``forward_step`` here).
"""
import argparse
import collections
import json
import time
from pathlib import Path

import tokenmap  # noqa: F401  (first: the thread wait policy)

# isort: split
import ctranslate2

from tokenmap import load_maps, resolve_model
from tokenmap.decode.control import ControllerSet
from tokenmap.decode.cost import CostModel
from tokenmap.decode.drafters import default_drafter
from tokenmap.decode.reference import GREEDY_KW
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import decode_window
from tokenmap_bench import features, load_manifest

ROOT = Path(__file__).resolve().parents[1]

TIMED = ("prefill", "forward_step", "forward_batch")


class TimedModel:
    """The fork's Whisper with ``prefill``/``forward_*`` timed into ``calls[kind] = [count, seconds]``."""

    def __init__(self, model):
        self.model = model
        self.calls = collections.defaultdict(lambda: [0, 0.0])

    def __getattr__(self, name):
        fn = getattr(self.model, name)
        if name not in TIMED:
            return fn

        def timed(state, tokens):
            t0 = time.perf_counter()
            out = fn(state, tokens)
            kind = "prefill" if name == "prefill" else (1 if name == "forward_step" else len(tokens))
            self.calls[kind][0] += 1
            self.calls[kind][1] += time.perf_counter() - t0
            return out
        return timed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--task", default="telephony/en")
    ap.add_argument("--set", default="telephony")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    run = json.loads(Path(args.results).read_text())
    cost = CostModel.from_json(run["cost_model"])
    model_dir = resolve_model("base", download=False)
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="int8", intra_threads=2)
    special = SpecialTokens.from_model_dir(str(model_dir))
    vocab = (model_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    index = {t: i for i, t in enumerate(vocab)}
    token_map = load_maps(Path(args.results).resolve().parents[2] / run["maps"][args.task])[0]
    windows = []
    for u in load_manifest(str(ROOT / "bench-data/full.jsonl")):
        if u.task == args.task and u.set == args.set:
            mel, seconds = features(u)
            windows.append((model.encode(mel), [special.sot, index[f"<|{u.lang}|>"], index["<|transcribe|>"]],
                            min(seconds, 30.0)))
    timed, controllers = TimedModel(model), ControllerSet(cost)
    drafting, plain, loop = [0, 0.0], 0.0, 0.0
    for _ in range(args.reps):
        for enc, prompt, seconds in windows:
            t0 = time.perf_counter()
            model.generate(enc, [prompt], **GREEDY_KW)
            plain += time.perf_counter() - t0
            drafter = default_drafter(token_map, special.timestamp_begin, controllers=controllers, eot=special.eot,
                                      cost=cost, seconds=seconds)
            inner = drafter.draft

            def draft(tokens, limit, inner=inner):
                t1 = time.perf_counter()
                out = inner(tokens, limit)
                drafting[0] += 1
                drafting[1] += time.perf_counter() - t1
                return out
            drafter.draft = draft
            t0 = time.perf_counter()
            decode_window(timed, enc, prompt, special, drafter, **GREEDY_KW)
            loop += time.perf_counter() - t0
    engine = sum(t for _, t in timed.calls.values())
    passes = sum(n for kind, (n, _) in timed.calls.items() if kind != "prefill")
    n_windows = len(windows) * args.reps
    rest = loop - engine - drafting[1]
    print(f"{n_windows} windows: generate {plain:.3f} s, tokenmap {loop:.3f} s (S {plain / loop:.3f})")
    print(f"tokenmap: engine {engine:.3f} s, drafter {drafting[1]:.3f} s ({drafting[0]} calls), "
          f"rest {rest:.3f} s ({rest / passes * 1000:.2f} ms a pass, {rest / n_windows * 1000:.1f} ms a window)")
    step = timed.calls[1][1] / max(timed.calls[1][0], 1)
    for kind in sorted(timed.calls, key=lambda k: (isinstance(k, str), k)):
        n, t = timed.calls[kind]
        print(f"  {kind!s:>7}: {n:4d} calls, {t / n * 1000:6.2f} ms each ({t / n / step:.2f} steps), "
              f"{t:.3f} s = {t / loop:.0%} of tokenmap's time")


if __name__ == "__main__":
    main()
