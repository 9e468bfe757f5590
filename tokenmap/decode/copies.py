"""Real copies of the previous text, told from speech that really repeats, with a short probe.

The guard (:meth:`tokenmap.decode.guarding.Guard.copied`) finds a window whose text repeats the previous text.
But speech repeats too (a reading said twice, an IVR menu played again), and there a decode without the
previous text writes the same thing: a decode wasted.

:func:`probe_copy` asks the audio first, cheaply: the window is decoded without the previous text only as
far as the window wrote the copied passage's first words (plus :attr:`CopyProbe.tokens`). Where that probe
writes them too (one spelt otherwise at most), the audio says them: the window keeps its text. Else it was
a copy, decoded without the previous text (the probe is that decode, when it ended within its steps).

Example::

    >>> copy_start([50364, 7, 1001, 1002, 1003, 50400], [1000, 1001, 1002, 1003, 1004], 3)
    2
    >>> says_again(" And so it began. And so", " and so it began again", 4)
    True
    >>> says_again(" d'Hell, Answer et Hangup", " Dahl, Answer et Hangup pour", 4)
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Callable, Sequence

from tokenmap.decode.loops import decoded_tokens, length_for, steps_of

WORD = re.compile(r"\w+(?:'\w+)?")


@dataclass(frozen=True)
class CopyProbe:
    """``words``: the words of the copied passage the probe must write again to count as speech; ``tokens``:
    the probe decodes this many tokens past where the window wrote them; ``min_run``: the shortest run of the
    previous text's tokens that marks where the passage starts."""

    tokens: int = 4
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


def says_again(passage: str, probe: str, words: int, similar: float = 0.6) -> bool:
    """Whether ``probe`` writes the first ``words`` words of ``passage`` in a row (lower case, punctuation
    dropped); one of them may be spelt otherwise (a character similarity of at least ``similar``, no digits:
    "d'Hell" and "Dahl", not "one" and "two", nor "1000" and "3000")."""
    want, have = words_of(passage)[:words], words_of(probe)

    def alike(a: str, b: str) -> bool:
        return not re.search(r"\d", a + b) and SequenceMatcher(None, a, b).ratio() >= similar

    def said(got: list) -> bool:
        other = [(a, b) for a, b in zip(want, got) if a != b]
        return len(other) <= 1 and all(alike(a, b) for a, b in other)

    return bool(want) and any(said(have[i: i + len(want)]) for i in range(len(have) - len(want) + 1))


def words_of(text: str) -> list[str]:
    """Lower-case words of ``text``, punctuation and apostrophes dropped ("Press 1, for Sales! D'accord": press, 1,
    for, sales, daccord)."""
    return [w.replace("'", "") for w in WORD.findall(text.lower())]


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
    passage = [t for t in tokens[start:] if t < eot]
    said = next((n for n in range(len(passage)) if len(words_of(text(passage[:n]))) > probe.words), len(passage))
    steps = start + said + probe.tokens
    cap = length_for(steps, len(prompt), max_length)
    if steps_of(cap, len(prompt)) >= steps_of(max_length, len(prompt)):
        cap = max_length
    first = decode(output, [list(prompt)], dict(kwargs, max_length=cap))
    probed = [t for t in first[0].sequences_ids[0] if t < eot]
    if says_again(text(passage), text(probed), probe.words):
        return None
    ended = len(first[0].sequences_ids[0]) < steps_of(cap, len(prompt))
    return first if ended or cap == max_length else decode(output, [list(prompt)], kwargs)
