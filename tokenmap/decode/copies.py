"""Real copies of the previous text, told from speech that really repeats, with a short probe.

The guard (:meth:`tokenmap.decode.guarding.Guard.copied`) finds a window whose text repeats the previous text.
But speech repeats too (a reading said twice, an IVR menu played again), and there a decode without the
previous text writes the same thing: a decode wasted.

:func:`probe_copy` asks the audio first, cheaply: the window is decoded without the previous text only as
far as the window wrote the copied passage's first words (plus :attr:`CopyProbe.tokens`). Where that probe
writes them too (otherwise spelt, as Whisper's prompt sets its style: :func:`says_again`), the audio says them:
the window keeps its text. Else it was a copy, decoded without the previous text (the probe is that decode,
when it ended within its steps).

The probe can be drafted from the window's own tokens (``verify``, the fork's step API): where the audio says
the passage again, a prefill and a pass or two verify it instead of a step a token. It is greedy, also for a
window the temperature fallback sampled: it asks what the audio most likely says, and a copy is then decoded
as the window was, sampled.

Example::

    >>> copy_start([50364, 7, 1001, 1002, 1003, 50400], [1000, 1001, 1002, 1003, 1004], 3)
    2
    >>> says_again(" And so it began. And so", " and so it began again", 4)
    True
    >>> says_again(" d'Hell, Answer et Hangup", " Dahl, Answer et Hangup pour", 4)
    True
    >>> says_again(" And Mr. John Dashwood had then", " Mr. John Dashwood had then leisure", 4)
    True
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Callable, Sequence

from num2words import num2words

from tokenmap.decode.loops import decoded_tokens, length_for, steps_of

WORD = re.compile(r"\w+(?:'\w+)?")
SAMPLING = ("sampling_topk", "sampling_temperature", "num_hypotheses")  # generate's arguments a drafted probe drops


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
    return next((i for i in range(len(tokens) - min_run + 1) if tuple(tokens[i: i + min_run]) in runs), None)


def says_again(passage: str, probe: str, words: int, similar: float = 0.6, language: str | None = None) -> bool:
    """Whether ``probe`` writes the first ``words`` words of ``passage`` in a row (lower case, punctuation
    dropped, numbers in ``language``'s words: :func:`spoken`), or the ``words`` after its first one. Two words
    may be written as one ("touch tone", "touchtone"), and one word may be spelt otherwise (a character
    similarity of at least ``similar``, no digits: "d'Hell" and "Dahl", not "one" and "two", nor "1000" and
    "3000")."""
    every, have = spoken(words_of(passage), language), spoken(words_of(probe), language)

    def alike(a: str, b: str) -> bool:
        return not re.search(r"\d", a + b) and SequenceMatcher(None, a, b).ratio() >= similar

    def said(want: list, i: int, spelt: int) -> bool:  # ``want`` written from have[i] on
        if not want:
            return True
        if i >= len(have):
            return False
        a, b = want[0], have[i]
        return ((a == b and said(want[1:], i + 1, spelt))
                or (len(want) > 1 and a + want[1] == b and said(want[2:], i + 1, spelt))
                or (i + 1 < len(have) and a == b + have[i + 1] and said(want[1:], i + 2, spelt))
                or (spelt > 0 and alike(a, b) and said(want[1:], i + 1, spelt - 1)))

    def found(want: list) -> bool:
        return bool(want) and any(said(want, i, 1) for i in range(len(have)))

    return found(every[:words]) or (len(every) > words and found(every[1: words + 1]))


def spoken(words: list[str], language: str | None) -> list[str]:
    """``words`` with each number written in digits said in ``language``'s words (num2words): Whisper writes
    "four or six" or "4 or 6" depending on its prompt. Unchanged where num2words lacks the language.

    >>> spoken(["press", "4", "or", "21"], "en"), spoken(["4"], "fr"), spoken(["4"], None)
    (['press', 'four', 'or', 'twenty', 'one'], ['quatre'], ['4'])
    """
    return [w for word in words for w in _said(word, language)]


@functools.lru_cache(maxsize=4096)
def _said(word: str, language: str | None) -> tuple[str, ...]:
    if language is None or not word.isdigit() or len(word) > 9:
        return (word,)
    try:
        return tuple(words_of(num2words(int(word), lang=language)))
    except (NotImplementedError, OverflowError):
        return (word,)


def words_of(text: str) -> list[str]:
    """Lower-case words of ``text``, punctuation and apostrophes dropped ("Press 1, for Sales! D'accord": press, 1,
    for, sales, daccord)."""
    return [w.replace("'", "") for w in WORD.findall(text.lower())]


def probe_copy(decode: Callable, output, prompt: Sequence[int], results, history: Sequence[int], kwargs: dict, model,
               verify: Callable | None = None):
    """``None`` when the window's text, which the guard found copying ``history``, is said again in the audio;
    else the window decoded without the previous text.

    ``decode(output, prompts, kwargs)`` decodes (as the guard's); ``prompt`` is the window's prompt without
    the previous text; ``results`` what the window decoded with it; ``model`` gives ``text`` (ids -> text), the
    ``special`` tokens (``eot``; ``language_of(prompt)``, in which numbers are compared: :func:`spoken`) and the
    probe's options (``guard.probe``, a :class:`CopyProbe`). ``verify(output, prompt, kwargs, expected)``: the
    tokens of a greedy decode of ``prompt`` drafted from ``expected``, or None where it cannot decode these
    ``kwargs``; its probe decides, ``decode`` decodes a copy.
    """
    text, eot, probe = model.text, model.special.eot, model.guard.probe
    language = model.special.language_of(prompt)
    tokens = decoded_tokens(results[0])  # a stopped loop as decoded
    start = copy_start(tokens, history, probe.min_run)
    max_length = kwargs.get("max_length", 448)
    if start is None:
        return decode(output, [list(prompt)], kwargs)
    passage = [t for t in tokens[start:] if t < eot]
    written = text(passage)
    said = next((n for n in range(len(passage)) if len(words_of(text(passage[:n]))) > probe.words + 1),
                len(passage))
    needed = len(spoken(words_of(text([t for t in tokens[:start] if t < eot])), language)) + probe.words + 1
    greedy = {k: v for k, v in kwargs.items() if k not in SAMPLING}  # what the audio says, most likely
    steps, first = start + said + probe.tokens, None
    while True:  # a probe that wrote fewer words than the window before the passage goes on with twice the steps
        cap = length_for(steps, len(prompt), max_length)
        probed = verify(output, list(prompt), dict(greedy, max_length=cap), tokens) if verify is not None else None
        if probed is None:
            first = decode(output, [list(prompt)], dict(kwargs, max_length=cap))
            probed = first[0].sequences_ids[0]
        heard = text([t for t in probed if t < eot])
        if says_again(written, heard, probe.words, language=language):
            return None
        cut = len(probed) >= steps_of(cap, len(prompt))
        if not cut or cap == max_length or len(spoken(words_of(heard), language)) >= needed:
            break
        steps *= 2
    if first is not None and (not cut or cap == max_length):
        return first  # the probe was the decode
    return decode(output, [list(prompt)], kwargs)
