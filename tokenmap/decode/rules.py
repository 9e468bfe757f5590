"""Whisper greedy-decoding logit rules, reproducing CTranslate2 ``Whisper.generate``.

This mirrors what CTranslate2 4.7.1 (``src/models/whisper.cc``, ``src/decoding.cc``, ``src/decoding_utils.cc``) does
for ``beam_size=1``, so that a step-wise or speculative decoder takes exactly ``generate``'s decisions.

Conventions
-----------
* ``logits``: ``np.ndarray`` of shape ``[V]`` (one position), dtype float32, raw decoder output (natural-log
  units, unnormalised). Rules modify it in place.
* ``tokens``: the ids generated so far in this window, *excluding* the prompt; ``len(tokens)`` is the 0-based
  decoding step of the position being decided.
* Disabled tokens get ``-FLT_MAX`` (``np.finfo(np.float32).min``), as CT2 does on CPU (not ``-inf``), so
  log-sum-exp over an all-disabled range stays finite.

Order per step (as in CT2): SuppressTokens, SuppressBlank (first step only), TimestampRules (unless the
prompt's last task token is ``<|notimestamps|>``), then log_softmax (float32) and argmax (first index on ties).

:func:`greedy_decode`, the step-wise reference, equals ``generate(beam_size=1, ...)`` at float32: the baseline
of every speculative path.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from tokenmap.decode import ct2math
from tokenmap.decode.ct2math import (
    TIE_TOLERANCE,
    argmax_of_log_softmax,
    log_softmax,
    log_softmax_shift_rows,
    logsumexp,
    softmax,
)
from tokenmap.decode.special import SpecialTokens
from tokenmap.runtime import nativelib

logger = logging.getLogger("tokenmap")

DISABLED = np.float32(np.finfo(np.float32).min)


@functools.lru_cache(maxsize=64)
def _index_array(ids: tuple) -> np.ndarray:
    return np.asarray(ids, dtype=np.int64)


@dataclass(frozen=True)
class SuppressTokens:
    """Disable fixed ids at every step (``suppress_tokens``, -1 already expanded)."""

    ids: tuple

    def apply(self, logits: np.ndarray, tokens: Sequence[int]) -> None:
        logits[_index_array(self.ids)] = DISABLED


@dataclass(frozen=True)
class SuppressBlank:
    """Disable ``suppress_ids_begin`` (blank " " and EOT) at the first generated step."""

    ids: tuple

    def apply(self, logits: np.ndarray, tokens: Sequence[int]) -> None:
        if len(tokens) == 0:
            logits[_index_array(self.ids)] = DISABLED


@dataclass(frozen=True)
class TimestampRules:
    """CT2 ``ApplyTimestampRules``; ids are absolute, ranges inclusive."""

    eot: int
    no_timestamps: int
    timestamp_begin: int
    timestamp_end: int
    max_initial_timestamp_id: int

    def apply(self, logits: np.ndarray, tokens: Sequence[int]):
        """Mask, then force a timestamp if likely; returns the log-probs of ``logits`` when it computed them
        and left them unchanged, else None."""
        if not self.mask(logits, tokens):
            return None
        logprobs = log_softmax(logits)
        if self._likely_on(logprobs):
            logits[: self.timestamp_begin] = DISABLED
            return None
        return logprobs

    def mask(self, logits: np.ndarray, tokens: Sequence[int]) -> bool:
        """Disable what the timestamp rules forbid after ``tokens``; True when the
        "force a timestamp if likely" check applies next (it needs the log-probs)."""
        ts0 = self.timestamp_begin
        logits[self.no_timestamps] = DISABLED
        if len(tokens) == 0:
            logits[:ts0] = DISABLED  # the first token must be a timestamp
            logits[self.max_initial_timestamp_id + 1 : self.timestamp_end + 1] = DISABLED
            return False
        last = tokens[-1]
        if last >= ts0:
            penultimate = tokens[-2] if len(tokens) >= 2 else last
            if penultimate >= ts0:  # a closed pair: next must be text (or EOT)
                logits[ts0 : self.timestamp_end + 1] = DISABLED
                return False
            logits[: self.eot] = DISABLED  # after an opening timestamp: no text
            logits[ts0:last] = DISABLED  # ... and not an earlier timestamp
        else:
            for token in reversed(tokens):  # timestamps strictly increase
                if token >= ts0:
                    logits[ts0 : token + 1] = DISABLED
                    break
        return True

    def likely(self, logits: np.ndarray) -> bool:
        """True if the timestamps' total probability beats the best text token's. Both sides carry the same
        log-softmax shift, so the comparison is made on the logits; only within rounding distance
        (:data:`TIE_TOLERANCE`, relative) are the float32 log-probs computed, to decide exactly as CT2 does.
        """
        ts0 = self.timestamp_begin
        text = float(logits[:ts0].max())
        stamps = logits[ts0: self.timestamp_end + 1].astype(np.float64)
        top = stamps.max()
        mass = top + np.log(np.exp(stamps - top).sum())
        if abs(mass - text) > TIE_TOLERANCE * (1.0 + abs(mass) + abs(text)):
            return bool(mass > text)
        return self._likely_on(log_softmax(logits))

    def _likely_on(self, logprobs: np.ndarray) -> bool:
        """CT2's comparison on float32 log-probs: the timestamps' log-sum-exp against the best text token."""
        ts0 = self.timestamp_begin
        return bool(logsumexp(logprobs[ts0: self.timestamp_end + 1]) > logprobs[:ts0].max())


_UNSUPPORTED_DEFAULTS = {
    "num_hypotheses": 1,
    "repetition_penalty": 1,
    "no_repeat_ngram_size": 0,
    "return_logits_vocab": False,
    "asynchronous": False,
}


def supports_fast_path(
    prompt: Optional[Sequence[int]] = None,
    special: Optional[SpecialTokens] = None,
    **generate_kwargs,
) -> bool:
    """True if ``Whisper.generate(**generate_kwargs)`` is plain greedy search that :class:`RuleSet`
    reproduces: beam_size 1 (generate's default is 5), no sampling, the options of
    ``_UNSUPPORTED_DEFAULTS`` at their defaults, and no decoding prefix after the task tokens."""
    reasons = []
    if generate_kwargs.get("beam_size", 5) != 1:
        reasons.append("beam_size != 1")
    topk = generate_kwargs.get("sampling_topk", 1)
    if topk != 1 and generate_kwargs.get("sampling_temperature", 1) != 0:
        reasons.append("sampling")
    for key, default in _UNSUPPORTED_DEFAULTS.items():
        if generate_kwargs.get(key, default) != default:
            reasons.append(key)
    if prompt is not None and special is not None:
        if special.prompt_length(prompt) != len(prompt):
            reasons.append("decoding prefix after the task tokens")
    if reasons:
        logger.debug("fast path unsupported: %s", ", ".join(reasons))
    return not reasons


@dataclass(frozen=True)
class RuleSet:
    """All per-step decisions of ``generate(beam_size=1)`` for one prompt.

    ``max_steps`` is the number of decoding steps CT2 runs (tokens incl. EOT). ``no_speech_at_sot`` is
    True when the prompt continues after SOT (then no_speech_prob comes from the raw logits at the SOT
    position of the prompt forward); otherwise from the raw logits of the first decoding step.
    """

    special: SpecialTokens
    rules: tuple
    max_steps: int
    sot_index: int
    length_penalty: float = 1.0
    with_timestamps: bool = True
    no_speech_at_sot: bool = True

    @classmethod
    def from_generate_kwargs(
        cls,
        special: SpecialTokens,
        prompt: Sequence[int],
        *,
        max_length: int = 448,
        length_penalty: float = 1.0,
        suppress_blank: bool = True,
        suppress_tokens: Optional[Sequence[int]] = (-1,),
        max_initial_timestamp_index: int = 50,
        **other,
    ) -> "RuleSet":
        """Build from the keyword arguments given to ``Whisper.generate``; options that do not change greedy
        decisions are ignored (check :func:`supports_fast_path` first)."""
        prompt = list(prompt)
        sot_index = special.sot_index(prompt)
        prompt_length = special.prompt_length(prompt)
        if prompt_length != len(prompt):
            raise ValueError("prompts with a decoding prefix are not supported")
        max_steps = min(max_length // 2, max_length - (prompt_length - 1))
        if max_steps <= 0:
            raise ValueError("The maximum decoding length must be > 0")
        rules = []
        disable = []
        for token in suppress_tokens or ():
            if token >= 0:
                disable.append(int(token))
            elif token == -1:
                disable.extend(special.suppress_ids)
        if disable:
            rules.append(SuppressTokens(tuple(disable)))
        if suppress_blank and special.suppress_ids_begin:
            rules.append(SuppressBlank(tuple(special.suppress_ids_begin)))
        with_timestamps = prompt[prompt_length - 1] != special.no_timestamps
        if with_timestamps:
            ts0 = special.timestamp_begin
            rules.append(
                TimestampRules(
                    eot=special.eot,
                    no_timestamps=special.no_timestamps,
                    timestamp_begin=ts0,
                    timestamp_end=special.timestamp_end,
                    max_initial_timestamp_id=ts0 + int(max_initial_timestamp_index),
                )
            )
        return cls(
            special=special,
            rules=tuple(rules),
            max_steps=max_steps,
            sot_index=sot_index,
            length_penalty=float(length_penalty),
            with_timestamps=with_timestamps,
            no_speech_at_sot=sot_index != prompt_length - 1,
        )

    def apply(self, logits: np.ndarray, tokens: Sequence[int]):
        """Apply every rule, in CT2's order, to the [V] float32 logits in place; returns the log-probs of the
        final logits when the last rule computed them on its way (the timestamp rule does), else None."""
        cached = None
        for rule in self.rules:
            cached = rule.apply(logits, tokens)
        return cached

    def choose(self, logits: np.ndarray, tokens: Sequence[int]) -> tuple[int, np.float32]:
        """Apply the rules (in place) and pick the greedy token: ``(token_id, logprob)``, the float32
        log_softmax of the *filtered* logits at the chosen id, which is what CT2 adds to the score."""
        logprobs = self.apply(logits, tokens)
        logprobs = log_softmax(logits) if logprobs is None else logprobs
        token = int(np.argmax(logprobs))
        return token, logprobs[token]

    def choose_rows(self, rows: np.ndarray, tokens: Sequence[int], draft: Sequence[int], every_row: bool = False):
        """:meth:`choose` for the rows of one verify pass, bit-identical, up to the first rejected draft token.

        Row ``j`` is decided as if ``tokens + draft[:j]`` had been generated; deciding stops at the first
        row whose choice differs from ``draft[j]`` (or at the last row). A row's choice comes from its
        filtered logits (the log-softmax shift is the same for the whole row; a near-tie within
        :data:`TIE_TOLERANCE` is decided from the log-probs), in one C call where tokenmap's native library
        is built (:func:`tokenmap.runtime.nativelib.decide_row`). ``rows`` ([T, V] float32) is modified in
        place; ``every_row`` decides all rows (what :mod:`tokenmap.decode.calibration` times). Returns
        ``(token ids [J + 1], their log-probs [J + 1])``, ``J`` the last row decided.
        """
        n0 = len(tokens)
        context = list(tokens) + list(draft)
        timestamps = None
        for rule in self.rules:
            if isinstance(rule, SuppressTokens):
                rows[:, _index_array(rule.ids)] = DISABLED  # the same ids on every row
            elif isinstance(rule, SuppressBlank):
                if n0 == 0:
                    rule.apply(rows[0], ())
            else:
                timestamps = rule
        chosen, exact = [], True
        shifts = np.empty(rows.shape[0], dtype=np.float32)
        for j in range(rows.shape[0]):
            row = rows[j]
            check = timestamps is not None and timestamps.mask(row, context[: n0 + j])
            token = _decide_native(row, timestamps, check, shifts[j:])
            if token is None:  # no library, or a near-tie: the exact path
                exact = False
                if check and timestamps.likely(row):
                    row[: timestamps.timestamp_begin] = DISABLED
                token = argmax_of_log_softmax(row)
            chosen.append(token)
            if not every_row and (j >= len(draft) or chosen[-1] != draft[j]):
                break
        decided = rows[: len(chosen)]
        ids = np.asarray(chosen, dtype=np.int64)
        shift = shifts[: len(chosen)] if exact else log_softmax_shift_rows(decided)
        return ids, decided[np.arange(len(ids)), ids] + shift

    def final_score(self, sum_logprob: float, num_tokens: int) -> float:
        """``sum_logprob / num_tokens ** length_penalty`` (EOT not counted in the
        length but counted in the sum), float32 as in CT2."""
        length = np.float32(num_tokens)
        with np.errstate(divide="ignore", invalid="ignore"):
            denom = np.power(length, np.float32(self.length_penalty), dtype=np.float32)
            return float(np.float32(sum_logprob) / denom)

    def no_speech_prob(self, raw_logits: np.ndarray) -> float:
        """softmax(raw logits)[no_speech], raw = before any rule (which position's: ``no_speech_at_sot``)."""
        return float(softmax(raw_logits)[self.special.no_speech])


def _decide_native(row: np.ndarray, timestamps: Optional[TimestampRules], check: bool, shift: np.ndarray):
    """:func:`tokenmap.runtime.nativelib.decide_row` for one masked row: the token (the text disabled first
    when the timestamp rule says so) and its log-softmax shift in ``shift[0]``; None for the exact path."""
    begin, end = (timestamps.timestamp_begin, timestamps.timestamp_end) if timestamps is not None else (0, 0)
    return nativelib.decide_row(row, begin, end, check, TIE_TOLERANCE, ct2math.LANES, DISABLED, shift)


#: faster-whisper's greedy ``generate`` arguments for one window (timestamps allowed, blank and
#: non-speech tokens suppressed): what :func:`greedy_decode` and the speculative loop reproduce
GREEDY_KW = dict(beam_size=1, max_length=448, return_scores=True, return_no_speech_prob=True,
                 suppress_blank=True, suppress_tokens=[-1], max_initial_timestamp_index=50)


@dataclass
class GreedyResult:
    """As ``generate`` returns them: ``tokens`` without the prompt and EOT (``sequences_ids[0]``),
    ``score`` (``scores[0]``), ``no_speech_prob`` (None if not requested); ``finished``: EOT was produced
    (False: max_length hit)."""

    tokens: list[int]
    score: float
    no_speech_prob: float | None = None
    finished: bool = False


def logit_rows(storage_view) -> np.ndarray:
    """[T, V] float32 view (zero copy) of a [1, V] or [1, T, V] logits StorageView."""
    array = np.asarray(storage_view)
    return array if array.ndim == 2 else array[0]


def prefill_like_generate(model, encoder_output, prompt: Sequence[int], rules: RuleSet,
                          want_no_speech: bool = True):
    """Feed ``prompt`` into a fresh decoder state like ``generate`` does: ``(state, logits [V] of the first
    generated token, no_speech_prob or None)``."""
    prompt = list(prompt)
    head, last = prompt[:-1], prompt[-1]
    no_speech = None
    if want_no_speech and rules.no_speech_at_sot:
        # logits at the SOT position: prefill up to SOT, then the rest of the head.
        sot = rules.sot_index
        state, sot_logits = model.prefill(encoder_output, prompt[: sot + 1])
        no_speech = rules.no_speech_prob(logit_rows(sot_logits)[-1])
        if prompt[sot + 1 : -1]:
            model.forward_batch(state, prompt[sot + 1 : -1])
        logits = logit_rows(model.forward_step(state, last))[-1]
    elif head:
        state, _ = model.prefill(encoder_output, head)
        logits = logit_rows(model.forward_step(state, last))[-1]
    else:
        state, first = model.prefill(encoder_output, [last])
        logits = logit_rows(first)[-1]
    if want_no_speech and not rules.no_speech_at_sot:
        no_speech = rules.no_speech_prob(logits)  # raw logits of the first step
    return state, logits, no_speech


def greedy_decode(model, encoder_output, prompt: Sequence[int], special: SpecialTokens,
                  **generate_kwargs) -> GreedyResult:
    """Greedy decoding identical to ``model.generate(encoder_output, [prompt], beam_size=1,
    **generate_kwargs)`` for one window; ValueError for options :func:`supports_fast_path` rejects."""
    kwargs = dict(generate_kwargs)
    kwargs.setdefault("beam_size", 1)
    if not supports_fast_path(prompt=prompt, special=special, **kwargs):
        raise ValueError("generate options not supported by the step-wise decoder")
    rules = RuleSet.from_generate_kwargs(special, prompt, **kwargs)
    want_no_speech = bool(kwargs.get("return_no_speech_prob", True))
    state, logits, no_speech = prefill_like_generate(
        model, encoder_output, prompt, rules, want_no_speech)

    tokens: list[int] = []
    total = np.float32(0.0)
    finished = False
    for step in range(rules.max_steps):
        token, logprob = rules.choose(logits, tokens)
        total = np.float32(total + logprob)
        if token == special.eot:
            finished = True
            break
        tokens.append(token)
        if step + 1 >= rules.max_steps:  # max_length reached
            break
        logits = logit_rows(model.forward_step(state, token))[-1]
    score = rules.final_score(total, len(tokens))
    logger.debug("reference greedy: %d tokens, score %.4f", len(tokens), score)
    return GreedyResult(tokens, score, no_speech, finished)


def sample_decode(model, encoder_output, prompt: Sequence[int], prefix: Sequence[int], special: SpecialTokens,
                  stop=None, rng=None, **generate_kwargs) -> GreedyResult:
    """Go on with a hypothesis ``generate(..., sampling_temperature=, sampling_topk=)`` sampled as far as ``prefix``:
    ``prompt`` and ``prefix`` in one pass, then one token a step drawn from the rules' logits as CTranslate2 draws
    it, until EOT, the maximum length, or ``stop(token)`` (fed every new token) says so. ``score`` is the sum of
    the new tokens' log-probabilities, EOT's included, untempered: what CTranslate2 adds to its score."""
    kwargs = dict(generate_kwargs)
    temperature, topk = float(kwargs.pop("sampling_temperature", 1.0)), int(kwargs.pop("sampling_topk", 1))
    rules = RuleSet.from_generate_kwargs(special, prompt, **kwargs)
    rng = rng or np.random.default_rng()
    tokens = list(prefix)
    state, logits, _ = prefill_like_generate(model, encoder_output, list(prompt) + tokens, rules, False)
    total, finished = 0.0, False
    while len(tokens) < rules.max_steps:
        logprobs = rules.apply(logits, tokens)
        logprobs = log_softmax(logits) if logprobs is None else logprobs
        z = logits.astype(np.float64) / max(temperature, 1e-6)
        if 0 < topk < len(z):
            z[np.argpartition(z, -topk)[:-topk]] = -np.inf
        weights = np.cumsum(np.exp(z - z.max()))
        token = int(np.searchsorted(weights, rng.random() * weights[-1], side="right"))
        total += float(logprobs[token])
        if token == special.eot:
            finished = True
            break
        tokens.append(token)
        if (stop is not None and stop(token)) or len(tokens) >= rules.max_steps:
            break
        logits = logit_rows(model.forward_step(state, token))[-1]
    return GreedyResult(tokens, total, None, finished)
