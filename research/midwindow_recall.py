"""Can recall find a prompt in the middle of a call window from the log-mel features?

    python research/midwindow_recall.py record -o /tmp/mw.npz     # decode once (about 12 min)
    python research/midwindow_recall.py score /tmp/mw.npz [--bins 56 --chunks 10 ...]

``record`` decodes (fork, base, int8, greedy, timestamps on, as the bench) every 8 kHz
Asterisk test prompt (the recordings ``make bench-learn`` indexes) and every call window of
``--manifest``, keeping each one's log-mel features and greedy tokens.
``score`` fingerprints the log-mel frames where each segment opens (8 kHz prompts: the
index; call windows: the queries) and counts, at the call windows' segment starts, the
tokens a recalled segment would have had accepted (common prefix with greedy's text and
closing timestamp), against the encoder fingerprint of :mod:`tokenmap.maps.audio_fingerprints`.
"""
import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import tokenmap  # noqa: F401  (first: the thread wait policy)

# isort: split
from tokenmap import resolve_model
from tokenmap.decode.reference import GREEDY_KW
from tokenmap.decode.special import SpecialTokens
from tokenmap.maps.audio_fingerprints import fingerprint
from tokenmap.maps.recallindex import segments
from tokenmap_bench import features

ROOT = Path(__file__).resolve().parents[1]

VOICES = {"en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June"}
SOUNDS = Path("/usr/share/asterisk/sounds")


def record(args):
    import ctranslate2
    model_dir = resolve_model("base", download=False)
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="int8", intra_threads=2)
    special = SpecialTokens.from_model_dir(str(model_dir))
    vocab = (model_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    jobs = []
    for lang in VOICES:
        for line in (ROOT / "corpora/telephony" / lang / "test.tsv").read_text().splitlines():
            wav = SOUNDS / VOICES[lang] / f"{line.split(chr(9), 1)[0]}.wav"
            if wav.exists():
                jobs.append(("ref", lang, str(wav)))
    for line in (ROOT / args.manifest).read_text().splitlines():
        u = json.loads(line)
        if u["set"] == "calls":
            jobs.append(("call", u["lang"], str(ROOT / "bench-data" / u["audio"])))
    out = {"kind": [], "lang": [], "path": []}
    mels, toks, encs = [], [], []
    for i, (kind, lang, path) in enumerate(jobs):
        mel, seconds = features(SimpleNamespace(audio=path))
        enc = model.encode(mel)
        prompt = [special.sot, vocab.index(f"<|{lang}|>"), vocab.index("<|transcribe|>")]
        res = model.generate(enc, [prompt], **GREEDY_KW)[0]
        frames = np.asarray(enc)[0]
        n = int(seconds * 100) + 1
        mels.append(np.asarray(mel)[0][:, :n].astype(np.float16))
        toks.append(np.asarray(res.sequences_ids[0], dtype=np.int32))
        # encoder fingerprints at every opening timestamp (what tokenmap.decode.recall uses)
        fp = {}
        for opening, _, _ in segments(res.sequences_ids[0], special.timestamp_begin):
            v = fingerprint(frames, opening - special.timestamp_begin)
            if v is not None:
                fp[opening - special.timestamp_begin] = v.astype(np.float16)
        encs.append(fp)
        for k, v in zip(("kind", "lang", "path"), (kind, lang, path)):
            out[k].append(v)
        if i % 50 == 0:
            print(f"{i}/{len(jobs)}", file=sys.stderr, flush=True)
    np.savez(args.out, meta=json.dumps(out), tb=special.timestamp_begin,
             **{f"mel{i}": m for i, m in enumerate(mels)}, **{f"tok{i}": t for i, t in enumerate(toks)},
             **{f"enc{i}_{f}": v for i, fp in enumerate(encs) for f, v in fp.items()})


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("-o", "--out", required=True)
    r.add_argument("--manifest", default="bench-data/scripted.jsonl", help="its call windows are the queries")
    s = sub.add_parser("score")
    s.add_argument("data")
    s.add_argument("--bins", type=int, default=56, help="lowest mel bins used (56: below about 4 kHz)")
    s.add_argument("--chunk", type=int, default=10, help="mel frames (10 ms) a chunk")
    s.add_argument("--chunks", type=int, default=10)
    s.add_argument("--onset", type=float, default=None, help="align at the first frame louder than this")
    s.add_argument("--search", type=int, default=20, help="query offsets tried, +- mel frames")
    s.add_argument("--threshold", type=float, default=0.9)
    args = ap.parse_args()
    record(args) if args.cmd == "record" else score(args)


def mel_fingerprint(mel, frame, bins, chunk, chunks, onset):
    """Unit vector of log-mel ``mel`` [80, N] from ``frame`` (or from the speech onset after it)."""
    if onset is not None:
        energy = mel[:bins].mean(axis=0)
        start = max(frame - 10, 0)
        loud = np.nonzero(energy[start:start + 100] > onset)[0]
        if len(loud):
            frame = start + int(loud[0])
    x = mel[:bins, frame:frame + chunk * chunks]
    if x.shape[1] < chunk * chunks:
        return None
    v = x.reshape(bins, chunks, chunk).mean(axis=2).T  # [chunks, bins]
    v = (v - v.mean()).ravel()
    n = np.linalg.norm(v)
    return v / n if n > 0 else None


def prefix(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def score(args):
    data = np.load(args.data)
    meta, tb = json.loads(str(data["meta"])), int(data["tb"])
    keys = set(data.files)
    refs, queries = [], []
    for i, kind in enumerate(meta["kind"]):
        mel, tok = data[f"mel{i}"].astype(np.float32), data[f"tok{i}"].tolist()
        for k, (opening, text, closing) in enumerate(segments(tok, tb)):
            f = opening - tb
            enc = data[f"enc{i}_{f}"].astype(np.float32) if f"enc{i}_{f}" in keys else None
            item = dict(i=i, k=k, f=f, text=text, length=closing - opening, closing=closing, enc=enc,
                        mel=[mel_fingerprint(mel, 2 * f + d, args.bins, args.chunk, args.chunks, args.onset)
                             for d in range(-args.search, args.search + 1, 2)] if kind == "call" else
                        mel_fingerprint(mel, 2 * f, args.bins, args.chunk, args.chunks, args.onset))
            (queries if kind == "call" else refs).append(item)
    ref_mel = [r for r in refs if r["mel"] is not None]
    M = np.stack([r["mel"] for r in ref_mel])
    ref_enc = [r for r in refs if r["enc"] is not None]
    E = np.stack([r["enc"] for r in ref_enc])
    total = {"start": [0] * 7, "mid": [0] * 7}  # tokens, enc kept, enc wrong, mel kept, mel wrong, enc/mel drafts
    for q in queries:
        where = "start" if q["k"] == 0 else "mid"
        truth = q["text"] + [q["closing"]]
        t = total[where]
        t[0] += len(truth)
        if q["enc"] is not None:
            sims = E @ q["enc"]
            r = int(np.argmax(sims))
            if sims[r] >= 0.9:
                got = prefix(ref_enc[r]["text"] + [q["closing"] - q["length"] + ref_enc[r]["length"]], truth)
                t[1] += got
                t[2] += got == 0
                t[5] += 1
        vs = [v for v in q["mel"] if v is not None]
        if vs:
            sims = np.stack(vs) @ M.T  # [offsets, refs]
            r = int(np.argmax(sims.max(axis=0)))
            if sims[:, r].max() >= args.threshold:
                ref = ref_mel[r]
                got = prefix(ref["text"] + [q["closing"] - q["length"] + ref["length"]], truth)
                t[3] += got
                t[4] += got == 0
                t[6] += 1
    for where, t in total.items():
        print(f"{where}: {t[0]} tokens; encoder fp keeps {t[1]} ({t[5]} drafts, {t[2]} wrong); "
              f"mel fp keeps {t[3]} ({t[6]} drafts, {t[4]} wrong)")


if __name__ == "__main__":
    main()
