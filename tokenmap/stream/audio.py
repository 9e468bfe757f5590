"""Audio sources for :mod:`tokenmap.stream.live`: a file (as fast as possible or in real time) or a microphone.

A source yields float32 mono 16 kHz chunks, one per update; in real time a chunk holds what arrived since
the last one, so an update that falls behind sees more audio next time.
"""

from __future__ import annotations

import logging
import queue
import time
from typing import Iterator

import numpy as np

from tokenmap.audio import SAMPLE_RATE

logger = logging.getLogger("tokenmap")


class AudioSourceError(RuntimeError):
    """The requested audio source cannot be opened (one-line message)."""


class FileSource:
    """Plays a decoded file: ``realtime`` follows the wall clock (``speed`` x), else as fast as possible."""

    def __init__(self, audio: np.ndarray, realtime: bool = False, speed: float = 1.0, clock=time.monotonic,
                 sleep=time.sleep):
        self.audio = np.asarray(audio, np.float32)
        self.realtime, self.speed, self.clock, self.sleep = realtime, speed, clock, sleep

    def chunks(self, update_seconds: float) -> Iterator[np.ndarray]:
        step = max(1, int(round(update_seconds * SAMPLE_RATE)))
        total, done = len(self.audio), 0
        if not self.realtime:
            for start in range(0, total, step):
                yield self.audio[start: start + step]
            return
        t0 = self.clock()
        while done < total:
            target = min(total, done + step)
            wait = t0 + target / (SAMPLE_RATE * self.speed) - self.clock()
            if wait > 0:
                self.sleep(wait)
            arrived = min(total, int((self.clock() - t0) * SAMPLE_RATE * self.speed))
            end = max(target, arrived)  # behind the clock: take everything that has arrived
            yield self.audio[done:end]
            done = end


class MicrophoneSource:
    """The default input device through ``sounddevice`` (16 kHz mono); stops on KeyboardInterrupt."""

    def __init__(self, device=None):
        try:
            import sounddevice
        except Exception as exc:  # ImportError, or OSError when PortAudio is missing
            raise AudioSourceError(f"microphone input needs the sounddevice package and PortAudio ({exc})")
        try:
            sounddevice.check_input_settings(device=device, channels=1, samplerate=SAMPLE_RATE, dtype="float32")
        except Exception as exc:
            raise AudioSourceError(f"no usable microphone ({str(exc).splitlines()[0] if str(exc) else exc})")
        self.sd, self.device = sounddevice, device

    def chunks(self, update_seconds: float) -> Iterator[np.ndarray]:
        q: queue.Queue = queue.Queue()

        def callback(indata, frames, t, status):
            if status:
                logger.warning("microphone: %s", status)
            q.put(indata[:, 0].copy())

        with self.sd.InputStream(samplerate=SAMPLE_RATE, channels=1, dtype="float32", device=self.device,
                                 callback=callback):
            while True:
                time.sleep(update_seconds)
                parts = []
                while not q.empty():
                    parts.append(q.get_nowait())
                yield np.concatenate(parts) if parts else np.zeros(0, np.float32)
