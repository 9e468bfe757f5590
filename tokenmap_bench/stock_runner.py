"""Stock faster-whisper on stock CTranslate2, run inside its own virtual environment.

Standalone on purpose: it imports only faster_whisper, ctranslate2 and numpy
(the fork and stock CTranslate2 cannot share one process), so the launcher
(:mod:`tokenmap_bench.stock`) runs it by path::

    .venv-stock/bin/python tokenmap_bench/stock_runner.py --serve

It times, on the utterance the harness names, ``stock`` = ``generate`` on
its own encoder output of the first 30 s window (decode only) and
``stock-e2e`` = a whole ``transcribe()`` (language given, VAD off, greedy) and
``stock-defaults-e2e`` = the same with faster-whisper's own defaults (beam 5, temperature fallback).

It answers one JSON request per stdin line on stdout, so the
main harness can time ``stock`` inside its own rotation of systems
(:class:`tokenmap_bench.stock.StockServer`): ``{"op": "load", <job fields>}``,
``{"op": "prepare", "utt": {...}}`` (encode, untimed warm-up decode),
``{"op": "stock"}`` / ``{"op": "stock-e2e"}`` / ``{"op": "stock-defaults-e2e"}`` (one timed run: ``seconds`` and
``token_ids`` or ``text``), ``{"op": "done"}`` (``peak_rss_mb``, ``versions``).
Anything the libraries print goes to stderr.
"""

import json
import resource
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
    mel = FeatureExtractor(feature_size=n_mels)(audio)[:, :-1][:, :3000]  # as transcribe(): last frame dropped
    mel = np.pad(mel, ((0, 0), (0, 3000 - mel.shape[1])))[None]
    return ctranslate2.StorageView.from_array(np.ascontiguousarray(mel, dtype=np.float32))


def _peak_mb():
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    with open("/proc/self/status", encoding="ascii") as f:
        return next((int(line.split()[1]) / 1024.0 for line in f if line.startswith("VmHWM:")), peak)


def serve(stdin, out):
    """The ``--serve`` loop: one JSON request a line in, one JSON answer a line out."""
    import ctranslate2
    import faster_whisper

    model, job, current = None, None, {}
    for line in stdin:
        req = json.loads(line)
        op = req["op"]
        if op == "load":
            job = req
            model = faster_whisper.WhisperModel(job["model_dir"], device="cpu", compute_type=job["compute_type"],
                                                cpu_threads=job["threads"])
            answer = {"ok": True}
        elif op == "prepare":
            utt = req["utt"]
            engine = model.model
            encode_s, enc = _timed(lambda: engine.encode(_features(utt["audio"], engine.n_mels)))
            current = {"utt": utt, "enc": enc}
            engine.generate(enc, [utt["prompt"]], **job["generate_kw"])  # per-utterance warm-up
            answer = {"encode_s": encode_s}
        elif op == "stock":
            utt = current["utt"]
            seconds, res = _timed(lambda: model.model.generate(current["enc"], [utt["prompt"]], **job["generate_kw"]))
            answer = {"seconds": seconds, "token_ids": list(res[0].sequences_ids[0])}
        elif op == "stock-e2e":
            utt = current["utt"]

            def e2e():
                segments, _ = model.transcribe(utt["audio"], language=utt["lang"], beam_size=1, vad_filter=False,
                                               without_timestamps=not job["timestamps"], temperature=0.0)
                return " ".join(s.text.strip() for s in segments)
            seconds, text = _timed(e2e)
            answer = {"seconds": seconds, "text": text}
        elif op == "stock-defaults-e2e":  # faster-whisper's own defaults: beam 5, temperature fallback
            utt = current["utt"]
            seconds, text = _timed(lambda: " ".join(s.text.strip() for s in model.transcribe(
                utt["audio"], language=utt["lang"])[0]))
            answer = {"seconds": seconds, "text": text}
        elif op == "done":
            versions = {"ctranslate2": ctranslate2.__version__, "faster_whisper": faster_whisper.__version__}
            answer = {"peak_rss_mb": round(_peak_mb(), 1), "versions": versions}
        else:
            answer = {"error": f"unknown op {op!r}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()
        if op == "done":
            return


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        import os

        protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
        os.dup2(2, 1)  # library output goes to stderr, never into the protocol
        serve(sys.stdin, protocol)
    else:
        sys.exit("usage: stock_runner.py --serve  (started by tokenmap bench)")
