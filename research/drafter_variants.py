"""Are any of the suffix-map drafter's knobs left worth turning? Replays, no model.

    python research/drafter_variants.py results/<run>/results.json [--corpus corpora/telephony/en/train.txt]

Part 1 replays a `tokenmap bench` run (as ``replay_bench.py`` does: the run's maps, cost curve,
window gate and greedy token ids) once per variant of :class:`tokenmap.decode.follow.FollowDrafter`
and prints the replayed S per system and regime:

* ``confidence`` 0.9 or 1.0 instead of 0.8 (the prior that corpus text is what the model writes);
* a running calibration allowed above 1 (``cap``: drafts accepted more often than predicted
  lengthen later drafts; as built it can only shorten them);
* punctuation-tolerant contexts: where the model writes punctuation the map has never seen
  after the current context (``insert``), the context is kept instead of backing off; where
  the model leaves out the corpus's punctuation (``omit``), the context steps over it.

Part 2 builds a map from ``--corpus`` and replays the build's self-test (the map's own training
utterances, no timestamps) with the confidence as built and at 1.0, and sorts the passes by
kind: the utterance's first pass, passes inside it that draft nothing, drafts rejected,
drafts accepted whole that stop short of the end, and drafts that finish the utterance.
"""
import argparse
import collections
import contextlib
import string
import tempfile
from pathlib import Path

import numpy as np

from replay_bench import replay_run
from tokenmap.build import builder
from tokenmap.decode import drafters
from tokenmap.decode.follow import FollowDrafter, FollowOptions
from tokenmap.decode.replay import replay_window
from tokenmap.textok import TextTokenizer

ROOT = Path(__file__).resolve().parents[1]

#: ids of , . ? ! : ; in Whisper's byte-level BPE (the same in the English and multilingual vocabularies)
OMITTABLE = (11, 13, 30, 0, 25, 26)


def punctuation_ids(tokenizer) -> frozenset:
    """Token ids whose text, stripped, is punctuation only."""
    marks = set(string.punctuation) | set("¿¡«»…")
    ids = set()
    for i in range(min(tokenizer.vocab_size, 50257)):  # text ids only
        text = tokenizer.decode([i]).strip()
        if text and all(c in marks for c in text):
            ids.add(i)
    return frozenset(ids)


def variant(confidence=0.8, cap=1.0, insert=(), omit=False):
    """A FollowDrafter subclass with the given knobs (``insert``: punctuation ids the context survives)."""

    class Variant(FollowDrafter):
        def __init__(self, *a, **k):
            k.setdefault("options", FollowOptions(confidence=confidence))
            super().__init__(*a, **k)

        def _cut(self, draft, probs):
            # the built cut multiplies by the calibration factor capped at 1: hand it probabilities
            # that, so multiplied, give min(probs * factor capped at ``cap``, 1)
            c = self.calibration
            bold = min(cap, max(0.05, c.observed / c.predicted))
            return super()._cut(draft, list(np.minimum(np.asarray(probs) * bold, 1.0) / c.factor))

        def _feed(self, token):
            node, sm = self._node, self.map
            if (token < self.timestamp_begin and node > 0 and sm.child(node, token) < 0
                    and not (self._end_share(node) >= 0.5 and sm.bos_node > 0)):
                if token in insert:  # the model added punctuation: the sentence's context stays
                    self._tokens.append(token)
                    return
                for mark in OMITTABLE if omit else ():
                    c = sm.child(node, mark)
                    if c > 0 and sm.child(c, token) > 0:  # the model left out the corpus's mark
                        self._tokens.append(token)
                        self._node = sm.child(c, token)
                        return
            super()._feed(token)

    return Variant


@contextlib.contextmanager
def drafting_with(cls):
    saved = drafters.FollowDrafter
    drafters.FollowDrafter = cls
    try:
        yield
    finally:
        drafters.FollowDrafter = saved


def part1(results: Path, punct: frozenset):
    variants = {
        "as built (confidence 0.8)": variant(),
        "confidence 0.9": variant(confidence=0.9),
        "confidence 1.0": variant(confidence=1.0),
        "calibration cap 1.5": variant(cap=1.5),
        "punctuation inserted": variant(insert=punct),
        "punctuation omitted": variant(omit=True),
        "both": variant(insert=punct, omit=True),
    }
    table = {}
    for name, cls in variants.items():
        with drafting_with(cls):
            _, out = replay_run(results)
        table[name] = {k: v["greedy_ms"] / v["replay_ms"] for k, v in out.items()}
    keys = sorted(next(iter(table.values())))
    print("replayed S | " + " | ".join(f"{s} {r}" for s, r in keys))
    for name, row in table.items():
        print(f"{name:26s} | " + " | ".join(f"{row[k]:.3f}" for k in keys))


def part2(corpus: Path):
    captured = {}

    def keep(sm, utterances, cost):
        captured.update(sm=sm, utterances=utterances, cost=cost)
        return {}

    saved, builder.self_test = builder.self_test, keep
    try:
        with tempfile.TemporaryDirectory() as tmp:
            builder.build_map([corpus], Path(tmp) / "x.tmap")
    finally:
        builder.self_test = saved
    sm, utterances, cost = captured["sm"], captured["utterances"], captured["cost"]
    eot = sm.bos  # as the self-test: any id above the text ids ends an utterance
    for confidence in (0.8, 1.0):
        drafter = Recorder(FollowDrafter(sm, timestamp_begin=None, eot=eot, cost=cost,
                                         options=FollowOptions(confidence=confidence)))
        kinds, per_utt, tokens = collections.Counter(), collections.Counter(), 0
        for truth in utterances:
            drafter.passes.clear()
            replay_window(drafter, truth, eot=eot, with_timestamps=False, timestamp_begin=eot + 2, cost=cost)
            target = list(truth) + [eot]
            for decided, draft in drafter.passes:
                kinds[_kind(decided, draft, target[decided:])] += 1
            per_utt[len(drafter.passes)] += 1
            tokens += len(target)
        total = sum(kinds.values())
        print(f"self-test, confidence {confidence}: {len(utterances)} utterances, {tokens} tokens (EOT included), "
              f"{total} passes, {tokens / total:.2f} tokens per pass")
        print("  passes: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
        print("  passes per utterance: " + ", ".join(f"{k}: {v}" for k, v in sorted(per_utt.items())))


class Recorder:
    """A drafter that passes every call on and keeps ``(tokens decided before the pass, draft)`` per pass."""

    def __init__(self, drafter):
        self.drafter, self.passes = drafter, []

    def reset(self, history=()):
        self.drafter.reset(history)

    def draft(self, tokens, limit):
        draft = self.drafter.draft(tokens, limit)
        self.passes.append((len(tokens), draft))
        return draft

    def update(self, drafted, accepted):
        self.drafter.update(drafted, accepted)


def _kind(decided: int, draft, rest) -> str:
    """What one pass did: ``rest`` is what the model goes on to emit from there."""
    k = next((i for i, (a, b) in enumerate(zip(draft, rest)) if a != b), min(len(draft), len(rest)))
    if not decided:
        return "first (nothing drafted)" if not draft else "first (drafted)"
    if not draft:
        return "no draft"
    if k < len(draft):
        return "rejected"
    return "finished" if k + 1 >= len(rest) else "short"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--corpus", type=Path, default=ROOT / "corpora/telephony/en/train.txt")
    args = ap.parse_args()
    tokenizer = TextTokenizer.from_model("base")
    part1(args.results, punctuation_ids(tokenizer))
    part2(args.corpus)


if __name__ == "__main__":
    main()
