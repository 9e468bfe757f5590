#!/usr/bin/env python3
"""Where does a streaming update's time go? The engine's calls timed per update.

Plays a file through ``tokenmap.stream.live.StreamTranscriber`` in 1 s updates as fast as possible
(``StreamModel.load("base", compute_type="int8")``, the CLI's defaults), with the model's ``encode``,
``prefill``, ``forward_batch`` and ``forward_step`` wrapped and timed; prints, per update, the mean
time of each call kind and how many were made, and the rest of the decode (the loop's Python).

    .venv/bin/python research/stream_anatomy.py tests/data/en-basic-pbx-ivr-main.flac
"""

from __future__ import annotations

import argparse
import collections
import time

import tokenmap  # noqa: F401  (its runtime settings first)
from tokenmap.audio import load_audio
from tokenmap.stream.audio import FileSource
from tokenmap.stream.live import StreamModel, StreamOptions, StreamTranscriber

CALLS = ("encode", "prefill", "forward_batch", "forward_step")


class Timed:
    """The model with :data:`CALLS` timed into ``seconds`` and counted into ``calls``."""

    def __init__(self, inner):
        self.inner, self.seconds, self.calls = inner, collections.Counter(), collections.Counter()

    def __getattr__(self, name):
        value = getattr(self.inner, name)
        if name not in CALLS:
            return value

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return value(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started
                self.calls[name] += 1
        return timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("audio")
    ap.add_argument("--update", type=float, default=1.0, help="seconds of audio between updates")
    args = ap.parse_args()
    engine = StreamModel.load("base", compute_type="int8")
    engine.model = model = Timed(engine.model)
    st = StreamTranscriber(engine, StreamOptions(update_seconds=args.update))
    for _ in st.run(FileSource(load_audio(args.audio)).chunks(args.update)):
        pass
    updates = st.metrics.updates
    n = len(updates)
    decode = sum(r.decode_seconds for r in updates)
    engine_decode = sum(model.seconds[c] for c in CALLS if c != "encode")
    encode = sum(r.encode_seconds for r in updates)
    print(f"{n} updates; per update: encode (features, worker) {encode / n * 1e3:.1f} ms, "
          f"decode {decode / n * 1e3:.1f} ms")
    for name in CALLS:
        print(f"  {name:14s} {model.calls[name] / n:5.2f} calls  {model.seconds[name] / n * 1e3:6.1f} ms")
    print(f"  {'rest of decode':14s} {'':11s} {(decode - engine_decode) / n * 1e3:6.1f} ms")


if __name__ == "__main__":
    main()
