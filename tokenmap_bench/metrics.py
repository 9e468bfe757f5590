"""Benchmark metrics: pure functions over plain numbers and strings.

Definitions (token-map paper, eqs. 3-5; disparate-impacts paper, Definition 1):

* decoder speed-up ``S = T_greedy / T_system`` on *summed* decoder times of a
  group (eq. 3), so long utterances weigh by their decoding work;
* acceptance rate ``A_r = accepted / drafted`` (eq. 4);
* acceptance length ``A_l = accepted / drafts``: accepted draft tokens per
  verify pass that carried a draft (eq. 5, N_sequences = drafts verified);
* real-time factor ``RTF = processing seconds / audio seconds``;
* oracle fraction ``F = (T_greedy - T_map) / (T_greedy - T_oracle)``: the
  share of the time a perfect drafter saves that the map saves (time-based,
  additive over utterances; 1 = as good as the oracle, 0 = no gain, < 0 slower);
* unfairness ``U = 1/m * sum_T (D_T - D_min)^2`` over tasks T (Definition 1)
  with the misfit ``D_T = 1 - A_r(T)`` (see :func:`misfit`);
* WER after :func:`normalize_text` (jiwer's word alignment).

Example::

    >>> speedup(2.0, 1.6)
    1.25
    >>> normalize_text("Pressure 1,604 RPM, OK.")
    'pressure 1604 rpm ok'
    >>> unfairness({"a": 0.1, "b": 0.3})
    0.02
    >>> spearman([1.0, 2.0, 3.0], [3.0, 2.5, 1.0])
    -1.0
"""

from __future__ import annotations

import math
import random
import re
import statistics
import unicodedata
from collections import defaultdict
from typing import Callable, Iterable, Mapping, Sequence


def speedup(t_baseline: float, t_system: float) -> float:
    """``T_baseline / T_system`` (eq. 3); NaN when either time is missing or zero."""
    if not t_baseline or not t_system or t_baseline <= 0 or t_system <= 0:
        return math.nan
    return t_baseline / t_system


def acceptance_rate(accepted: int, drafted: int) -> float:
    """``A_r``: accepted draft tokens over drafted tokens (eq. 4); NaN without drafts."""
    return accepted / drafted if drafted else math.nan


def acceptance_length(accepted: int, drafts: int) -> float:
    """``A_l``: accepted draft tokens per verified draft (eq. 5); NaN without drafts."""
    return accepted / drafts if drafts else math.nan


def rtf(seconds: float, audio_seconds: float) -> float:
    """Real-time factor: processing time over audio duration (< 1 is faster than real time)."""
    return seconds / audio_seconds if audio_seconds > 0 else math.nan


def oracle_fraction(t_greedy: float, t_map: float, t_oracle: float) -> float:
    """``(T_greedy - T_map) / (T_greedy - T_oracle)``; NaN when the oracle saves nothing."""
    saved = t_greedy - t_oracle
    return (t_greedy - t_map) / saved if saved > 0 else math.nan


def median(values: Iterable[float]) -> float:
    """Median of the finite values, NaN if none."""
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(vals) if vals else math.nan


# -- text ----------------------------------------------------------------
_DIGIT_SEP = re.compile(r"(?<=\d)[,\u202f\u00a0'](?=\d{3}\b)")  # 1,604 / 1 604 -> 1604
_DECIMAL = re.compile(r"(?<=\d)[.,](?=\d)")  # 12.3 / 12,3 -> 12.3 (kept as one word)
_WORDLIKE = set("%‰&@#")  # punctuation characters that are spoken: kept as words


def normalize_text(text: str) -> str:
    """The WER normaliser (small and language-neutral, applied to both sides).

    NFKC; lowercase; thousands separators between digits removed ("1,604" ->
    "1604"); a decimal comma becomes a point ("12,3" -> "12.3"); other
    punctuation (Unicode category P*) is dropped, apostrophes included
    ("party's" -> "partys", "d'accès" -> "daccès"); symbols (S*: "°", "€")
    and the spoken signs ``% ‰ & @ #`` become words of their own ("93%" ->
    "93 %"); whitespace collapsed.
    It does not spell numbers or unify spellings (no English-only rules), so
    "three" vs "3" counts as an error: WER here is against the written
    references, compare systems with each other, not with published WERs.
    """
    text = unicodedata.normalize("NFKC", text).lower()
    text = _DIGIT_SEP.sub("", text)
    text = _DECIMAL.sub(".", text)
    out = []
    for i, ch in enumerate(text):
        cat = unicodedata.category(ch)
        if ch == "." and 0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit():
            out.append(ch)
        elif cat.startswith("S") or ch in _WORDLIKE:
            out.append(f" {ch} ")
        elif cat.startswith("P"):
            out.append("" if ch in "'’" else " ")
        else:
            out.append(ch)
    return " ".join("".join(out).split())


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """``(edits, reference words)`` after :func:`normalize_text` (jiwer alignment)."""
    ref, hyp = normalize_text(reference), normalize_text(hypothesis)
    n_ref = len(ref.split())
    if not n_ref:
        return len(hyp.split()), 0
    if not hyp:
        return n_ref, n_ref
    import jiwer

    out = jiwer.process_words(ref, hyp)
    return out.substitutions + out.deletions + out.insertions, n_ref


def looped(text: str, threshold: float = 2.4) -> bool:
    """Whether a transcript loops: its text's compression ratio is above faster-whisper's threshold.

    >>> looped("Thank you. " * 30), looped("Please enter your password followed by the pound key.")
    (True, False)
    """
    from tokenmap.decode.loops import compression_ratio

    return compression_ratio(text.strip()) > threshold


def wer(pairs: Iterable[tuple[str, str]]) -> float:
    """Corpus WER of ``(reference, hypothesis)`` pairs: summed edits over summed words."""
    edits = words = 0
    for ref, hyp in pairs:
        e, n = word_errors(ref, hyp)
        edits, words = edits + e, words + n
    return edits / words if words else math.nan


def identity_rate(outputs: Sequence[Sequence[int]], references: Sequence[Sequence[int]]) -> float:
    """Share of outputs token-identical to their reference (the greedy tokens)."""
    if len(outputs) != len(references):
        raise ValueError("outputs and references differ in length")
    if not outputs:
        return math.nan
    return sum(list(a) == list(b) for a, b in zip(outputs, references)) / len(outputs)


# -- fairness ---------------------------------------------------------------
def misfit(acceptance: float) -> float:
    """``D_T = 1 - A_r``: the drafter/verifier misfit this benchmark uses.

    The map drafter is deterministic (q is a point mass) and the verifier is
    greedy (p is a point mass), so the cross-entropy ``-sum p log q`` is
    infinite whenever they disagree and gives no usable estimate. For two
    point masses ``TV(p, q) = 1[draft != greedy]``, and the paper's per-prefix
    acceptance is ``alpha = 1 - TV``; so ``1 - A_r`` is the expected total
    variation, the quantity Theorem 1's chain bounds the speed-up with
    (``S_T`` is increasing in ``alpha_T``). It is measured, not modelled.
    """
    return 1.0 - acceptance


def unfairness(divergence: Mapping[str, float]) -> float:
    """Definition 1: ``U = 1/m sum_T (D_T - min_T D_T)^2`` over the finite ``D_T``."""
    vals = [v for v in divergence.values() if v is not None and not math.isnan(v)]
    if not vals:
        return math.nan
    low = min(vals)
    return round(sum((v - low) ** 2 for v in vals) / len(vals), 12)


def spread(values: Mapping[str, float]) -> dict:
    """min / max / mean / population std of the finite values, with the argmin/argmax keys."""
    items = {k: v for k, v in values.items() if v is not None and not math.isnan(v)}
    if not items:
        return {"n": 0, "min": math.nan, "max": math.nan, "mean": math.nan, "std": math.nan}
    vals = list(items.values())
    return {"n": len(vals), "min": min(vals), "max": max(vals), "mean": statistics.fmean(vals),
            "std": statistics.pstdev(vals), "argmin": min(items, key=items.get),
            "argmax": max(items, key=items.get)}


# -- intervals --------------------------------------------------------------
#: bootstrap resamples and the interval's coverage
BOOTSTRAP_REPS = 2000
LEVEL = 0.95


def bootstrap_interval(statistic: Callable[[list], float], units: Sequence, reps: int = BOOTSTRAP_REPS,
                       seed: int = 0) -> tuple[float, float]:
    """The percentile interval (:data:`LEVEL`) of ``statistic`` over ``reps`` resamples of ``units``
    with replacement (a fixed seed, so a report is reproducible); (nan, nan) without units.

    >>> bootstrap_interval(lambda xs: sum(xs) / len(xs), [1.0, 1.0, 1.0])
    (1.0, 1.0)
    """
    if not units:
        return (math.nan, math.nan)
    rng = random.Random(seed)
    n = len(units)
    return _percentiles([statistic([units[rng.randrange(n)] for _ in range(n)]) for _ in range(reps)])


def _percentiles(values: list[float]) -> tuple[float, float]:
    """The :data:`LEVEL` percentile interval of the finite ``values``; (nan, nan) without any."""
    values = sorted(v for v in values if not math.isnan(v))
    if not values:
        return (math.nan, math.nan)
    tail = (1.0 - LEVEL) / 2
    return (values[int(tail * (len(values) - 1))], values[int(round((1 - tail) * (len(values) - 1)))])


def speedup_interval(pairs: Sequence[tuple[float, float]], seed: int = 0) -> tuple[float, float]:
    """Paired bootstrap interval of ``S`` over utterances: ``pairs`` of (baseline time, system time)."""
    return bootstrap_interval(lambda xs: speedup(sum(b for b, _ in xs), sum(t for _, t in xs)), list(pairs),
                              seed=seed)


def unfairness_interval(counts: Mapping[str, Sequence[tuple[int, int]]], seed: int = 0) -> tuple[float, float]:
    """Bootstrap interval of ``U`` (:func:`unfairness` of ``D_T = 1 - A_r(T)``): ``counts`` maps each task
    to its utterances' (drafted, accepted); every resample draws each task's utterances anew."""
    tasks = {t: list(c) for t, c in counts.items() if c}
    if not tasks:
        return (math.nan, math.nan)
    rng = random.Random(seed)
    values = []
    for _ in range(BOOTSTRAP_REPS):
        d = {}
        for t, c in tasks.items():
            draw = [c[rng.randrange(len(c))] for _ in c]
            drafted = sum(x for x, _ in draw)
            d[t] = misfit(sum(a for _, a in draw) / drafted) if drafted else math.nan
        values.append(unfairness(d))
    return _percentiles(values)


# -- grouping ---------------------------------------------------------------
def group_rows(rows: Iterable[Mapping], key: Callable[[Mapping], object]) -> dict:
    """``{key(row): [rows]}`` preserving first-seen order."""
    groups: dict = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    return dict(groups)


def summarize(rows: Sequence[Mapping], baseline: Mapping[str, float] | None = None) -> dict:
    """Aggregate per-utterance rows of ONE system.

    Each row holds ``id``, ``decoder_s`` (median over repetitions),
    ``audio_s`` and optionally ``tokens``, ``drafted``, ``accepted``,
    ``drafts``, ``identical`` (bool), ``ref``/``text``. ``baseline`` maps
    utterance id to the baseline's decoder time; only ids present in both
    count towards ``S``.
    """
    n = len(rows)
    total = sum(r["decoder_s"] for r in rows)
    audio = sum(r.get("audio_s", 0.0) for r in rows)
    drafted = sum(r.get("drafted", 0) for r in rows)
    accepted = sum(r.get("accepted", 0) for r in rows)
    drafts = sum(r.get("drafts", 0) for r in rows)
    out = {"n": n, "decoder_s": total, "audio_s": audio, "rtf": rtf(total, audio),
           "A_r": acceptance_rate(accepted, drafted), "A_l": acceptance_length(accepted, drafts),
           "drafted": drafted, "accepted": accepted, "drafts": drafts,
           "tokens": sum(r.get("tokens", 0) for r in rows)}
    passes = [r for r in rows if r.get("passes")]
    # decided tokens (EOT included) per decoder pass after the prefill
    out["tokens_per_pass"] = (sum(r["tokens"] + 1 for r in passes) / sum(r["passes"] - 1 for r in passes)
                              if passes and sum(r["passes"] - 1 for r in passes) > 0 else math.nan)
    if baseline is not None:
        both = [r for r in rows if r["id"] in baseline]
        out["S"] = speedup(sum(baseline[r["id"]] for r in both), sum(r["decoder_s"] for r in both))
    ident = [r["identical"] for r in rows if r.get("identical") is not None]
    out["identity"] = sum(ident) / len(ident) if ident else math.nan
    pairs = [(r["ref"], r["text"]) for r in rows if r.get("ref")]
    out["wer"] = wer(pairs) if pairs else math.nan
    out["loops"] = sum(bool(r.get("loops")) for r in rows)  # transcripts that loop (compression ratio > 2.4)
    out["loops_stopped"] = sum(r.get("loops_stopped", 0) for r in rows)  # decodes the loop stop cut short
    out["short_windows"] = sum(r.get("short_windows", 0) for r in rows)
    out["guarded"] = sum(r.get("guarded", 0) for r in rows)
    return out


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties get the mean of their positions."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (Pearson on tie-averaged ranks); NaN for < 2 points or constant input."""
    pairs = [(a, b) for a, b in zip(x, y) if not (math.isnan(a) or math.isnan(b))]
    if len(pairs) < 2:
        return math.nan
    rx, ry = ranks([a for a, _ in pairs]), ranks([b for _, b in pairs])
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    return cov / math.sqrt(vx * vy) if vx and vy else math.nan
