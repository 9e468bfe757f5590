"""Character-level resynchronisation: the drafter's context when the model spells a word in other tokens.

A token map holds the canonical byte-level BPE of its corpus: `` cancelletto`` is ``" cancell" "etto"``.
Whisper writes what it hears and sometimes spells the same word in other pieces (``" can" "ce" "ll"
"etto"``). The map has no child for ``" can"`` where it expects ``" cancell"``, so a drafter that matches
token ids loses the sentence and backs off to short contexts until a later word anchors it again.

:class:`WordSync` follows the text of the word being written. When the model's pieces leave the map, it
looks, from the node where the word began, for a path of map tokens that spells the same text:

* the text ends exactly at a map token (``" can" "ce" "ll"`` spells ``" cancell"``): the context is that
  token's node, as if the map's own pieces had been written;
* the text ends inside a map token (``" can" "ce"`` is the start of ``" cancell"``): the context is the
  node before that token, and the next draft opens with the rest of it (``"ll"``, in the vocabulary's
  pieces) before the map's continuation.

Token texts are the vocabulary's own strings, in which byte-level BPE writes a leading space as ``Ġ``,
so no text is decoded. :class:`Spelling` holds them.

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

from __future__ import annotations

from typing import Sequence

import numpy as np

SPACE = "\u0120"  # byte-level BPE's leading space, "Ġ"
MAX_DEPTH = 6  # map tokens one word may span


class Spelling:
    """The text of every token below ``end`` (the first special token) as the vocabulary writes it, and the
    tokens that spell a piece of text.

    >>> s = Spelling(["Ġcan", "ce", "ll", "cell", "Ġ,", "<|endoftext|>"], end=5)
    >>> s.pieces("cell"), s.pieces("cel"), s.starts_word(0), s.starts_word(1), s.starts_word(4)
    ([3], None, True, False, True)
    """

    def __init__(self, vocab: Sequence[str], end: int):
        self.texts = tuple(vocab[:end])
        self._ids = {t: i for i, t in enumerate(self.texts) if t}
        heads: dict[str, int] = {}
        # each token's first two characters as a number (-1: a text shorter than that), so that a search
        # compares only the few continuations that can spell a word (:meth:`candidates`)
        self._head = np.array([heads.setdefault(t[:2], len(heads)) if len(t) >= 2 else -1 for t in self.texts]
                              + [-2], dtype=np.int64)  # the last entry: any id outside the vocabulary
        self._heads = heads

    def text(self, token: int) -> str:
        """The token's text ("" for special tokens)."""
        return self.texts[token] if 0 <= token < len(self.texts) else ""

    def pieces(self, text: str) -> list[int] | None:
        """``text`` in vocabulary tokens, each the longest that fits from the left; None if a piece has none."""
        out, i = [], 0
        while i < len(text):
            for j in range(len(text), i, -1):
                token = self._ids.get(text[i:j])
                if token is not None:
                    out.append(token)
                    i = j
                    break
            else:
                return None
        return out

    def candidates(self, tokens: np.ndarray, word: str) -> np.ndarray:
        """The indices of ``tokens`` whose text can be a prefix of ``word`` or start with it (a superset)."""
        head = self._head[np.minimum(tokens, len(self.texts))]
        if len(word) < 2:
            return np.flatnonzero(head != -2)
        return np.flatnonzero((head == self._heads.get(word[:2], -3)) | (head == -1))

    def starts_word(self, token: int) -> bool:
        """True for a token that begins a word (a leading space) or is no word at all (punctuation)."""
        text = self.text(token)
        return text.startswith(SPACE) or not _has_letters(text)


def _has_letters(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


class WordSync:
    """The word being written, and the map's node for it when the model's pieces are not the map's.

    Call :meth:`reset` at a segment's start and :meth:`feed` with every text token, before the drafter
    advances its context; :meth:`feed` returns the node the context should take, or None to let the
    drafter advance as usual. After a word that ends inside a map token, :attr:`lead` holds the tokens
    that finish it and :attr:`straddle` the node of that map token (both empty otherwise).
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
        if self._lost or not _has_letters(text) or (not inside and held):
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
