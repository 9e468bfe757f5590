"""Drafters: where speculative continuations come from.

Every drafter has the same small shape (:class:`Drafter`): given the tokens generated so far in this
window, return candidate next tokens, or ``[]`` for none, and learn how the model verified the last
one. A drafter never decides anything: the model verifies every drafted token. How far to draft is
one rule for every source (:mod:`tokenmap.decode.control`); :func:`default_drafter` gives each source
its cost curve and its learning state.

Example::

    >>> d = PromptLookupDrafter(min_match=2)
    >>> d.reset(history=[5, 6, 7, 8, 9])
    >>> d.draft([1, 6, 7], limit=3)      # "6 7" occurred in the history: copy what followed
    [8, 9, 1]

``timestamp_begin`` (the first timestamp id) lets drafters skip timestamps, which text cannot predict.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from tokenmap.decode.control import ControlledDrafter
from tokenmap.decode.cost import DEFAULT
from tokenmap.decode.follow import FollowDrafter
from tokenmap.decode.recall import RecallDrafter


class Drafter(Protocol):
    """Context in, candidate tokens (possibly none) out; told how each draft fared. A drafter that derives
    from it inherits ``reset`` and ``update`` that do nothing."""

    def reset(self, history: Sequence[int] = ()) -> None:
        """Start a new window; ``history`` is text the model saw before it (the previous-window prompt)."""

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        """At most ``limit`` candidate tokens that may follow ``tokens``."""

    def update(self, drafted: int, accepted: int) -> None:
        """The model verified this drafter's last draft: ``accepted`` of its ``drafted`` tokens were kept."""


def lcp(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two sequences."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def text_context(tokens: Sequence[int], timestamp_begin: int | None) -> list[int] | None:
    """The text of the current segment: tokens after the last timestamp; None right after a closing
    timestamp (a timestamp preceded by text), where no text drafter can predict what comes."""
    if timestamp_begin is None:
        return list(tokens)
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i] >= timestamp_begin:
            if i == len(tokens) - 1 and i > 0 and tokens[i - 1] < timestamp_begin:
                return None
            return list(tokens[i + 1:])
    return list(tokens)


class MapSetDrafter:
    """Drafts from one of several token maps (one per task), inferring the task while decoding.

    Each map has its own drafter (:func:`map_drafter`). After every pass each map's proposal at the
    previous position is scored against the model's tokens: ``score <- decay * score + saving``, where
    ``saving`` is what verifying it would have saved (:meth:`tokenmap.decode.cost.CostModel.saving`).
    The draft comes from the best-scoring map while its score is positive; what the model kept of it
    teaches that map's drafter. Scores start at zero in each window. Example (two toy maps of one
    utterance each, BOS=9, SEP=10; the model writes the second one's)::

        >>> from tokenmap.maps.suffixmap import TokenMap
        >>> maps = [TokenMap.from_stream(np.array([9, *u, 10] * 2, dtype=np.uint32), bos=9, sep=10, depth=8)
        ...         for u in ([1, 2, 3, 4], [5, 6, 7, 8])]
        >>> from types import SimpleNamespace   # a toy vocabulary: no timestamps, EOT 99
        >>> d = MapSetDrafter(maps, SimpleNamespace(eot=99, timestamp_begin=None, inner_marks=frozenset()))
        >>> d.draft([], 4), d.draft([5], 4)    # no score yet, then the second map leads
        ([], [6, 7, 8])
    """

    def __init__(self, token_maps: Sequence, special, cost=None, decay: float = 0.97, controllers=None,
                 seconds: float | None = None):
        self.members = [map_drafter(tm, special, cost, controllers, i, seconds) for i, tm in enumerate(token_maps)]
        self.cost, self.decay = cost or DEFAULT, decay
        self.log: list[tuple[int, int]] | None = None  # (drafted, accepted) per verified draft, when a list
        self.reset()

    def reset(self, history: Sequence[int] = ()) -> None:
        for m in self.members:
            m.reset(history)
        self.scores = [0.0] * len(self.members)
        self.drafts = [0] * len(self.members)  # drafts each member gave in this window (diagnostics)
        self._pending: tuple[int, list] | None = None  # (position, every member's proposal there)
        self._last: int | None = None  # the member whose draft the model verifies next

    def _score(self, tokens: Sequence[int]) -> None:
        if self._pending is None:
            return
        position, proposals = self._pending
        emitted = tokens[position:]
        for i, proposal in enumerate(proposals):
            saving = self.cost.saving(lcp(proposal, emitted), len(proposal)) if proposal else 0.0
            self.scores[i] = self.decay * self.scores[i] + saving

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        self._score(tokens)
        proposals = [m.draft(tokens, limit) for m in self.members]
        self._pending = (len(tokens), proposals)
        self._last = None
        best = max(range(len(self.members)), key=self.scores.__getitem__, default=None)
        if best is None or self.scores[best] <= 0 or not proposals[best]:
            return []
        self.drafts[best] += 1
        self._last = best
        return proposals[best]

    def update(self, drafted: int, accepted: int) -> None:
        if self._last is not None:
            self.members[self._last].update(drafted, accepted)
            if self.log is not None and drafted:
                self.log.append((drafted, accepted))


class PromptLookupDrafter(Drafter):
    """Prompt lookup: find the last ``n`` tokens earlier in ``history`` (the previous-window prompt) and
    this window's tokens, and copy what followed. A match must be at least 4 tokens long by default: 2- and
    3-token matches ("the", numbers, units) recur without the same continuation."""

    def __init__(self, min_match: int = 4, max_match: int = 8, timestamp_begin: int | None = None):
        self.min_match = min_match
        self.max_match = max_match
        self.timestamp_begin = timestamp_begin
        self.history: list[int] = []

    def reset(self, history: Sequence[int] = ()) -> None:
        self.history = [t for t in history if self.timestamp_begin is None or t < self.timestamp_begin]

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        if limit <= 0:
            return []
        seq = self.history + [t for t in tokens if self.timestamp_begin is None or t < self.timestamp_begin]
        return find_continuation(seq, self.min_match, self.max_match, limit)


def find_continuation(seq: Sequence[int], min_match: int, max_match: int, limit: int) -> list[int]:
    """Continuation of the latest earlier occurrence of ``seq``'s last n tokens: the longest match wins
    (up to ``max_match``, at least ``min_match``), the latest among equally long ones.

    >>> find_continuation([1, 2, 3, 9, 2, 3, 8, 1, 2, 3], 2, 4, 3)   # [1, 2, 3] matched at the start
    [9, 2, 3]
    """
    n_total = len(seq)
    if n_total <= min_match:
        return []
    arr = np.asarray(seq, dtype=np.int64)
    cap = min(max_match, n_total - 1)
    best_len, best_end = 0, -1
    for end in np.flatnonzero(arr[: n_total - 1] == arr[-1])[::-1].tolist():  # latest first
        length = 1
        while length < cap and length <= end and arr[end - length] == arr[n_total - 1 - length]:
            length += 1
        if length > best_len:
            best_len, best_end = length, end
            if length == cap:
                break
    return arr[best_end + 1: best_end + 1 + limit].tolist() if best_len >= min_match else []


class SessionCache(Drafter):
    """Text accepted earlier in this process, searched like a prompt; thread-safe, the oldest of more
    than ``max_tokens`` dropped."""

    def __init__(self, max_tokens: int = 20_000, min_match: int = 3, timestamp_begin: int | None = None):
        self.max_tokens = max_tokens
        self.min_match = min_match
        self.timestamp_begin = timestamp_begin
        self._tokens: list[int] = []
        self._lock = threading.Lock()

    def add(self, tokens: Sequence[int]) -> None:
        text = [t for t in tokens if self.timestamp_begin is None or t < self.timestamp_begin]
        with self._lock:
            self._tokens.extend(text)
            del self._tokens[: max(0, len(self._tokens) - self.max_tokens)]

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        text = text_context(tokens, self.timestamp_begin)
        if not text or len(text) < self.min_match or limit <= 0:
            return []
        with self._lock:
            corpus = list(self._tokens)
        if not corpus:
            return []
        n = self.min_match
        return find_continuation(corpus + text[-n:], n, max(n, 4), limit)


@dataclass
class ChainDrafter:
    """Ask drafters in order and return the first non-empty draft; :meth:`update` teaches the drafter
    that proposed it."""

    drafters: tuple
    _last: object = None

    def reset(self, history: Sequence[int] = ()) -> None:
        for d in self.drafters:
            d.reset(history)

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        self._last = None
        for d in self.drafters:
            candidate = d.draft(tokens, limit)
            if candidate:
                self._last = d
                return candidate
        return []

    def update(self, drafted: int, accepted: int) -> None:
        if self._last is not None:
            self._last.update(drafted, accepted)


class FixedDrafter(Drafter):
    """Drafts the part of a fixed ``sequence`` that follows ``tokens`` when they are a prefix of it, else
    nothing (the oracle, or adversarial tests)."""

    def __init__(self, sequence: Sequence[int]):
        self.sequence = list(sequence)

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        n = len(tokens)
        return self.sequence[n: n + limit] if self.sequence[:n] == list(tokens) else []


class EchoDrafter(Drafter):
    """Drafts a known decode of the window again: what follows ``tokens`` in ``sequence`` while they are a prefix
    of it, else what follows the latest place in it where their last ``min_match`` to 8 tokens occur (the new
    decode left out or added a word and goes on as the known one did).

    >>> EchoDrafter([50364, 7, 8, 9, 10]).draft([50364], 3), EchoDrafter([50364, 7, 8, 9, 10]).draft([50364, 8, 9], 3)
    ([7, 8, 9], [10])
    """

    def __init__(self, sequence: Sequence[int], min_match: int = 2):
        self.sequence, self.min_match = list(sequence), min_match

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        tokens = list(tokens)
        if self.sequence[: len(tokens)] == tokens:
            return self.sequence[len(tokens): len(tokens) + limit]
        for m in range(min(8, len(tokens)), self.min_match - 1, -1):
            at = next((i for i in range(len(self.sequence) - m, -1, -1) if self.sequence[i: i + m] == tokens[-m:]),
                      None)
            if at is not None:
                return self.sequence[at + m: at + m + limit]
        return []


def map_drafter(token_map, special, cost=None, controllers=None, index: int = 0,
                seconds: float | None = None) -> FollowDrafter:
    """The drafter of one map (:class:`tokenmap.decode.follow.FollowDrafter`).

    ``special``: the model's :class:`tokenmap.decode.special.SpecialTokens` (anything with ``eot``,
    ``timestamp_begin``, ``inner_marks`` and, optionally, ``spelling``); ``controllers``: the
    :class:`tokenmap.decode.gate.WindowGate` whose ``index``-th tally the drafter learns into;
    ``seconds``: the audio in the window, when known.
    """
    if special is None or special.eot is None:
        raise ValueError("a token map's drafter needs the model's <|endoftext|> id")
    tally = controllers.tally(index) if controllers is not None else None
    return FollowDrafter(token_map, special.timestamp_begin, special.eot, cost, tally=tally, seconds=seconds,
                         inner_marks=special.inner_marks, spelling=getattr(special, "spelling", None))


def map_languages(token_map) -> frozenset[str] | None:
    """The languages one map, or a list of maps, was built from; None when any map's are not known."""
    maps = token_map if isinstance(token_map, (list, tuple)) else [token_map]
    found = [getattr(m, "languages", None) for m in maps]  # a stand-in without the record: unknown
    return None if any(langs is None for langs in found) else frozenset().union(*found)


@dataclass(frozen=True)
class Heard:
    """What a drafter may know of the window it drafts: ``seconds`` of audio, ``audio`` (its encoder output) and
    ``mel`` (its features); None where unknown."""

    seconds: float | None = None
    audio: object = None
    mel: object = None


def default_drafter(token_map=None, special=None, prompt_lookup: bool = True,
                    session_cache: SessionCache | None = None, controllers=None, cost=None, recall=None,
                    heard: Heard = Heard()) -> ChainDrafter:
    """The drafter tokenmap uses: audio recall, the token map, then prompt lookup, then the session cache.

    ``token_map``: one map, or a list of maps (:class:`MapSetDrafter`); ``controllers``: the
    :class:`tokenmap.decode.gate.WindowGate` that keeps what every source learns across windows;
    ``cost``: the calibrated curve (default: the controllers'); ``recall``: a
    :class:`tokenmap.maps.recallindex.RecallIndex`, used when the window's encoder output is ``heard`` too.
    See :func:`map_drafter` for the rest.
    """
    cost = cost or getattr(controllers, "cost", None)
    seconds, audio, mel = heard.seconds, heard.audio, heard.mel
    timestamp_begin = special.timestamp_begin if special is not None else None
    drafters: list = []

    def controlled(drafter):
        return drafter if controllers is None else ControlledDrafter(drafter, controllers.member(len(drafters)))

    if recall is not None and audio is not None:
        drafters.append(RecallDrafter(recall, audio, timestamp_begin, seconds, mel=mel))
    if isinstance(token_map, (list, tuple)):  # one map per task: infer which one fits
        drafters.append(MapSetDrafter(token_map, special, cost, controllers=controllers, seconds=seconds))
    elif token_map is not None:
        drafters.append(map_drafter(token_map, special, cost, controllers, 0, seconds))
    if prompt_lookup:
        drafters.append(controlled(PromptLookupDrafter(timestamp_begin=timestamp_begin)))
    if session_cache is not None:
        drafters.append(controlled(session_cache))
    return ChainDrafter(tuple(drafters))
