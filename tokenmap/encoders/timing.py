"""The encoder timing of :func:`tokenmap.encoders.choice.measure_apart`'s child process.

``python -m tokenmap.encoders.timing MODEL_DIR COMPUTE_TYPE THREADS REPS [CANDIDATE ...]`` prints
``running NAME`` before each encode, so that the parent knows which engine a crash came from, then the
measurement as one JSON line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenmap.encoders.choice import measure


def main(argv: list[str]) -> int:
    model_dir, compute_type, threads, reps, *candidates = argv
    data = measure(Path(model_dir), compute_type, int(threads), reps=int(reps), candidates=candidates,
                   running=lambda name: print("running", name, flush=True))
    print(json.dumps(data), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
