"""Step-wise greedy reference decoder on the CTranslate2 fork's decoder-step API.

It feeds the prompt the way ``Whisper.generate`` does (all prompt tokens but the
last as one batch, the last one as the first decoding step), reads the full
logits of every step, applies :mod:`tokenmap.decode.rules` in numpy and takes the argmax.
Its output (tokens, score, no_speech_prob) equals ``generate(beam_size=1,
return_scores=True, return_no_speech_prob=True, ...)`` at float32; this is the
baseline every speculative path is checked against.

Logits from the fork (``ctranslate2.StorageView`` of shape [1, V] or [1, T, V],
float32) are read with ``np.asarray`` (zero copy: the array keeps the
StorageView alive through ``.base``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

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
    """tokens: generated ids without the prompt and without EOT (as
    ``sequences_ids[0]``); score: ``sum_logprob / len(tokens)**length_penalty``
    (as ``scores[0]``); sum_logprob: float32 sum of the chosen tokens' logprobs,
    EOT included; logprobs: per step (len(tokens) or len(tokens)+1 with EOT);
    no_speech_prob: as ``generate`` returns it (None if not requested)."""

    tokens: List[int]
    score: float
    sum_logprob: float
    logprobs: List[float] = field(default_factory=list)
    no_speech_prob: Optional[float] = None
    finished: bool = False  # True if EOT was produced (False: max_length hit)


def _row(storage_view, index: int = -1) -> np.ndarray:
    """[V] float32 view of one position of a [1, V] or [1, T, V] logits StorageView."""
    array = np.asarray(storage_view)
    return array[0] if array.ndim == 2 else array[0, index]


def prefill_like_generate(model, encoder_output, prompt: Sequence[int], rules: RuleSet,
                          want_no_speech: bool = True):
    """Feed ``prompt`` into a fresh decoder state like ``generate`` does.

    Returns ``(state, first_logits [V], no_speech_prob or None)``; ``first_logits``
    predict the first generated token; ``state.current_step == len(prompt)``.
    """
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
    """Greedy decoding identical to ``model.generate(encoder_output, [prompt],
    beam_size=1, **generate_kwargs)`` for one window.

    ``encoder_output``: StorageView [1, 1500, d_model] from ``model.encode`` (or
    features [1, n_mels, 3000]). Raises ValueError for options that
    :func:`supports_fast_path` rejects.
    """
    kwargs = dict(generate_kwargs)
    kwargs.setdefault("beam_size", 1)
    if not supports_fast_path(prompt=prompt, special=special, **kwargs):
        raise ValueError("generate options not supported by the step-wise decoder")
    rules = RuleSet.from_generate_kwargs(special, prompt, **kwargs)
    want_no_speech = bool(kwargs.get("return_no_speech_prob", True))
    state, logits, no_speech = prefill_like_generate(
        model, encoder_output, prompt, rules, want_no_speech)

    tokens: List[int] = []
    logprobs: List[float] = []
    total = np.float32(0.0)
    finished = False
    for step in range(rules.max_steps):
        token, logprob = rules.choose(logits, tokens)
        total = np.float32(total + logprob)
        logprobs.append(float(logprob))
        if token == special.eot:
            finished = True
            break
        tokens.append(token)
        if rules.is_last_step(step):
            break
        logits = _row(model.forward_step(state, token))
    score = rules.final_score(total, len(tokens))
    logger.debug("reference greedy: %d tokens, score %.4f", len(tokens), score)
    return GreedyResult(tokens=tokens, score=score, sum_logprob=float(total),
                        logprobs=logprobs, no_speech_prob=no_speech, finished=finished)
