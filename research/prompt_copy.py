"""A long reading that makes Whisper copy its prompt: the five LibriVox clips of pocketsphinx-testdata,
back to back with pauses, read twice, transcribed with VAD on and off, the prompt-copy guard on and off.

Run: ``python research/prompt_copy.py [--audio-context full|auto]``. Prints WER, the windows the guard
decoded again and the time, per configuration.
"""

import argparse
import time
from pathlib import Path

import numpy as np

import tokenmap  # noqa: F401  (before ctranslate2: thread policy, packing)

CLIPS = Path("/usr/share/pocketsphinx/test/data/librivox")
TSV = Path(__file__).resolve().parent.parent / "corpora/opendomain/en/test.tsv"


def reading(pause_s: float = 1.2, times: int = 2):
    from faster_whisper.audio import decode_audio

    texts = dict(line.rstrip("\n").split("\t", 1) for line in TSV.read_text().splitlines() if "\t" in line)
    ids = (CLIPS / "fileids").read_text().split()
    gap = np.zeros(int(16000 * pause_s), np.float32)
    audio, words = [], []
    for _ in range(times):
        for clip in ids:
            audio += [decode_audio(str(CLIPS / f"{clip}.wav")), gap]
            words.append(texts[clip])
    return np.concatenate(audio), " ".join(words)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--audio-context", default="full")
    ap.add_argument("--times", type=int, default=2)
    args = ap.parse_args()
    import jiwer

    from tokenmap.context import Guard

    audio, ref = reading(times=args.times)
    norm = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(),
                          jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])
    print(f"{len(audio) / 16000:.1f} s of audio")
    for copy_tokens in (10 ** 6, Guard().copy_tokens):
        for vad in (True, False):
            model = tokenmap.WhisperModel("base", compute_type="int8", cpu_threads=2, session_cache=False,
                                          audio_context=args.audio_context)
            model.model.guard = Guard(copy_tokens=copy_tokens)
            t = time.perf_counter()
            segments, _ = model.transcribe(audio, language="en", vad_filter=vad, temperature=0.0)
            text = " ".join(s.text.strip() for s in segments)
            wall = time.perf_counter() - t
            wer = jiwer.wer(ref, text, reference_transform=norm, hypothesis_transform=norm)
            stats = model.last_stats()
            guard = "off" if copy_tokens > 1000 else f"{copy_tokens} tokens"
            print(f"copy guard {guard:10s} vad={vad!s:5s} WER {wer:6.1%} copies {stats['prompt_copies']} "
                  f"windows {stats['windows'] + stats['fallbacks']} {wall:.1f} s")
            print("   ", text[:400])


if __name__ == "__main__":
    main()
