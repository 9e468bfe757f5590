"""The previous hypothesis as the draft (Algorithm 1), kept aligned after mismatches.

A new hypothesis mostly repeats the previous one with a few local edits, so the rest of the previous
hypothesis is re-aligned to the output after every mismatch: one edit costs one extra verify pass. Beyond
its end the fallback drafter (token map, prompt lookup) proposes. The tokens decided so far are aligned with
``previous`` by the first rule that applies:

1. they follow ``previous`` (any timestamp matches any timestamp): continue there;
2. their text is a prefix of its text (a segment boundary moved): continue the text;
3. their last 4..2 tokens occur in ``previous``: continue after the occurrence nearest the expected
   position; the last token alone when it occurs within ``near`` positions (a deletion).

A drafted opening timestamp takes the value of the closing timestamp the model just chose, and a draft that
would be only the previous hypothesis' final timestamp is not proposed on its own.

    >>> ts = 100
    >>> d = PreviousHypothesisDrafter([ts, 1, 2, 3, 4, 5, ts + 9], ts)
    >>> d.draft([ts, 1, 3], 9)        # "2" deleted: realigned on "3"
    [4, 5, 109]
    >>> d.draft([ts, 1, 7], 9)        # "2" replaced by "7": no alignment
    []
"""

from __future__ import annotations

from typing import Sequence


class PreviousHypothesisDrafter:
    """Drafts the rest of ``previous`` aligned to the tokens so far, else asks ``fallback``."""

    def __init__(self, previous: Sequence[int], timestamp_begin: int, fallback=None, realign: int = 64,
                 near: int = 4, short_tail: int = 2):
        self.previous, self.realign, self.near, self.short_tail = list(previous), realign, near, short_tail
        self.ts0 = timestamp_begin
        self.fallback = fallback
        self.kind = ""  # how the last draft was aligned (diagnostics)
        self._from_fallback = False

    def reset(self, history: Sequence[int] = ()) -> None:
        if self.fallback is not None:
            self.fallback.reset(history)

    def _same(self, a: int, b: int) -> bool:
        return a == b or (a >= self.ts0 and b >= self.ts0)

    def follows(self, tokens: Sequence[int]) -> bool:
        """True if ``tokens`` is a prefix of ``previous`` (any timestamp matches any timestamp)."""
        return len(tokens) <= len(self.previous) and all(self._same(a, b) for a, b in zip(tokens, self.previous))

    def on_previous(self, tokens: Sequence[int], token: int) -> bool:
        """True if ``token`` is what the previous hypothesis says comes after ``tokens``."""
        n = len(tokens)
        return n < len(self.previous) and self.previous[n] == token and self.follows(tokens)

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        if limit <= 0:
            return []
        tokens = list(tokens)
        rest = self._rest(tokens)
        if rest is None:
            return self._fallback(tokens, limit)
        if self.kind != "follows" and len(rest) <= self.short_tail:
            return self._fallback(tokens, limit)  # a realigned final ". <|t|>": new audio moves it
        return rest[:limit] if rest else self._fallback(tokens, limit)

    def _fallback(self, tokens: list[int], limit: int) -> list[int]:
        if self.fallback is None:
            return []
        draft = self.fallback.draft(tokens, limit)
        self._from_fallback = bool(draft)
        return draft

    def update(self, drafted: int, accepted: int) -> None:
        """Called by the decoder after each verified draft: a draft of the fallback teaches the fallback
        (whose own controls decide how much it drafts); the previous hypothesis is not throttled."""
        if self._from_fallback and self.fallback is not None:
            self.fallback.update(drafted, accepted)
        self._from_fallback = False

    def _rest(self, tokens: list[int]) -> list[int] | None:
        """What ``previous`` says follows ``tokens`` (None: no alignment)."""
        prev = self.previous
        if not prev:
            return None
        self.kind = "follows"
        if self.follows(tokens):
            return self._opening(tokens, len(tokens))
        self.kind = "text"
        aligned = self._text_aligned(tokens)
        if aligned is not None:
            return aligned
        self.kind = "lookup"
        j = self._lookup(tokens)
        return None if j is None else self._opening(tokens, j)[: self.realign]

    def _opening(self, tokens: list[int], j: int) -> list[int]:
        """``previous[j:]``, its first token set to the closing timestamp just chosen when it opens a segment."""
        rest = list(self.previous[j:])
        ts0 = self.ts0
        if (rest and rest[0] >= ts0 and len(tokens) >= 2 and tokens[-1] >= ts0 and tokens[-2] < ts0
                and j >= 1 and self.previous[j - 1] >= ts0):
            rest[0] = tokens[-1]
        return rest

    def _text_aligned(self, tokens: list[int]) -> list[int] | None:
        """The rest of ``previous`` when the text so far (timestamps ignored) is a prefix of its text."""
        ts0, prev = self.ts0, self.previous
        text = [t for t in tokens if t < ts0]
        positions = [i for i, t in enumerate(prev) if t < ts0]
        if not text or len(text) > len(positions) or [prev[i] for i in positions[: len(text)]] != text:
            return None
        if len(text) == len(positions):
            return None
        rest = prev[positions[len(text) - 1] + 1:]
        if tokens[-1] >= ts0:  # after a timestamp: continue with text
            rest = prev[positions[len(text)]:]
            if len(tokens) >= 2 and tokens[-2] < ts0:  # it closed a segment: open the next one
                rest = [tokens[-1]] + rest
        return rest

    def _lookup(self, tokens: list[int]) -> int | None:
        """Index in ``previous`` after the occurrence of the last 4..2 tokens (or 1, nearby)
        nearest the expected position ``len(tokens)``."""
        prev, n = self.previous, len(tokens)
        for m in range(min(4, n), 0, -1):
            tail = tokens[-m:]
            if m == 1 and tail[0] >= self.ts0:
                return None
            ends = [i + m for i in range(len(prev) - m + 1)
                    if all(self._same(a, b) for a, b in zip(prev[i: i + m], tail))]
            if m == 1:
                ends = [e for e in ends if abs(e - n) <= self.near]
            if ends:
                return min(ends, key=lambda e: (abs(e - n), -e))
        return None
