"""What a verify pass costs, and whether a draft pays for it.

The decoder verifies one draft of ``L`` tokens by feeding ``L + 1`` tokens
(the last accepted token plus the draft) in one ``forward_batch`` call, which
replaces the ``forward_step`` it would have run anyway.  A draft whose
expected number of accepted tokens is ``E`` therefore saves::

    saving(L) = E * step_ms - (batch_ms(L + 1) - step_ms)        # milliseconds

:class:`CostModel` holds the measured curve; ``tokenmap calibrate`` measures
it on the user's machine and :func:`load_cost_model` falls back to
:data:`DEFAULT` (a curve of Whisper base, int8, 2 threads).

Names: the *calibration* is this measured curve and nothing else (``tokenmap
calibrate``, :func:`calibrate`, :func:`calibration_path`); what a drafter
learns from the drafts the model verified is its *tally*
(:class:`tokenmap.decode.control.DraftTally`).

The decoding loop also pays ``loop_ms`` a pass that CTranslate2's own
``generate`` does not (the logits as numpy, the rules in Python), so a whole
window decoded speculatively saves, against plain ``generate``,
:meth:`CostModel.window_saving`; the window gate keeps account of it.

Example::

    >>> DEFAULT.batch(8)          # ms to verify 8 tokens
    15.4
    >>> round(DEFAULT.saving(expected_accepted=2.0, draft_len=7), 2)   # 2*11.8 - (15.4 - 11.8)
    20.0
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from tokenmap.decode.rules import RuleSet
from tokenmap.decode.special import SpecialTokens

log = logging.getLogger("tokenmap")

MAX_TOKENS = 32
#: the decoding loop's Python a step beyond a token of ``generate`` (the logits as numpy, the rules),
#: for a curve that does not give its own (Whisper base, 2 threads)
LOOP_MS = 0.7


@dataclass(frozen=True)
class CostModel:
    """Verify-pass costs in milliseconds.

    ``step_ms`` is one ``forward_step``; ``batch_ms[i]`` is one ``forward_batch``
    of ``i + 1`` tokens (a tuple of up to :data:`MAX_TOKENS` floats);
    ``prefill_ms`` is the window's ``prefill`` (0 when unknown), which every
    window pays once whatever is drafted: a replay needs it to turn passes into a speed-up.
    ``loop_ms`` is what a step of the decoding loop costs beyond a token of plain
    ``generate`` (the Python around the engine call; calibrated, else :data:`LOOP_MS`).
    """

    step_ms: float
    batch_ms: tuple[float, ...]
    source: str = "measured"
    prefill_ms: float = 0.0
    loop_ms: float = LOOP_MS

    def __post_init__(self) -> None:
        if not self.batch_ms or self.step_ms <= 0 or any(b <= 0 for b in self.batch_ms):
            raise ValueError("cost model needs a positive step time and batch times")

    def batch(self, n_tokens: int) -> float:
        """ms to verify ``n_tokens`` in one pass (linear beyond the measured range)."""
        n = max(1, int(n_tokens))
        curve = self.batch_ms
        if n <= len(curve):
            return curve[n - 1]
        if len(curve) == 1:
            return curve[0] * n
        slope = max(0.0, (curve[-1] - curve[0]) / (len(curve) - 1))
        return curve[-1] + slope * (n - len(curve))

    def saving(self, expected_accepted: float, draft_len: int) -> float:
        """Expected ms saved by verifying a ``draft_len``-token draft (may be < 0)."""
        return expected_accepted * self.step_ms - (self.batch(draft_len + 1) - self.step_ms)

    def window_saving(self, tokens: int, passes: int, drafts: int, drafted: int) -> float:
        """ms a window decoded by the loop saved against plain ``generate`` (may be < 0; prefill excluded).

        ``generate`` pays ``step_ms - loop_ms`` a token; the loop paid a step for
        each pass without a draft and, for the passes with one, a pass of one
        token plus the drafts' mean length. A window of 20 tokens in 20 passes,
        2 of them with a rejected 1-token draft, loses:

        >>> m = CostModel(10.0, (10.0, 12.0, 13.0), loop_ms=0.5)
        >>> m.window_saving(tokens=20, passes=20, drafts=2, drafted=2)
        -14.0
        >>> m.window_saving(tokens=20, passes=6, drafts=6, drafted=18)  # drafts of 3, mostly kept
        103.0
        """
        plain = tokens * (self.step_ms - self.loop_ms)
        spent = (passes - drafts) * self.step_ms
        if drafts:
            spent += drafts * self.batch(round(1 + drafted / drafts))
        return plain - spent

    def smoothed(self) -> "CostModel":
        """The same model with ``batch_ms`` made non-decreasing in the number of tokens.

        A curve timed on a busy machine zigzags (a longer pass measured cheaper
        than a shorter one), and a draft cut at such a dip is too long. Adjacent
        violators are pooled into their mean (isotonic least squares), which
        keeps real plateaus, such as float32 passes costing the same for 1-3 tokens.

        >>> CostModel(10.0, (10.0, 14.0, 12.0, 18.0, 18.0)).smoothed().batch_ms
        (10.0, 13.0, 13.0, 18.0, 18.0)
        """
        blocks: list[list[float]] = []  # [mean, weight]
        for y in self.batch_ms:
            blocks.append([y, 1.0])
            while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
                (m2, w2), (m1, w1) = blocks.pop(), blocks.pop()
                blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2])
        curve = tuple(round(m, 3) for m, w in blocks for _ in range(int(w)))
        return replace(self, batch_ms=curve)

    def to_json(self) -> dict:
        """Plain-JSON form (see :func:`save_cost_model`)."""
        return {"step_ms": self.step_ms, "batch_ms": list(self.batch_ms), "source": self.source,
                "prefill_ms": self.prefill_ms, "loop_ms": self.loop_ms}

    @classmethod
    def from_json(cls, obj: dict) -> "CostModel":
        """Inverse of :meth:`to_json` (a calibration written before ``loop_ms`` was measured
        gets :data:`LOOP_MS`); raises ``ValueError`` on bad content."""
        try:
            return cls(float(obj["step_ms"]), tuple(float(x) for x in obj["batch_ms"]),
                       str(obj.get("source", "measured")), float(obj.get("prefill_ms", 0.0)),
                       float(obj.get("loop_ms", LOOP_MS)))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"bad cost model: {exc}") from exc


def interpolate(points: dict[int, float], up_to: int = MAX_TOKENS) -> tuple[float, ...]:
    """Piecewise-linear curve over 1..up_to from sparse ``{tokens: ms}`` points."""
    xs = sorted(points)
    out = []
    for n in range(1, up_to + 1):
        if n <= xs[0]:
            out.append(points[xs[0]])
            continue
        if n >= xs[-1]:
            slope = (points[xs[-1]] - points[xs[-2]]) / (xs[-1] - xs[-2]) if len(xs) > 1 else 0.0
            out.append(points[xs[-1]] + slope * (n - xs[-1]))
            continue
        hi = next(x for x in xs if x >= n)
        lo = max(x for x in xs if x <= n)
        frac = 0.0 if hi == lo else (n - lo) / (hi - lo)
        out.append(points[lo] + frac * (points[hi] - points[lo]))
    return tuple(round(v, 3) for v in out)


#: the curve of a machine without its own calibration: Whisper base, int8, 2 threads
DEFAULT = CostModel(
    step_ms=11.8,
    batch_ms=interpolate({1: 10.7, 2: 13.1, 4: 14.6, 8: 15.4, 12: 16.8, 16: 19.1, 24: 26.0}),
    source="default (engine-notes: base, int8, 2 threads)",
    prefill_ms=45.0,
)

#: the same for a float32 decoder: a pass of 2-3 tokens costs about one step, longer ones grow
#: faster than at int8
DEFAULT_FLOAT32 = CostModel(
    step_ms=9.3,
    batch_ms=interpolate({1: 9.3, 2: 9.3, 5: 15.7, 9: 22.7, 13: 37.6, 17: 64.8}),
    source="default (engine-notes: base, float32, 2 threads)",
    prefill_ms=73.0,
)


def default_cost(compute_type: str) -> CostModel:
    """The built-in curve for a decoder at ``compute_type`` (float32's, else int8's)."""
    return DEFAULT_FLOAT32 if compute_type == "float32" else DEFAULT


def model_fingerprint(model_dir: Path) -> str:
    """Short id of a CTranslate2 model directory (config.json bytes + model.bin size)."""
    digest = hashlib.sha256()
    config = model_dir / "config.json"
    if config.is_file():
        digest.update(config.read_bytes())
    weights = model_dir / "model.bin"
    digest.update(str(weights.stat().st_size if weights.exists() else 0).encode())
    return digest.hexdigest()[:16]


def calibration_path(model_dir: Path, compute_type: str, threads: int) -> Path:
    """``$XDG_CACHE_HOME/tokenmap/calibration/<model>-<compute_type>-<threads>.json``, or the
    same file name in ``$TOKENMAP_CALIBRATION_DIR`` when that is set (the test suite sets it, so
    that no test depends on the curve measured on its machine)."""
    name = f"{model_fingerprint(Path(model_dir))}-{compute_type}-{threads}.json"
    folder = os.environ.get("TOKENMAP_CALIBRATION_DIR")
    if folder:
        return Path(folder) / name
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "tokenmap" / "calibration" / name


def save_cost_model(cost: CostModel, path: Path, meta: dict | None = None) -> Path:
    """Write ``cost`` (plus ``meta``) as JSON, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = dict(cost.to_json(), **(meta or {}))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def load_cost_model(model_dir: Path | None, compute_type: str = "int8", threads: int = 2) -> CostModel:
    """The calibrated curve (:meth:`CostModel.smoothed`) for this model, compute type and threads,
    else :func:`default_cost`."""
    if model_dir is not None:
        path = calibration_path(Path(model_dir), compute_type, threads)
        if path.is_file():
            try:
                cost = CostModel.from_json(json.loads(path.read_text(encoding="utf-8")))
                log.info("cost model: calibration %s", path)
                return replace(cost, source=f"calibrated ({path.name})").smoothed()
            except (ValueError, OSError) as exc:
                log.warning("ignoring bad calibration %s: %s", path, exc)
    fallback = default_cost(compute_type)
    log.info("cost model: %s (run `tokenmap calibrate --compute-type %s` to measure this machine)",
             fallback.source, compute_type)
    return fallback


def calibration_prompt(model_dir: Path, special: SpecialTokens, multilingual: bool) -> list[int]:
    """``<|startoftranscript|><|en|><|transcribe|>`` in this model's own ids (large-v3's
    ``<|yue|>`` moves ``<|transcribe|>`` up by one), or ``<|startoftranscript|>`` alone."""
    if not multilingual:
        return [special.sot]
    txt = model_dir / "vocabulary.txt"
    vocab = (txt.read_text(encoding="utf-8").split("\n") if txt.is_file()
             else json.loads((model_dir / "vocabulary.json").read_text(encoding="utf-8")))
    index = {tok: i for i, tok in enumerate(vocab)}
    return [special.sot, index.get("<|en|>", special.sot + 1),
            index.get("<|transcribe|>", special.no_timestamps - 4)]


class _PassProbe:
    """The model on CPU with 30 s of low noise encoded and a 4-token prompt prefilled: :meth:`time` runs
    the prefill (``n = -1``), a step (``0``) or a pass of ``n`` tokens on the decoding loop's path and
    restores the state's length."""

    def __init__(self, model_dir: Path, compute_type: str, threads: int):
        import ctranslate2
        from faster_whisper.feature_extractor import FeatureExtractor

        model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type=compute_type,
                                           intra_threads=threads)
        if not hasattr(model, "forward_batch_greedy"):
            raise RuntimeError("this CTranslate2 has no decoder-step API: "
                               "pip install --force-reinstall --no-deps ctranslate2-crisperwhisper")
        special = SpecialTokens.from_model_dir(str(model_dir))
        audio = np.random.default_rng(0).normal(0, 1e-3, 16000 * 30).astype(np.float32)
        features = FeatureExtractor(feature_size=model.n_mels)(audio)[:, :3000]
        self.model = model
        self.encoded = model.encode(ctranslate2.StorageView.from_array(features[None].astype(np.float32)))
        self.prompt = calibration_prompt(Path(model_dir), special, model.is_multilingual)
        self.rules = RuleSet.from_generate_kwargs(special, self.prompt)
        self.state, _ = model.prefill(self.encoded, self.prompt)
        self.base = self.state.current_step
        self.tok = 220  # " " : a plain text token
        self.context = [special.timestamp_begin, self.tok]
        self.python: list[float] = []  # ms of each step spent after the engine returned

    def time(self, n: int) -> float:
        """Milliseconds of the prefill (``n = -1``: what the decoding loop prefills, up to
        <|startoftranscript|>), a step (``0``) or a pass of ``n`` tokens with the rules on every row."""
        t0 = time.perf_counter()
        if n == -1:
            self.model.prefill(self.encoded, self.prompt[:1])
        elif n == 0:
            logits = self.model.forward_step(self.state, self.tok)
            t1 = time.perf_counter()
            self.rules.choose_rows(np.asarray(logits).reshape(1, -1), self.context, ())
            self.python.append((time.perf_counter() - t1) * 1000.0)
        else:
            rows = np.asarray(self.model.forward_batch(self.state, [self.tok] * n))[0]
            self.rules.choose_rows(rows, self.context, [self.tok] * (n - 1), every_row=True)
        if n >= 0:
            self.state.truncate_to_step(self.base)
        return (time.perf_counter() - t0) * 1000.0


def calibrate(model_dir: Path, compute_type: str = "int8", threads: int = 2, max_tokens: int = MAX_TOKENS,
              reps: int = 5, progress=None) -> CostModel:
    """Measure a verify pass as the decoder pays for it, for 1..max_tokens tokens.

    Loads the model on CPU, encodes 30 s of low noise, prefills a 4-token
    prompt, then times the prefill of a window and each pass on the real path: ``forward_step`` or
    ``forward_batch``, the logits as numpy and Whisper's logit rules on every
    row (:meth:`tokenmap.decode.rules.RuleSet.choose_rows`; the decoding loop
    decides only the rows up to the first rejected draft token, so this is the
    cost of a pass whose whole draft is accepted), with ``truncate_to_step``
    restoring the state length between calls (median of ``reps`` after a
    warm-up; every round times each length once, so load on a shared machine
    shifts the whole curve rather than bending it).  ``loop_ms`` is the part
    of that step spent after the engine returned (the logits as numpy and the
    rules), timed directly: ``generate`` takes the argmax in the engine instead.
    (Timed directly rather than as the step less a ``forward_step_greedy``:
    the difference of two timed engine steps is too noisy on a shared machine,
    and the window gate weighs every step with it.)
    ``progress(1)`` is called after each round.
    """
    probe = _PassProbe(model_dir, compute_type, threads)
    for _ in range(3):
        probe.time(0)
        probe.time(8)
    probe.python.clear()
    # 0: the step, -1: prefill
    samples: dict[int, list[float]] = {n: [] for n in range(-1, max_tokens + 1)}
    for _ in range(reps):  # every length once per round: a busy spell hits all lengths alike
        for n in range(-1, max_tokens + 1):
            samples[n].append(probe.time(n))
        if progress:
            progress(1)
    curve = tuple(round(statistics.median(samples[n]), 3) for n in range(1, max_tokens + 1))
    step_ms = round(statistics.median(samples[0]), 3)
    loop_ms = round(statistics.median(probe.python), 3)
    return CostModel(step_ms, curve, "measured", round(statistics.median(samples[-1]), 3), loop_ms)
