"""Teacher transcripts for ``tokenmap build --balance --teacher``: the model's own output.

s-CDF (disparate-impacts paper, appendix D.1) fine-tunes the drafter on the
*verifier's* completions, each task's update scaled by its excess misfit
``D_T - D_min``.  The token-map analogue: transcribe some unlabelled in-domain
audio with plain greedy Whisper (``tokenmap transcribe``), and hand the
transcripts to the builder as a teacher corpus.  Then

* ``D_T`` is measured on what the verifier emits: the cross-entropy of the
  task's default-budget map (its whole training corpus) on the model's greedy
  output for that task (:func:`teacher_divergence`);
* each task's map also counts its teacher lines ``Budget.teacher`` times,
  a setting :func:`tokenmap.balance.budget.allocate` moves from 0 (the best task: its
  map stays its plain map) towards the generous bound in proportion to
  ``w_T`` (:func:`with_teacher`).

A corpus text tells the map what people say; a teacher line tells it how the
model writes what it hears (its spelling of numbers, names and mis-heard
words), which is what the verifier will accept.  The teacher audio must not
be the audio you measure on.

Teacher files are read like corpora (:mod:`tokenmap.build.corpus`): a line's task
is its ``domain/lang`` (JSON-lines fields, or a ``<domain>/<lang>/`` folder).
One line per segment is best (the map drafts from the start of each segment).

Example::

    >>> stream = np.array([9, 1, 2, 10], np.uint32)              # BOS 1 2 SEP
    >>> with_teacher(stream, np.array([9, 3, 10], np.uint32), 2).tolist()
    [9, 1, 2, 10, 9, 3, 10, 9, 3, 10]
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping

import numpy as np

from tokenmap.balance.budget import Budget
from tokenmap.balance.divergence import cross_entropy
from tokenmap.balance.streams import build_task_map, stream_sequences
from tokenmap.maps.schema import stream_markers

log = logging.getLogger("tokenmap")


def with_teacher(stream: np.ndarray, teacher: np.ndarray | None, copies: int) -> np.ndarray:
    """``stream`` followed by ``copies`` copies of the ``teacher`` stream (both ``BOS ids SEP ...``, uint32)."""
    if teacher is None or copies <= 0 or not len(teacher):
        return stream
    return np.concatenate([stream, *([teacher] * copies)])


def teacher_divergence(stream: np.ndarray, teacher: np.ndarray | None, options, vocab_size: int):
    """``(D_T, teacher tokens, map)``: the cross-entropy of the task's default-budget map, built on
    all of ``stream``, on the teacher stream's utterances, and that map (the task's section when its
    budget stays the default); ``(nan, 0, None)`` without teacher lines."""
    bos, sep = stream_markers(vocab_size)
    seqs = [s for s in stream_sequences(teacher, bos, sep) if s] if teacher is not None else []
    if not seqs:
        return math.nan, 0, None
    tm = build_task_map(stream, Budget.of(options), options, vocab_size)
    return cross_entropy(tm, seqs), sum(map(len, seqs)), tm


def check_teacher_tasks(corpus_tasks, teacher_tasks: Mapping[str, list]) -> None:
    """Warn about teacher tasks without a corpus (ignored) and corpus tasks without teacher lines
    (their ``D_T`` is unknown, so they keep the default budget)."""
    extra = sorted(set(teacher_tasks) - set(corpus_tasks))
    if extra:
        log.warning("teacher lines of %s ignored: no corpus for %s", ", ".join(extra),
                    "it" if len(extra) == 1 else "them")
    missing = sorted(set(corpus_tasks) - set(teacher_tasks))
    if missing:
        log.warning("no teacher lines for %s: D_T unknown, default budget", ", ".join(missing))
