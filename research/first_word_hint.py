"""Do the logits the decoder computes anyway tell a prompt's first word?

    python research/first_word_hint.py [--task telephony/en] [--set telephony]

For every utterance of the task and set in ``bench-data/full.jsonl`` (fork, base, int8,
2 threads): greedy decoding, then the text part of three rows of logits, each ranked
over the first words the greedy outputs of the set use: the row of
``<|startoftranscript|>`` (which the prefill returns for free), the row of
``<|transcribe|>`` (which predicts ``<|0.00|>``), and, as a check, the row after
``<|0.00|>`` (which predicts the first word itself). Prints top-1 / top-3 hits.
"""
import argparse
import collections
from pathlib import Path

import numpy as np

import tokenmap  # noqa: F401  (first: the thread wait policy)

# isort: split
import ctranslate2

from tokenmap import resolve_model
from tokenmap.decode.reference import GREEDY_KW
from tokenmap.decode.special import SpecialTokens
from tokenmap_bench import features, load_manifest

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="telephony/en")
    ap.add_argument("--set", default="telephony")
    args = ap.parse_args()
    md = resolve_model("base", download=False)
    model = ctranslate2.models.Whisper(str(md), device="cpu", compute_type="int8", intra_threads=2)
    sp = SpecialTokens.from_model_dir(str(md))
    index = {t: i for i, t in enumerate((md / "vocabulary.txt").read_text(encoding="utf-8").splitlines())}
    rows = []
    for u in load_manifest(str(ROOT / "bench-data/full.jsonl")):
        if u.task != args.task or u.set != args.set:
            continue
        enc = model.encode(features(u)[0])
        prompt = [sp.sot, index[f"<|{u.lang}|>"], index["<|transcribe|>"]]
        out = model.generate(enc, [prompt], **GREEDY_KW)[0].sequences_ids[0]
        if len(out) > 1 and out[0] >= sp.timestamp_begin > out[1]:
            logits = [np.asarray(model.prefill(enc, p)[1])[0].copy() for p in ([sp.sot], prompt, prompt + out[:1])]
            rows.append((out[1], logits))
    firsts = sorted({first for first, _ in rows})
    print(f"{len(rows)} utterances, {len(firsts)} distinct first words; most frequent share "
          f"{collections.Counter(f for f, _ in rows).most_common(1)[0][1] / len(rows):.2f}")
    candidates = np.array(firsts)
    for k, name in enumerate(("<|startoftranscript|> row", "<|transcribe|> row", "row after <|0.00|> (check)")):
        ranked = [candidates[np.argsort(-logits[k][candidates])] for _, logits in rows]
        top1 = sum(r[0] == first for r, (first, _) in zip(ranked, rows))
        top3 = sum(first in r[:3] for r, (first, _) in zip(ranked, rows))
        print(f"{name:28s} top-1 {top1}/{len(rows)}  top-3 {top3}/{len(rows)}")


if __name__ == "__main__":
    main()
