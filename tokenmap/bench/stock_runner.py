"""Stock faster-whisper on stock CTranslate2, run inside its own virtual environment.

Standalone on purpose: it imports only faster_whisper, ctranslate2 and numpy
(the fork and stock CTranslate2 cannot share one process), so the launcher
(:mod:`tokenmap.bench.stock`) runs it by path::

    .venv-stock/bin/python tokenmap/bench/stock_runner.py job.json out.json

``job.json``: ``{"model_dir", "compute_type", "threads", "reps", "e2e_reps",
"timestamps", "generate_kw", "utterances": [{"id", "audio", "lang", "prompt"}]}``.
Per utterance it times, interleaved and repeated like the main harness:
``stock`` = ``generate`` on its own encoder output of the first 30 s window
(decode only), ``stock-e2e`` = a whole ``transcribe()`` (language given, VAD
off, greedy). ``out.json``: ``{"rows", "peak_rss_mb", "versions"}``.
"""

import json
import resource
import statistics
import sys
import time

import numpy as np


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _features(audio_path, n_mels):
    import ctranslate2
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor

    audio = decode_audio(audio_path, sampling_rate=16000)
    mel = FeatureExtractor(feature_size=n_mels)(audio)[:, :3000]
    mel = np.pad(mel, ((0, 0), (0, 3000 - mel.shape[1])))[None]
    return ctranslate2.StorageView.from_array(np.ascontiguousarray(mel, dtype=np.float32))


def run_one(model, utt, job, reps, e2e_reps):
    engine = model.model
    encode_s, enc = _timed(lambda: engine.encode(_features(utt["audio"], engine.n_mels)))
    kw = job["generate_kw"]

    def decode():
        return list(engine.generate(enc, [utt["prompt"]], **kw)[0].sequences_ids[0])

    def e2e():
        segments, _ = model.transcribe(utt["audio"], language=utt["lang"], beam_size=1, vad_filter=False,
                                       without_timestamps=not job["timestamps"], temperature=0.0)
        return " ".join(s.text.strip() for s in segments)

    decode()  # per-utterance warm-up, as in the main harness
    runs = {"stock": decode, "stock-e2e": e2e}
    times = {"stock": [], "stock-e2e": []}
    outs = {}
    for rep in range(reps):
        order = ["stock", "stock-e2e"] if rep % 2 == 0 else ["stock-e2e", "stock"]
        for name in order:
            if name == "stock-e2e" and rep >= e2e_reps:
                continue
            seconds, outs[name] = _timed(runs[name])
            times[name].append(seconds)
    rows = [{"id": utt["id"], "system": "stock", "decoder_s": statistics.median(times["stock"]),
             "times": times["stock"], "encode_s": encode_s, "token_ids": outs["stock"]}]
    if times["stock-e2e"]:
        rows.append({"id": utt["id"], "system": "stock-e2e", "decoder_s": statistics.median(times["stock-e2e"]),
                     "times": times["stock-e2e"], "text": outs["stock-e2e"]})
    return rows


def main(job_path, out_path):
    import ctranslate2
    import faster_whisper

    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    model = faster_whisper.WhisperModel(job["model_dir"], device="cpu", compute_type=job["compute_type"],
                                        cpu_threads=job["threads"])
    utts = job["utterances"]
    if utts:
        run_one(model, utts[0], job, 1, 1)  # global warm-up
    rows = []
    for i, utt in enumerate(utts):
        rows.extend(run_one(model, utt, job, job["reps"], job["e2e_reps"]))
        print(f"{i + 1}/{len(utts)}", file=sys.stderr, flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # includes the parent's at exec
    with open("/proc/self/status", encoding="ascii") as f:  # VmHWM: this process's own peak
        peak = next((int(l.split()[1]) / 1024.0 for l in f if l.startswith("VmHWM:")), peak)
    versions = {"ctranslate2": ctranslate2.__version__, "faster_whisper": faster_whisper.__version__}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "peak_rss_mb": round(peak, 1), "versions": versions}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
