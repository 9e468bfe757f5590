"""Does re-deciding near-ties with a single step restore int8 identity?

Decodes asterisk prompts (Debian asterisk-core-sounds-en-g722, installed by
`make bench-data`) with the greedy output itself as the draft (the oracle),
at int8, with and without timestamps, and counts windows whose tokens equal
``generate(beam_size=1)`` for several ``recheck_margin`` values.

Usage: python research/recheck_identity.py [N_PROMPTS]
"""

import argparse
import glob

import av
import ctranslate2
import numpy as np
from faster_whisper.feature_extractor import FeatureExtractor

from tokenmap import resolve_model
from tokenmap.decode.drafters import FixedDrafter
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import decode_window

KW = dict(beam_size=1, max_length=448, return_scores=True, return_no_speech_prob=True, suppress_blank=True,
          suppress_tokens=[-1], max_initial_timestamp_index=50)
MARGINS = (0.0, 0.5, 1.0, 2.0)


def load_g722(path):
    container = av.open(path, format="g722")
    resampler = av.AudioResampler(format="flt", layout="mono", rate=16000)
    chunks = [g.to_ndarray().reshape(-1) for f in container.decode(audio=0) for g in resampler.resample(f)]
    return np.concatenate(chunks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n_prompts", nargs="?", type=int, default=60)
    n = ap.parse_args().n_prompts
    model_dir = str(resolve_model("base"))
    model = ctranslate2.models.Whisper(model_dir, device="cpu", compute_type="int8", intra_threads=2)
    sp = SpecialTokens.from_model_dir(model_dir)
    vocab = open(f"{model_dir}/vocabulary.txt", encoding="utf-8").read().splitlines()
    head = [sp.sot, vocab.index("<|en|>"), vocab.index("<|transcribe|>")]
    files = sorted(glob.glob("/usr/share/asterisk/sounds/en_US_f_Allison/*.g722"))[::4][:n]
    same = dict.fromkeys(MARGINS, 0)
    passes = dict.fromkeys(MARGINS, 0)
    windows = 0
    for path in files:
        feats = FeatureExtractor()(load_g722(path))[:, :3000]
        feats = np.pad(feats, ((0, 0), (0, 3000 - feats.shape[1])))[None]
        enc = model.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(feats)))
        for prompt in (head + [sp.no_timestamps], head):
            greedy = model.generate(enc, [prompt], **KW)[0].sequences_ids[0]
            windows += 1
            for margin in MARGINS:
                r = decode_window(model, enc, prompt, sp, FixedDrafter(greedy + [sp.eot]), recheck_margin=margin, **KW)
                same[margin] += r.tokens == greedy
                passes[margin] += r.stats.passes
    print(f"{windows} windows (int8, oracle drafts)")
    for margin in MARGINS:
        print(f"recheck_margin {margin}: identical {same[margin]}/{windows} = {same[margin] / windows:.1%}, "
              f"decoder passes {passes[margin]}")


if __name__ == "__main__":
    main()
