"""Bridge written transcripts to the style Whisper emits.

Whisper writes sentences with a capital first letter, final punctuation and
digits for numbers ("Pressure 22.5 bar."), while written domain transcripts
often say "pressure twenty two point five bar".  Drafts are only accepted
when they match the model's own tokens, so the builder can rewrite each line
first.  Every rule is a pure function and can be switched off.

Example::

    >>> bridge("pressure twenty two point five bar")
    'Pressure 22.5 bar.'
    >>> bridge("replace valve three", StyleOptions(numbers=False))
    'Replace valve three.'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNITS = {
    "zero": 0, "oh": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
    "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_DIGIT_WORDS = {w: v for w, v in _UNITS.items() if v < 10}
_WORD_RE = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)?|\S")
_FINAL = ".?!…"
_LETTERS_RE = re.compile(r"[a-z]+")
_NUMBER_WORDS = frozenset(_UNITS) | frozenset(_TENS) | frozenset(_SCALES)


@dataclass(frozen=True)
class StyleOptions:
    """Which rewrites :func:`bridge` applies (all on by default)."""

    capitalize: bool = True
    final_period: bool = True
    numbers: bool = True

    @property
    def any(self) -> bool:
        """True when at least one rewrite is on."""
        return self.capitalize or self.final_period or self.numbers


NO_BRIDGE = StyleOptions(capitalize=False, final_period=False, numbers=False)


def capitalize_first(text: str) -> str:
    """Upper-case the first letter: ``"valve ok"`` -> ``"Valve ok"``."""
    for i, ch in enumerate(text):
        if ch.isalpha():
            return text[:i] + ch.upper() + text[i + 1:]
        if not ch.isspace() and ch not in "\"'(¿¡":
            return text
    return text


def add_final_period(text: str) -> str:
    """Add a period unless the text already ends in ``.?!…``."""
    stripped = text.rstrip()
    if not stripped or stripped[-1] in _FINAL:
        return stripped
    if stripped[-1] in ",;:":
        stripped = stripped[:-1]
    return stripped + "."


def _parse_integer(words: list[str]) -> int | None:
    """Value of integer number words (``["two", "hundred", "five"]`` -> 205)."""
    total, current, seen = 0, 0, False
    for w in words:
        if w in _UNITS:
            low = current % 100
            if not (low == 0 or (low >= 20 and low % 10 == 0 and _UNITS[w] < 10)):
                return None  # "two three" is a digit string, not one number
            current += _UNITS[w]
        elif w in _TENS:
            if current % 100:
                return None
            current += _TENS[w]
        elif w == "hundred":
            if current % 100 == 0 and current:
                return None
            current = (current or 1) * 100
        elif w in ("thousand", "million"):
            total += (current or 1) * _SCALES[w]
            current = 0
        else:
            return None
        seen = True
    return total + current if seen else None


def _number_span(tokens: list[str], start: int) -> tuple[int, str | None] | None:
    """Number phrase at ``tokens[start]``: (end index, digits or None to keep it)."""
    end = start
    ints: list[str] = []
    while end < len(tokens):
        w = tokens[end].lower()
        parts = w.split("-")
        if all(p in _NUMBER_WORDS for p in parts):
            ints.extend(parts)
            end += 1
        elif w == "and" and ints and end + 1 < len(tokens) and tokens[end + 1].lower() in _NUMBER_WORDS \
                and ints[-1] in _SCALES:
            end += 1
        else:
            break
    if not ints:
        return None
    value = _parse_integer(ints)
    if value is None:
        return end, None  # ambiguous ("ten twenty", "two three"): keep the words
    text = str(value)
    if end + 1 < len(tokens) and tokens[end].lower() == "point" and tokens[end + 1].lower() in _DIGIT_WORDS:
        end += 1
        decimals = ""
        while end < len(tokens) and tokens[end].lower() in _DIGIT_WORDS:
            decimals += str(_DIGIT_WORDS[tokens[end].lower()])
            end += 1
        text += "." + decimals
    elif ints == ["one"]:
        return end, None  # "one of the pumps": Whisper keeps the word
    return end, text


def numbers_to_digits(text: str) -> str:
    """English number words to digits: ``"twenty two point five"`` -> ``"22.5"``."""
    if _NUMBER_WORDS.isdisjoint(_LETTERS_RE.findall(text.lower())):
        return text  # fast path: no number word at all
    tokens = _WORD_RE.findall(text)
    spans = [m.span() for m in _WORD_RE.finditer(text)]
    out: list[str] = []
    pos, i = 0, 0
    while i < len(tokens):
        found = _number_span(tokens, i)
        if found is None:
            i += 1
            continue
        end, digits = found
        if digits is None:
            i = end
            continue
        out.append(text[pos:spans[i][0]])
        out.append(digits)
        pos = spans[end - 1][1]
        i = end
    out.append(text[pos:])
    return "".join(out)


def bridge(text: str, options: StyleOptions = StyleOptions()) -> str:
    """Rewrite one transcript line in Whisper's style (see module docstring)."""
    text = " ".join(text.split())
    if options.numbers:
        text = numbers_to_digits(text)
    if options.capitalize:
        text = capitalize_first(text)
    if options.final_period:
        text = add_final_period(text)
    return text
