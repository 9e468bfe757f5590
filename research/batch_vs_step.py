"""Where batched verification departs from step-wise decoding, per compute type.

Decodes one recording greedily, then feeds the same tokens to the fork's
decoder three ways and prints the largest absolute logit difference against
``forward_step`` at each position:

* one ``forward_batch`` of the first T tokens, for several T;
* five ``forward_step`` calls, then one batch of four;
* batches of two.

Usage: python research/batch_vs_step.py [AUDIO] [--compute-type int8|float32]
"""

import argparse

import ctranslate2
import numpy as np
from faster_whisper.audio import decode_audio
from faster_whisper.feature_extractor import FeatureExtractor

from tokenmap import resolve_model
from tokenmap.decode.special import SpecialTokens


def encode(model, path):
    feats = FeatureExtractor()(decode_audio(path))[:, :3000]
    feats = np.pad(feats, ((0, 0), (0, 3000 - feats.shape[1])))[None]
    return model.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(feats)))


def rows(logits):
    return np.array(np.asarray(logits)[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audio", nargs="?", default="tests/data/en-basic-pbx-ivr-main.flac")
    parser.add_argument("--compute-type", default="int8")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    model_dir = resolve_model("base")
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type=args.compute_type,
                                       intra_threads=args.threads)
    sp = SpecialTokens.from_model_dir(str(model_dir))
    enc = encode(model, args.audio)
    vocab = (model_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    prompt = [sp.sot, vocab.index("<|en|>"), vocab.index("<|transcribe|>"), sp.no_timestamps]
    greedy = model.generate(enc, [prompt], beam_size=1)[0].sequences_ids[0]
    toks = [prompt[-1]] + greedy[:20]
    state, _ = model.prefill(enc, prompt[:-1])
    step = [rows(model.forward_step(state, t)) for t in toks]

    def diffs(batch_rows, start):
        return " ".join(f"{np.abs(r - step[start + i]).max():.3g}" for i, r in enumerate(batch_rows))

    print(f"compute type {args.compute_type}: max |logit difference| against forward_step, per position")
    for size in (1, 2, 4, 8, 16):
        state, _ = model.prefill(enc, prompt[:-1])
        print(f"one batch of {size:>2}:        {diffs(rows(model.forward_batch(state, toks[:size])), 0)}")
    state, _ = model.prefill(enc, prompt[:-1])
    for t in toks[:5]:
        model.forward_step(state, t)
    print(f"5 steps, then a batch of 4: {diffs(rows(model.forward_batch(state, toks[5:9])), 5)}")
    state, _ = model.prefill(enc, prompt[:-1])
    pairs = [diffs(rows(model.forward_batch(state, toks[i:i + 2])), i) for i in range(0, 16, 2)]
    print(f"batches of 2:              {' | '.join(pairs)}")


if __name__ == "__main__":
    main()
