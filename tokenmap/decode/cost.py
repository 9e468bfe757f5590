"""What a verify pass costs, and whether a draft pays for it.

The decoder verifies one draft of ``L`` tokens by feeding ``L + 1`` tokens (the last accepted token plus the
draft) in one ``forward_batch`` call, which replaces the ``forward_step`` it would have run anyway. A draft
whose expected number of accepted tokens is ``E`` therefore saves::

    saving(L) = E * step_ms - (batch_ms(L + 1) - step_ms)        # milliseconds

:class:`CostModel` holds the curve ``tokenmap calibrate`` measured on this machine (the *calibration*);
:func:`load_cost_model` falls back to :data:`DEFAULT`. A window without drafts is decoded by plain
``generate`` (on stock CTranslate2 where its worker runs), which the calibration times too; a window
decoded speculatively saves :meth:`CostModel.window_saving` against it.

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
from dataclasses import dataclass, replace
from pathlib import Path

from tokenmap.runtime.nativelib import row_math_status

log = logging.getLogger("tokenmap")

MAX_TOKENS = 32
#: the decoding loop's Python a step beyond a token of ``generate`` (the logits as numpy, the rules),
#: for a curve that does not give its own (Whisper base, 2 threads)
LOOP_MS = 0.7


@dataclass(frozen=True)
class CostModel:
    """Verify-pass costs in milliseconds: ``step_ms`` is one ``forward_step``; ``batch_ms[i]`` is one
    ``forward_batch`` of ``i + 1`` tokens; ``prefill_ms`` is the window's ``prefill`` (0 when unknown);
    ``loop_ms`` is what a step of the decoding loop costs beyond a token of plain ``generate`` (the Python
    around the engine call); ``plain_step_ms`` and ``plain_prefill_ms``: a token, and the prompt, of plain
    ``generate`` on the engine that decodes the windows without drafts (0 when not measured).
    """

    step_ms: float
    batch_ms: tuple[float, ...]
    source: str = "measured"
    prefill_ms: float = 0.0
    loop_ms: float = LOOP_MS
    plain_step_ms: float = 0.0
    plain_prefill_ms: float = 0.0

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

    @property
    def plain_token_ms(self) -> float:
        """ms of a token of plain ``generate``: measured, else the fork's step less the loop's own part.
        A measured token is counted no dearer than the fork's step (the same kernels; a dearer timing is
        noise, and would let windows whose drafts save nothing through the window gate).

        >>> [CostModel(10.0, (10.0,), plain_step_ms=ms).plain_token_ms for ms in (12.0, 9.0)]
        [10.0, 9.0]
        """
        return min(self.plain_step_ms, self.step_ms) if self.plain_step_ms > 0 else self.step_ms - self.loop_ms

    def plain_window_ms(self, tokens: int) -> float:
        """ms plain ``generate`` is expected to take for a window of ``tokens`` (EOT included): its prompt
        (measured, else the loop's prefill) and a token each.

        >>> CostModel(10.0, (10.0,), prefill_ms=50.0, plain_step_ms=8.0).plain_window_ms(10)
        130.0
        """
        prompt = self.plain_prefill_ms if self.plain_prefill_ms > 0 else self.prefill_ms
        return prompt + tokens * self.plain_token_ms

    def window_saving(self, tokens: int, passes: int, drafts: int, drafted: int) -> float:
        """ms a window decoded by the loop saved against plain ``generate`` (may be < 0): ``generate`` pays
        :attr:`plain_token_ms` a token; the loop a step for each pass without a draft and, for the passes
        with one, a pass of one token plus the drafts' mean length. Both pay the window's prompt once,
        taken as equal. A window of 20 tokens in 20 passes, 2 of them with a rejected 1-token draft, loses:

        >>> m = CostModel(10.0, (10.0, 12.0, 13.0), loop_ms=0.5)
        >>> m.window_saving(tokens=20, passes=20, drafts=2, drafted=2)
        -14.0
        >>> m.window_saving(tokens=20, passes=6, drafts=6, drafted=18)  # drafts of 3, mostly kept
        103.0

        Where stock's ``generate`` was timed at 8 ms a token, the same drafts save less:

        >>> replace(m, plain_step_ms=8.0).window_saving(20, 6, 6, 18)
        73.0
        """
        plain = tokens * self.plain_token_ms
        spent = (passes - drafts) * self.step_ms
        if drafts:
            spent += drafts * self.batch(round(1 + drafted / drafts))
        return plain - spent

    def smoothed(self) -> "CostModel":
        """The same model with ``batch_ms`` made non-decreasing in the number of tokens: a curve timed on a
        busy machine zigzags, and a draft cut at such a dip is too long. Adjacent violators are pooled into
        their mean (isotonic least squares), which keeps real plateaus.

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
                "prefill_ms": self.prefill_ms, "loop_ms": self.loop_ms, "plain_step_ms": self.plain_step_ms,
                "plain_prefill_ms": self.plain_prefill_ms}

    @classmethod
    def from_json(cls, obj: dict) -> "CostModel":
        """Inverse of :meth:`to_json` (missing optional fields take their defaults)."""
        try:
            return cls(float(obj["step_ms"]), tuple(float(x) for x in obj["batch_ms"]),
                       str(obj.get("source", "measured")), float(obj.get("prefill_ms", 0.0)),
                       float(obj.get("loop_ms", LOOP_MS)), float(obj.get("plain_step_ms", 0.0)),
                       float(obj.get("plain_prefill_ms", 0.0)))
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
    same file name in ``$TOKENMAP_CALIBRATION_DIR`` when that is set."""
    name = f"{model_fingerprint(Path(model_dir))}-{compute_type}-{threads}.json"
    folder = os.environ.get("TOKENMAP_CALIBRATION_DIR")
    if folder:
        return Path(folder) / name
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "tokenmap" / "calibration" / name


def save_cost_model(cost: CostModel, path: Path, meta: dict | None = None) -> Path:
    """Write ``cost`` (plus ``meta``) as JSON, atomically."""
    return write_json(path, dict(cost.to_json(), **(meta or {})))


def write_json(path: Path, data: dict) -> Path:
    """Write ``data`` to ``path`` as indented JSON, atomically (a temporary file beside it, renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def load_cost_model(model_dir: Path | None, compute_type: str = "int8", threads: int = 2) -> CostModel:
    """The calibrated curve (:meth:`CostModel.smoothed`) for this model, compute type and threads,
    else the built-in one for ``compute_type`` (float32's, else int8's)."""
    if model_dir is not None:
        path = calibration_path(Path(model_dir), compute_type, threads)
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                cost = CostModel.from_json(data)
                log.info("cost model: calibration %s", path)
                _check_row_math(data, path)
                return replace(cost, source=f"calibrated ({path.name})").smoothed()
            except (ValueError, OSError) as exc:
                log.warning("ignoring bad calibration %s: %s", path, exc)
    fallback = DEFAULT_FLOAT32 if compute_type == "float32" else DEFAULT
    log.info("cost model: %s (run `tokenmap calibrate --compute-type %s` to measure this machine)",
             fallback.source, compute_type)
    return fallback


def _check_row_math(data: dict, path: Path) -> None:
    """Warn when the calibration timed the loop's rules on another implementation than this process runs
    (none recorded: numpy)."""
    measured, now = ("on" if data.get("row_math") == "on" else "off"), ("on" if row_math_status() == "on" else "off")
    if measured != now:
        log.warning("calibration %s timed the loop's row math %s, this process runs it %s: "
                    "run `tokenmap calibrate` again", path.name,
                    "in C" if measured == "on" else "in numpy", "in C" if now == "on" else "in numpy")
