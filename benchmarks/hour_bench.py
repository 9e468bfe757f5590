"""An hour of real speech through `tokenmap transcribe`: resident memory over time, wall time, RTF.

    python benchmarks/hour_bench.py                       # 60 minutes, both configurations
    python benchmarks/hour_bench.py --minutes 20 --configs map,map-auto --out /tmp/tm/hour.json

The audio is the English Asterisk prompts (Allison, 16 kHz G.722; every prompt of
``corpora/telephony/en/{train,test}.tsv``) and the 5 pocketsphinx LibriVox clips, in a seeded
order with pauses of 0.3-1.2 s, cycled until ``--minutes`` are reached (the 564 prompts hold
about 25 minutes, so an hour hears each about 2.4 times), written once as a 16 kHz wav into
``$XDG_CACHE_HOME/tokenmap/hour-bench/`` (never committed); the reference is the prompts'
texts in the same order. The map is ``tokenmap build corpora/telephony/en/train.txt``.

Configurations: ``map`` (as the command runs), ``map-auto`` (``--audio-context auto``), ``map-batch8``
(``--batch-size 8``) and ``map-malloc-default`` (``map`` with ``TOKENMAP_MALLOC=default``: glibc's own
allocator settings).
Each runs in a fresh process, as `tokenmap transcribe --map MAP -l en -f srt -o DIR` would:
:func:`tokenmap.transcriber.load_model` (a ``tokenmap.WhisperModel``, base, int8),
:func:`tokenmap.transcriber.transcribe_file` with the command's default options, and the
command's own segment-by-segment srt output. A thread samples ``VmRSS`` of the process (and of
its children: the stock encoder worker) every ``--every`` seconds, with the audio position
decoded so far and the size of the srt written so far. Reported: peak RSS (VmHWM), the median
RSS while decoding and its slope against minutes of audio decoded after the first 5 minutes
(least squares), RSS once done, wall time, RTF, WER, when the first segment reached the file and
the longest wait between two segments.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOUNDS = Path("/usr/share/asterisk/sounds/en_US_f_Allison")
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
#: name -> (audio_context, extra environment, batch size)
CONFIGS = {"map": ("full", {}, 1), "map-auto": ("auto", {}, 1), "map-batch8": ("full", {}, 8),
           "map-malloc-default": ("full", {"TOKENMAP_MALLOC": "default"}, 1)}
SR = 16000


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "tokenmap" / "hour-bench"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _pieces():
    """``(loader, reference)`` of every English prompt with a text, and of the LibriVox clips."""
    from tokenmap.audio import load_audio
    from tokenmap_bench import decode_g722

    pieces = []
    for split in ("train", "test"):
        for line in (ROOT / "corpora/telephony/en" / f"{split}.tsv").read_text(encoding="utf-8").splitlines():
            name, _, text = line.partition("\t")
            path = SOUNDS / f"{name}.g722"
            if text.strip() and path.exists():
                pieces.append((lambda p=path: decode_g722(str(p)), text.strip()))
    refs = {}
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        text, _, name = line.rpartition("(")
        refs[name.strip(" )")] = text.replace("<s>", "").replace("</s>", "").strip()
    pieces += [(lambda p=LIBRIVOX / f"{n}.wav": load_audio(p), t) for n, t in sorted(refs.items())]
    return pieces


def build_audio(minutes: float, seed: int = 0) -> tuple[Path, Path]:
    """The wav of ``minutes`` of speech and its reference text (cached by minutes and seed)."""
    import wave

    import numpy as np

    wav = cache_dir() / f"hour-{minutes:g}min-seed{seed}.wav"
    ref = wav.with_suffix(".txt")
    if wav.exists() and ref.exists():
        return wav, ref
    pieces, rng = _pieces(), random.Random(seed)
    decoded, chunks, texts, total = {}, [], [], 0
    while total < minutes * 60 * SR:
        order = list(range(len(pieces)))
        rng.shuffle(order)
        for i in order:
            if i not in decoded:
                decoded[i] = np.asarray(pieces[i][0](), dtype=np.float32)
            pause = np.zeros(int(rng.uniform(0.3, 1.2) * SR), dtype=np.float32)
            chunks += [decoded[i], pause]
            texts.append(pieces[i][1])
            total += len(decoded[i]) + len(pause)
            if total >= minutes * 60 * SR:
                break
    tmp = wav.with_name(wav.name + ".tmp.wav")
    with wave.open(str(tmp), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SR)
        out.writeframes((np.clip(np.concatenate(chunks), -1, 1) * 32767).astype("<i2").tobytes())
    os.replace(tmp, wav)
    ref.write_text(" ".join(texts) + "\n", encoding="utf-8")
    return wav, ref


def build_map() -> Path:
    """``tokenmap build corpora/telephony/en/train.txt`` into the cache (rebuilt every run: seconds)."""
    out = cache_dir() / "telephony-en.tmap"
    cmd = [str(Path(sys.executable).with_name("tokenmap")), "build", str(ROOT / "corpora/telephony/en/train.txt"),
           "-o", str(out), "--force"]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def rss_mb(pid: str = "self", field: str = "VmRSS") -> float:
    """Resident set size of a process (``/proc/PID/status`` VmRSS; VmHWM: its peak), in MB; 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def children_rss_mb() -> float:
    """Summed VmRSS of this process's children (the stock encoder worker)."""
    pids = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            pids.update((task / "children").read_text().split())
        except OSError:
            continue
    return sum(rss_mb(pid) for pid in pids)


class Sampler(threading.Thread):
    """Every ``every`` seconds: (wall s, RSS MB, children's RSS MB, audio s decoded, output bytes)."""

    def __init__(self, every: float, position, output: Path):
        super().__init__(daemon=True)
        self.every, self.position, self.output = every, position, output
        self.samples, self.started = [], time.perf_counter()
        self._halt = threading.Event()

    def sample(self) -> None:
        size = max((p.stat().st_size for p in self.output.parent.glob(self.output.name + "*")), default=0)
        self.samples.append((round(time.perf_counter() - self.started, 2), round(rss_mb(), 1),
                             round(children_rss_mb(), 1), round(self.position(), 1), size))

    def run(self) -> None:
        while not self._halt.wait(self.every):
            self.sample()

    def stop(self) -> tuple:
        """Stop sampling; one last sample, taken after the transcription (not one of :attr:`samples`)."""
        self._halt.set()
        self.join()
        self.sample()
        return self.samples.pop()


def run_child(config: str, wav: Path, tmap: Path, every: float) -> dict:
    """One configuration in this (fresh) process; the result as a dict."""
    import tempfile

    from tokenmap.runtime import memory  # first: the thread wait policy, set on import

    memory.install()  # the malloc policy, as the tokenmap command applies it (TOKENMAP_MALLOC=default: off)
    from tokenmap.transcriber import TranscribeOptions, load_model, transcribe_file
    from tokenmap_cli.cmd_transcribe import _Output

    baseline = rss_mb()
    model = load_model("base", compute_type="int8", token_map=[str(tmap)], audio_context=CONFIGS[config][0])
    loaded = rss_mb()
    outdir = Path(tempfile.mkdtemp(prefix="hour-bench-"))
    out = _Output(str(wav), "srt", outdir, many=False)
    done = [0.0]
    arrivals = []

    def on_segment(segment):
        out.segment(segment)
        arrivals.append((time.perf_counter() - sampler.started, segment.end))

    sampler = Sampler(every, lambda: done[0], outdir / f"{wav.stem}.srt")
    sampler.start()
    result = transcribe_file(model, wav, TranscribeOptions(language="en", batch_size=CONFIGS[config][2]),
                             progress=lambda d, _total: done.__setitem__(0, d), on_segment=on_segment)
    out.finish(result)
    after = sampler.stop()
    return {"config": config, "baseline_mb": baseline, "loaded_mb": loaded, "samples": sampler.samples, "after": after,
            "hwm_mb": rss_mb(field="VmHWM"),
            "arrivals": arrivals, "text": result.text, "stats": result.stats, "segments": len(result.segments),
            "srt": str(outdir / f"{wav.stem}.srt")}


def summarize(run: dict, ref: str) -> dict:
    """Peak RSS, RSS while decoding and its slope after the first 5 minutes of audio (MB per audio
    minute, least squares over the samples taken while decoding), wall, RTF, WER, output timing."""
    import numpy as np

    from tokenmap_bench import wer

    samples = np.array([s[:4] for s in run["samples"]], dtype=float)
    decoding = samples[samples[:, 3] > 0]
    late = decoding[decoding[:, 3] >= 300]
    slope = np.polyfit(late[:, 3] / 60, late[:, 1], 1)[0] if len(late) >= 3 else float("nan")
    stats, arrivals = run["stats"], [a for a, _ in run["arrivals"]]
    return {"config": run["config"], "audio_min": stats["audio_seconds"] / 60, "wall_s": stats["wall_seconds"],
            "rtf": stats["rtf"], "wer": wer([(ref, run["text"])]), "loaded_mb": run["loaded_mb"],
            "peak_mb": run["hwm_mb"],
            "decoding_mb": float(np.median(decoding[:, 1])) if len(decoding) else float("nan"),
            "slope_mb_per_min": slope, "after_mb": run["after"][1], "peak_worker_mb": samples[:, 2].max(),
            "segments": run["segments"], "first_segment_s": arrivals[0] if arrivals else float("nan"),
            "max_gap_s": float(np.diff(arrivals).max()) if len(arrivals) > 1 else float("nan"),
            "acceptance": stats.get("acceptance_rate", float("nan"))}


def table(rows: list[dict]) -> str:
    lines = ["| configuration | audio (min) | wall (s) | RTF | WER | RSS after load (MB) | peak RSS (MB) | "
             "RSS while decoding, median (MB) | slope after 5 min (MB per audio min) | RSS at the end (MB) | "
             "encoder worker peak (MB) | first segment in the file (s) | longest gap between segments (s) |",
             "| --- |" + " ---: |" * 12]
    for r in rows:
        lines.append(f"| {r['config']} | {r['audio_min']:.1f} | {r['wall_s']:.0f} | {r['rtf']:.3f} | {r['wer']:.1%} | "
                     f"{r['loaded_mb']:.0f} | {r['peak_mb']:.0f} | {r['decoding_mb']:.0f} | "
                     f"{r['slope_mb_per_min']:+.2f} | {r['after_mb']:.0f} | {r['peak_worker_mb']:.0f} | "
                     f"{r['first_segment_s']:.1f} | {r['max_gap_s']:.1f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="minutes of audio [60]")
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated, of {', '.join(CONFIGS)}")
    parser.add_argument("--every", type=float, default=3.0, help="seconds between memory samples [3]")
    parser.add_argument("--out", default=None, help="write the samples and the summary here (JSON)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--wav", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--map", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_child(args.child, Path(args.wav), Path(args.map), args.every)))
        return
    wav, ref = build_audio(args.minutes)
    tmap = build_map()
    print(f"audio: {wav} ({args.minutes:g} min); map: {tmap}", file=sys.stderr)
    runs, rows = [], []
    for config in args.configs.split(","):
        cmd = [sys.executable, __file__, "--child", config, "--wav", str(wav), "--map", str(tmap),
               "--every", str(args.every)]
        env = {k: v for k, v in os.environ.items() if k != "TOKENMAP_MALLOC"}
        proc = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env={**env, **CONFIGS[config][1]})
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        rows.append(summarize(runs[-1], ref.read_text(encoding="utf-8")))
        print(f"{config}: {json.dumps(rows[-1])}", file=sys.stderr)
    print(table(rows))
    if args.out:
        Path(args.out).write_text(json.dumps({"wav": str(wav), "runs": runs, "summary": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
