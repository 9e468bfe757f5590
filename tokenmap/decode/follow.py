"""The drafter that follows the model: longest-match contexts, cost-aware draft length, Whisper's structure.

:class:`FollowDrafter` keeps the node of a :class:`tokenmap.maps.suffixmap.TokenMap` that matches the longest suffix
of the current segment's text (back to its start, marked ``BOS``); each emitted token advances it (back-off through
suffix links). A draft walks the most frequent continuation; the chance that its first ``k`` tokens are all accepted
is the product of the relative frequencies on the way times the tally's ``factor``
(:class:`tokenmap.decode.control.DraftTally`), and :func:`tokenmap.decode.control.best_cut` cuts it. Where the model
spells a word in other tokens than the map's, the context follows the word's text (:class:`WordSync`); where it
writes a comma-like mark (``inner_marks``) the corpus lacks, or leaves out one the corpus writes, the context steps
over it instead of backing off.

Whisper's segment structure is drafted too, because the model is predictable there (never ``<|endoftext|>``,
which the pass's own next token decides anyway):

* ``<|0.00|>`` at the start of a timestamped window (the decoding loop puts it first);
* where the corpus ends an utterance, the closing timestamp guessed from the window's audio length
  (:func:`closing_timestamp`, weighed by the tally's hit rate);
* after a closing timestamp where the corpus goes on, the same timestamp again (it opens the next segment),
  then that segment's first words;
* after a closing timestamp well before the end of the audio, the next segment's opening timestamp even where
  the corpus's utterance ended (the closing one plus the gap the model left at the window's previous segment
  break), then the next utterance's words;
* without timestamps, drafts run up to where the corpus's utterance ends.

Example (a toy map of two utterances; timestamps start at id 100, EOT is 99)::

    >>> from tokenmap.maps.suffixmap import TokenMap
    >>> stream = np.array([9, 1, 2, 3, 10, 9, 1, 2, 3, 10], dtype=np.uint32)   # BOS=9, SEP=10
    >>> sm = TokenMap.from_stream(stream, bos=9, sep=10, depth=8)
    >>> d = FollowDrafter(sm, timestamp_begin=100, eot=99)
    >>> d.reset()
    >>> d.draft([], limit=8)                  # no timestamps: the whole utterance (EOT comes free)
    [1, 2, 3]
    >>> d.draft([100, 1, 2, 3, 104], limit=8) # after the closing timestamp: nothing worth drafting
    []
    >>> d = FollowDrafter(sm, timestamp_begin=100, eot=99, seconds=0.9)
    >>> d.draft([100], limit=8)               # 0.9 s of audio: the closing timestamp <|2.00|> guessed
    [1, 2, 3, 200]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from tokenmap.decode.control import DraftTally, best_cut, verify_costs
from tokenmap.decode.cost import DEFAULT, CostModel
from tokenmap.decode.special import Spelling, has_letters

LAST_TIMESTAMP = 1500  # <|30.00|>, Whisper's last timestamp, as an offset from <|0.00|>
GOES_ON_S = 1.0  # a closing timestamp this long before the audio's end is followed by another segment
CONFIDENCE = 0.8  # multiplies every share: corpus text is not exactly what the model writes
MAX_LEN = 24  # tokens of a draft at most
MAX_DEPTH = 6  # map tokens one word may span


def closing_timestamp(seconds: float | None, timestamp_begin: int, max_seconds: float = 30.0) -> int | None:
    """A guess of the timestamp that closes the last segment of a window holding ``seconds`` of audio:
    Whisper writes round closing times, mostly ``<|2.00|>`` for a short prompt and the nearest whole second
    for a longer one.

    >>> [closing_timestamp(s, 100) for s in (0.8, 1.51, 2.65, None)]
    [200, 200, 250, None]
    """
    if not seconds or seconds <= 0:
        return None
    guess = 2.0 if seconds < 1.3 else float(round(seconds))
    return timestamp_begin + int(round(min(guess, max_seconds) / 0.02))


class WordSync:
    """The word being written, and the map's node for it when the model's pieces are not the map's.

    Where the model's pieces leave the map, this looks from the node where the word began for a path of map
    tokens that spells the same text. :meth:`feed` takes every text token before the drafter advances its
    context and returns the node the context should take (None: advance as usual). After a word that ends
    inside a map token, :attr:`lead` holds the tokens that finish it and :attr:`straddle` that token's node.

    Example (a toy vocabulary and a map of one utterance, ``" cancell" "etto" "."``)::

        >>> import numpy as np
        >>> from tokenmap.maps.suffixmap import TokenMap
        >>> vocab = ["Ġcancell", "etto", ".", "Ġcan", "ce", "ll", "<|endoftext|>", "<|bos|>", "<|sep|>"]
        >>> spelling = Spelling(vocab, end=6)
        >>> sm = TokenMap.from_stream(np.array([7, 0, 1, 2, 8], dtype=np.uint32), bos=7, sep=8, depth=8)
        >>> words = WordSync(sm, spelling)
        >>> words.reset(sm.bos_node)
        >>> sm.child(sm.bos_node, 3)                   # the map has no " can" where the utterance starts
        -1
        >>> words.feed(sm.bos_node, 3) == sm.bos_node  # " can" is inside " cancell": the context stays before it
        True
        >>> [vocab[t] for t in words.lead], vocab[sm.token(words.straddle)]   # the next draft opens with the rest
        (['ce', 'll'], 'Ġcancell')
        >>> _ = words.feed(sm.bos_node, 4)             # the model wrote "ce": "ll" is left
        >>> [vocab[t] for t in words.lead]
        ['ll']
        >>> words.feed(sm.bos_node, 5) == sm.child(sm.bos_node, 0)   # "ll" ends the word at " cancell"'s node
        True
    """

    def __init__(self, token_map, spelling: Spelling):
        self.map, self.spelling = token_map, spelling
        self.reset(0)

    def reset(self, node: int) -> None:
        """A new word starts after ``node``."""
        self._anchor, self._word = node, ""
        self._lost = False  # no map path spells the word so far: none spells it with more pieces either
        self.lead: list[int] = []
        self.straddle = -1

    def feed(self, node: int, token: int, held: bool | None = None) -> int | None:
        """Take the model's next text ``token``; ``node`` is the drafter's context before it, and ``held``
        whether the map continues ``node`` with ``token`` (looked up when None)."""
        text = self.spelling.text(token)
        inside = bool(self.lead)
        self.lead, self.straddle = [], -1
        if self.spelling.starts_word(token):
            self._anchor, self._word, self._lost = node, "", False
        self._word += text
        if held is None:
            held = self.map.child(node, token) > 0
        if self._lost or not has_letters(text) or (not inside and held):
            return None  # a word the map does not hold, punctuation, or the map's own piece
        return self._resync()

    def _resync(self) -> int | None:
        anchor = self._anchor
        while anchor > 0:
            found = self._search(anchor, self._word, 0)
            if found is not None:
                self._anchor = anchor
                _, node, rest, straddle = found
                if not rest:
                    return node
                lead = self.spelling.pieces(rest)
                if lead is None:
                    return None
                self.lead, self.straddle = lead, straddle
                return node
            anchor = self.map.suffix(anchor)  # a shorter context of the same words
        self._lost = True
        return None

    def _search(self, node: int, word: str, depth: int):
        """The most frequent path from ``node`` that spells ``word``: ``(count, node, rest, straddle)``,
        ``rest`` the text of the last map token beyond the word ("" when the word ends at ``node``)."""
        if depth >= MAX_DEPTH:
            return None
        first, tokens = self.map.children(node)
        best = None
        for i in self.spelling.candidates(tokens, word):
            child, text = first + int(i), self.spelling.text(int(tokens[i]))
            if not text:
                continue
            if word.startswith(text):
                rest = word[len(text):]
                found = (self.map.count(child), child, "", -1) if not rest else self._search(child, rest, depth + 1)
            elif text.startswith(word):
                found = (self.map.count(child), node, text[len(word):], child)
            else:
                continue
            if found is not None and (best is None or found[0] > best[0]):
                best = found
        return best


class FollowDrafter:
    """Drafts from a :class:`~tokenmap.maps.suffixmap.TokenMap` (module docstring).

    ``tokens`` passed to :meth:`draft` only grow within a window, so the match state is advanced by the
    new tokens only. ``tally``: what earlier windows taught this map's drafter (a fresh one when None).
    """

    def __init__(self, suffix_map, timestamp_begin: int | None, eot: int, cost: CostModel | None = None,
                 tally: DraftTally | None = None, seconds: float | None = None, inner_marks: frozenset = frozenset(),
                 spelling=None):
        self.map = suffix_map
        self._words = WordSync(suffix_map, spelling) if spelling is not None else None
        # commas and the like (SpecialTokens.inner_marks): the context steps over those the corpus lacks
        self._marks = frozenset(inner_marks)
        self._bridges = suffix_map.held(self._marks) if inner_marks else ()  # the ones the corpus writes
        self.timestamp_begin = timestamp_begin if timestamp_begin is not None else 1 << 62
        self.eot = eot
        # the window's audio length, when known, lets a draft end with the closing timestamp
        self._closing = closing_timestamp(seconds, timestamp_begin) if timestamp_begin is not None else None
        # the model goes on after a closing timestamp before this one (1 s before the audio's end)
        self._goes_on_before = (self.timestamp_begin + int((seconds - GOES_ON_S) / 0.02)
                                if seconds and timestamp_begin is not None else -1)
        self._stamp_at = -1  # index of the guessed closing timestamp in the last draft (-1: none)
        self._guessed_open = False  # the last draft opened with a guessed opening timestamp
        self.tally = tally or DraftTally()
        cost = cost or DEFAULT
        self._step = cost.step_ms
        self._verify = verify_costs(cost, MAX_LEN)
        self._marginal = float(np.diff(np.concatenate([[0.0], self._verify])).min())
        self._pending = 0.0
        self.log: list[tuple[int, int]] | None = None  # (drafted, accepted) per verified draft, when a list
        self.reset()

    def reset(self, history: Sequence[int] = ()) -> None:
        self._fed = 0
        self._node = self.map.bos_node if self.map.bos_node > 0 else 0
        self._tokens: list[int] = []
        self._last_stamp = -1  # the last timestamp fed (-1: none yet)
        self._gap = 0  # opening minus closing timestamp at the window's last segment break
        if self._words is not None:
            self._words.reset(self._node)

    def _is_ts(self, t: int) -> bool:
        return t >= self.timestamp_begin

    def _segment_start(self, node: int) -> int:
        """The context for a new segment: the utterance start when the corpus ends one here."""
        return max(self.map.bos_node, 0) if self._end_share(node) >= 0.5 or node == 0 else node

    def _end_share(self, node: int) -> float:
        c = self.map.child(node, self.map.sep)
        return self.map.count(c) / self.map.count(node) if c > 0 and node > 0 else 0.0

    def _feed(self, token: int) -> None:
        prev = self._tokens[-1] if self._tokens else None
        self._tokens.append(token)
        if self._is_ts(token):
            self._last_stamp = token
            if prev is not None and not self._is_ts(prev):
                return  # closing timestamp: the segment's context stays until the next one opens
            if prev is not None and len(self._tokens) > 2:
                self._gap = token - prev  # an opening timestamp after a closing one
            self._node = self._segment_start(self._node)
            if self._words is not None:
                self._words.reset(self._node)
            return
        node = self._node
        held = self.map.child(node, token) > 0
        if self._words is not None and token < self.eot:
            synced = self._words.feed(node, token, held)
            if synced is not None:
                self._node = synced
                return
        if not held:
            if token in self._marks and node > 0:
                return  # a mark the corpus does not write here: the context goes on without it
            bridged = self._bridge(node, token)
            if bridged > 0:
                self._node = bridged
                return
            if self._end_share(node) >= 0.5 and self.map.bos_node > 0:
                node = self.map.bos_node  # the model went on where the corpus's utterance ended
        self._node = self.map.advance(node, token)

    def _bridge(self, node: int, token: int) -> int:
        """``token``'s node after a mark the corpus writes here and the model left out, or -1."""
        for mark in self._bridges:
            via = self.map.child(node, mark)
            if via > 0:
                after = self.map.child(via, token)
                if after > 0:
                    return after
        return -1

    def _sync(self, tokens: Sequence[int]) -> None:
        # the loop only appends: a shorter list, or another last-fed token, is a new window
        if len(tokens) < self._fed or (self._fed and tokens[self._fed - 1] != self._tokens[self._fed - 1]):
            self.reset()
        for t in tokens[self._fed:]:
            self._feed(int(t))
        self._fed = len(tokens)

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        self._sync(tokens)
        self._pending = 0.0
        self._stamp_at = -1
        self._guessed_open = False
        if limit <= 0:
            return []
        limit = min(limit, MAX_LEN)
        prefix, p0, node = self._structure(tokens)
        if prefix is None:
            return []
        if not prefix and self._words is not None and self._words.lead:  # finish the word begun in other pieces
            prefix, node = self._words.lead, self._words.straddle
            p0 = self.map.count(node) / max(1, self.map.count(self._node)) * CONFIDENCE
        draft, probs = list(prefix), [p0] * len(prefix)
        self._walk(node, p0, limit - len(draft), draft, probs)
        return self._cut(draft[:limit], probs[:limit])

    def _structure(self, tokens: Sequence[int]) -> tuple[list[int] | None, float, int]:
        """What Whisper's structure puts first: ``(tokens, their probability, context node)``."""
        if not tokens or not self._is_ts(tokens[-1]):
            return [], 1.0, self._node
        if len(tokens) == 1 or self._is_ts(tokens[-2]):
            return [], 1.0, self._node  # after an opening timestamp: text
        closing = int(tokens[-1])
        if closing < self._goes_on_before:  # audio left: the next segment opens
            self._guessed_open = True
            opening = min(closing + self._gap, self.timestamp_begin + LAST_TIMESTAMP)
            return [opening], self.tally.open_rate, self._segment_start(self._node)
        end = self._end_share(self._node)  # after a closing timestamp: EOT (the model's own), or it again
        if end >= 0.5:
            return None, 0.0, self._node
        return [closing], (1.0 - end) * CONFIDENCE, self._segment_start(self._node)

    def _walk(self, node: int, p: float, room: int, draft: list[int], probs: list[float]) -> None:
        """Append the most frequent continuation while its probability can still pay."""
        sm = self.map
        floor = self._floor()
        while room > 0:
            node, child, share = sm.next_choice(node)
            if child < 0:
                return
            p *= share * CONFIDENCE
            if p < floor:
                return
            token = sm.token(child)
            if token == sm.sep:  # the utterance ends: its closing timestamp, or (no timestamps) EOT, comes next
                self._draft_closing(draft, probs, p)
                return
            if token >= self.eot:  # BOS or another id the model never emits as text
                return
            draft.append(token)
            probs.append(p)
            node = child
            room -= 1

    def _draft_closing(self, draft: list[int], probs: list[float], p: float) -> None:
        """Append the guessed closing timestamp where the timestamp rules allow it
        (after an opening timestamp, never going back in time)."""
        if self._closing is None:
            return
        last = draft[0] if draft and self._is_ts(draft[0]) else self._last_stamp  # a draft opens with it, or none
        if last < 0 or self._closing <= last:
            return
        self._stamp_at = len(draft)
        draft.append(self._closing)
        probs.append(p * self.tally.stamp_rate)

    def _floor(self) -> float:
        """Below this probability one more drafted token costs more than it can save."""
        return max(1e-3, self._marginal / self._step / self.tally.factor)

    def _cut(self, draft: list[int], probs: list[float]) -> list[int]:
        if not draft:
            return []
        length, _, expected = best_cut(np.asarray(probs) * self.tally.factor, self._step, self._verify)
        self._pending = expected
        return draft[:length]

    @property
    def last_expected(self) -> float:
        """Expected accepted tokens of the last draft (0 when none)."""
        return self._pending

    def update(self, drafted: int, accepted: int) -> None:
        """The verified outcome of the last draft (taught to the tally)."""
        if drafted:
            self.tally.update(self._pending, accepted)
            self.tally.update_saving(accepted * self._step - self._verify[min(drafted, len(self._verify)) - 1])
            if 0 <= self._stamp_at < drafted and accepted >= self._stamp_at:
                self.tally.update_stamp(accepted > self._stamp_at)
            if self._guessed_open:
                self.tally.update_open(accepted > 0)
            if self.log is not None:
                self.log.append((drafted, accepted))
