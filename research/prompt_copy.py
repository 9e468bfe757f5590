"""A long reading that makes Whisper copy its prompt: the five LibriVox clips of pocketsphinx-testdata,
back to back with pauses, read twice, transcribed with VAD on and off, the prompt-copy guard on and off.

Run: ``python research/prompt_copy.py [--audio-context full|auto]``; ``--menus en,es,fr`` instead
transcribes speech that really repeats (an IVR menu played again after each of four other prompts), where
every window the guard decodes again is a false alarm. Prints WER, the windows the guard decoded again (and
kept after a probe) and the time, per guard (off; runs of 12 tokens; runs or 3-word phrases) and VAD setting.
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


def menus(lang: str, pause_s: float = 1.0, rounds: int = 4):
    """Speech that really repeats: a lang's longest Asterisk test prompt (an IVR menu) played after each
    of ``rounds`` other prompts, as a caller hears it again and again; its audio and reference text."""
    import json

    from faster_whisper.audio import decode_audio

    data = Path(__file__).resolve().parent.parent / "bench-data"
    prompts = [json.loads(line) for line in (data / "e2e-all.jsonl").read_text().splitlines()]
    prompts = sorted((p for p in prompts if p["set"] == "telephony" and p["lang"] == lang),
                     key=lambda p: -len(p["text"]))
    menu, others = prompts[0], prompts[1: 1 + rounds]
    gap = np.zeros(int(16000 * pause_s), np.float32)
    audio, words = [], []
    for other in others:
        for p in (menu, other):
            audio += [decode_audio(str(data / p["audio"])), gap]
            words.append(p["text"])
    return np.concatenate(audio), " ".join(words)


GUARDS = {"off": dict(copies=False), "runs": dict(copy_min_words=10 ** 6),
          "runs+phrases": {}}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--audio-context", default="full")
    ap.add_argument("--times", type=int, default=2)
    ap.add_argument("--menus", default=None, help="instead of the reading: IVR menus repeated, e.g. en,es,fr")
    ap.add_argument("--guards", default=",".join(GUARDS), help="alternated in each of --reps [off,runs,runs+phrases]")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--vad", default="on,off")
    args = ap.parse_args()
    import jiwer

    from tokenmap.decode.guarding import Guard

    cases = ([(lang, *menus(lang)) for lang in args.menus.split(",")] if args.menus
             else [("en", *reading(times=args.times))])
    norm = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(),
                          jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])
    for lang, audio, ref in cases:
        print(f"{lang}: {len(audio) / 16000:.1f} s of audio")
        guards = args.guards.split(",")
        for rep, vad in ((rep, vad == "on") for rep in range(args.reps) for vad in args.vad.split(",")):
            for guard, fields in ((g, GUARDS[g]) for g in guards[rep % len(guards):] + guards[: rep % len(guards)]):
                model = tokenmap.WhisperModel("base", compute_type="int8", cpu_threads=2, session_cache=False,
                                              audio_context=args.audio_context)
                model.model.guard = Guard(**fields)
                t = time.perf_counter()
                segments, _ = model.transcribe(audio, language=lang, vad_filter=vad, temperature=0.0)
                text = " ".join(s.text.strip() for s in segments)
                wall = time.perf_counter() - t
                wer = jiwer.wer(ref, text, reference_transform=norm, hypothesis_transform=norm)
                stats = model.last_stats()
                print(f"copy guard {guard:12s} vad={vad!s:5s} WER {wer:6.1%} copies {stats['prompt_copies']} kept "
                      f"{stats['copies_kept']} windows {stats['windows']} {wall:.1f} s", flush=True)


if __name__ == "__main__":
    main()
