"""Real copies of the previous text, told from speech that really repeats, with a short probe.

faster-whisper conditions a window on the previous window's text, and Whisper sometimes writes that text
again instead of what it hears. The guard (:meth:`tokenmap.decode.guarding.Guard.copied`) finds a window
whose text repeats the previous text; until now every such window was decoded again without the previous
text. But speech repeats too (a reading said twice, an IVR menu played again), and there the second decode
writes the same thing: a whole decode wasted, and the window's text changed for nothing.

:func:`probe_copy` asks the audio first, cheaply: the window is decoded without the previous text only as
far as the copied passage's first words (its start plus :attr:`CopyProbe.tokens`). Where that probe writes
the same words there, the audio says them: the window keeps the text it had (faster-whisper's own, the one
conditioned on the previous text). Where it writes something else, it was a copy: the window is decoded
without the previous text, as before (the probe is that decode, when it ended within its steps).

Example::

    >>> copy_start([50364, 7, 1001, 1002, 1003, 50400], [1000, 1001, 1002, 1003, 1004], 3)
    2
    >>> says_again(" And so it began. And so", " and so it began again", 4)
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from tokenmap.decode.loops import decoded_tokens, length_for, steps_of

WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class CopyProbe:
    """``tokens``: decode this many tokens past the copied passage's start; ``words``: the words of the
    passage the probe must write again to count as speech; ``min_run``: the shortest run of the
    previous text's tokens that marks where the passage starts."""

    tokens: int = 16
    words: int = 4
    min_run: int = 3


def copy_start(tokens: Sequence[int], history: Sequence[int], min_run: int) -> int | None:
    """The index in ``tokens`` (timestamps included) where the first run of ``min_run`` tokens of ``history``
    begins; None where there is none."""
    runs = {tuple(history[j: j + min_run]) for j in range(len(history) - min_run + 1)}
    for i in range(len(tokens) - min_run + 1):
        if tuple(tokens[i: i + min_run]) in runs:
            return i
    return None


def says_again(passage: str, probe: str, words: int) -> bool:
    """Whether ``probe`` writes the first ``words`` words of ``passage`` (lower case, punctuation dropped)
    in a row."""
    want = [w.lower() for w in WORD.findall(passage)][:words]
    have = [w.lower() for w in WORD.findall(probe)]
    if not want:
        return False
    return any(have[i: i + len(want)] == want for i in range(len(have) - len(want) + 1))


def probe_copy(decode: Callable, output, prompt: Sequence[int], results, history: Sequence[int], kwargs: dict,
               text: Callable, eot: int, probe: CopyProbe = CopyProbe()):
    """``None`` when the window's text, which the guard found copying ``history``, is said again in the audio;
    else the window decoded without the previous text.

    ``decode(output, prompts, kwargs)`` decodes (as the guard's); ``prompt`` is the window's prompt without
    the previous text; ``results`` what the window decoded with it; ``text`` turns ids into text.
    """
    tokens = decoded_tokens(results[0])  # a stopped loop as decoded
    start = copy_start(tokens, history, probe.min_run)
    max_length = kwargs.get("max_length", 448)
    if start is None:
        return decode(output, [list(prompt)], kwargs)
    steps = start + probe.tokens
    cap = length_for(steps, len(prompt), max_length)
    if steps_of(cap, len(prompt)) >= steps_of(max_length, len(prompt)):
        cap = max_length
    first = decode(output, [list(prompt)], dict(kwargs, max_length=cap))
    probed = [t for t in first[0].sequences_ids[0] if t < eot]
    passage = text([t for t in tokens[start:] if t < eot])
    if says_again(passage, text(probed), probe.words):
        return None
    ended = len(first[0].sequences_ids[0]) < steps_of(cap, len(prompt))
    return first if ended or cap == max_length else decode(output, [list(prompt)], kwargs)
