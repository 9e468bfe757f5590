"""``tokenmap calibrate``: the verify-pass cost curve measured on this machine's engines, as a
:class:`tokenmap.decode.cost.CostModel`."""

from __future__ import annotations

import logging
import statistics
import time
from pathlib import Path

import numpy as np

from tokenmap.decode.cost import MAX_TOKENS, CostModel
from tokenmap.decode.rules import RuleSet
from tokenmap.decode.special import SpecialTokens
from tokenmap.runtime.stock_worker import StockWorker, StockWorkerError, stock_installed

log = logging.getLogger("tokenmap")


def calibration_prompt(special: SpecialTokens, multilingual: bool) -> list[int]:
    """``<|startoftranscript|><|en|><|transcribe|>`` in this model's own ids (every Whisper vocabulary
    ends its task tokens ``<|transcribe|>``, ``<|startoflm|>``, ``<|startofprev|>``, ``<|nospeech|>``,
    ``<|notimestamps|>``), or ``<|startoftranscript|>`` alone."""
    if not multilingual:
        return [special.sot]
    return [special.sot, dict((code, i) for i, code in special.languages).get("en", special.sot + 1),
            special.no_timestamps - 4]


class _PassProbe:
    """The model on CPU with 30 s of low noise encoded and a short prompt prefilled, to :meth:`time`."""

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
        self.prompt = calibration_prompt(special, model.is_multilingual)
        self.eot = special.eot
        self.rules = RuleSet.from_generate_kwargs(special, self.prompt)
        self.state, _ = model.prefill(self.encoded, self.prompt)
        self.base = self.state.current_step
        self.tok = 220  # " " : a plain text token
        self.context = [special.timestamp_begin, self.tok]
        self.python: list[float] = []  # ms of each step spent after the engine returned

    def time(self, n: int) -> float:
        """Milliseconds of the prefill (``n = -1``: up to <|startoftranscript|>, as the loop does), a step
        (``0``) or a pass of ``n`` tokens with the rules on every row; the state's length is restored."""
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
    """Measure a verify pass as the decoder pays for it, for 1..max_tokens tokens, and plain ``generate``
    (:func:`time_plain_generate`).

    Times the prefill of a window and each pass on the real path (the engine call, the logits as numpy and
    the rules on every row: a pass whose whole draft is accepted), the median of ``reps`` after a warm-up;
    every round times each length once, so load on a shared machine shifts the whole curve rather than
    bending it. ``loop_ms`` is the part of a step spent after the engine returned, timed directly.
    ``progress(1)`` is called after each round.
    """
    probe = _PassProbe(model_dir, compute_type, threads)
    plain = time_plain_generate(model_dir, compute_type, threads, probe, reps)
    for _ in range(3):
        probe.time(0)
        probe.time(8)
    probe.python.clear()
    samples: dict[int, list[float]] = {n: [] for n in range(-1, max_tokens + 1)}
    for _ in range(reps):  # every length once per round: a busy spell hits all lengths alike
        for n in range(-1, max_tokens + 1):
            samples[n].append(probe.time(n))
        if progress:
            progress(1)
    curve = tuple(round(statistics.median(samples[n]), 3) for n in range(1, max_tokens + 1))
    step_ms = round(statistics.median(samples[0]), 3)
    loop_ms = round(statistics.median(probe.python), 3)
    return CostModel(step_ms, curve, "measured", round(statistics.median(samples[-1]), 3), loop_ms, *plain)


def time_plain_generate(model_dir: Path, compute_type: str, threads: int, probe: "_PassProbe",
                        reps: int = 5, lengths: tuple[int, int] = (4, 36)) -> tuple[float, float]:
    """``(ms a token, ms of the prompt)`` of plain ``generate`` on the engine that decodes the windows
    without drafts (stock CTranslate2 in its worker where installed, else the fork); ``(0, 0)`` when it fails.

    Times ``generate`` at two ``max_length`` with end of text suppressed: a token costs the time difference
    over the tokens it added, the prompt what the shorter call took beyond its tokens.
    """
    worker = None
    generate = probe.model.generate
    if stock_installed():
        try:
            worker = StockWorker(model_dir, compute_type, threads)
            worker.wait_ready()
            generate = worker.generate
        except (StockWorkerError, OSError) as exc:
            log.warning("plain generate timed on the fork: the stock worker did not start (%s)", exc)
    encoded = np.asarray(probe.encoded) if worker is not None else probe.encoded
    options = dict(beam_size=1, suppress_blank=False, suppress_tokens=[-1, probe.eot])
    times: dict[int, list[float]] = {n: [] for n in lengths}
    counts: dict[int, int] = {}
    try:
        for rep in range(reps + 1):  # the first round warms up
            for n in lengths:
                started = time.perf_counter()
                out = generate(encoded, [probe.prompt], max_length=n, **options)
                if rep:
                    times[n].append((time.perf_counter() - started) * 1000.0)
                counts[n] = len(out[0].sequences_ids[0])
    except (StockWorkerError, RuntimeError, ValueError) as exc:
        log.warning("plain generate not timed: %s", exc)
        return 0.0, 0.0
    finally:
        if worker is not None:
            worker.close()
    short, long = (statistics.median(times[n]) for n in lengths)
    per_token = (long - short) / max(1, counts[lengths[1]] - counts[lengths[0]])
    return round(per_token, 3), round(max(0.0, short - counts[lengths[0]] * per_token), 3)
