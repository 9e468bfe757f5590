"""Step-wise greedy reference decoder on the CTranslate2 fork's decoder-step API.

It feeds the prompt the way ``Whisper.generate`` does (all prompt tokens but the
last as one batch, the last one as the first decoding step), reads the full
logits of every step, applies :mod:`tokenmap.decode.rules` in numpy and takes the argmax.
Its output (tokens, score, no_speech_prob) equals ``generate(beam_size=1, ...)`` at
float32; this is the baseline every speculative path is checked against.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tokenmap.decode.rules import RuleSet, supports_fast_path
from tokenmap.decode.special import SpecialTokens

logger = logging.getLogger("tokenmap")


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


def _row(storage_view) -> np.ndarray:
    """[V] float32 view of the last position of a [1, V] or [1, T, V] logits StorageView (zero copy)."""
    array = np.asarray(storage_view)
    return array[0] if array.ndim == 2 else array[0, -1]


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
        no_speech = rules.no_speech_prob(_row(sot_logits))
        if prompt[sot + 1 : -1]:
            model.forward_batch(state, prompt[sot + 1 : -1])
        logits = _row(model.forward_step(state, last))
    elif head:
        state, _ = model.prefill(encoder_output, head)
        logits = _row(model.forward_step(state, last))
    else:
        state, first = model.prefill(encoder_output, [last])
        logits = _row(first)
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
        logits = _row(model.forward_step(state, token))
    score = rules.final_score(total, len(tokens))
    logger.debug("reference greedy: %d tokens, score %.4f", len(tokens), score)
    return GreedyResult(tokens, score, no_speech, finished)
