"""A generated corpus of templated maintenance reports, for tests and micro-benchmarks of the builder."""

from __future__ import annotations

import random
from typing import Iterator


def synthetic_corpus(n: int, seed: int = 0) -> Iterator[str]:
    """``n`` templated maintenance reports (for tests and benchmarks), deterministic.

    >>> next(synthetic_corpus(1, seed=1))  # doctest: +SKIP
    'Hydraulic pump 3 inspected, pressure 142.5 bar.'
    """
    rng = random.Random(seed)
    parts = ["Hydraulic pump", "Cooling fan", "Main valve", "Feed motor", "Gearbox", "Compressor", "Oil filter"]
    acts = ["inspected", "replaced", "cleaned", "checked", "calibrated"]
    meas = [("pressure", "bar"), ("temperature", "degrees"), ("speed", "rpm"), ("vibration", "millimeters per second")]
    notes = ["No leaks found.", "Seal shows wear, order a spare.", "Within tolerance.", "Noise on start-up.", ""]
    for _ in range(n):
        part, act = rng.choice(parts), rng.choice(acts)
        name, unit = rng.choice(meas)
        value = f"{rng.randint(1, 400)}.{rng.randint(0, 9)}" if rng.random() < 0.7 else str(rng.randint(1, 99))
        note = rng.choice(notes)
        yield f"{part} {rng.randint(1, 12)} {act}, {name} {value} {unit}." + (f" {note}" if note else "")
