"""Special token ids of a Whisper model, as CTranslate2 derives them from its vocabulary and config.

    >>> vocab = ["a", "Ġ,", "<|endoftext|>", "<|startoftranscript|>", "<|notimestamps|>", "<|0.00|>"]
    >>> special = SpecialTokens.from_vocabulary(vocab, {})
    >>> special.sot, special.eot, special.timestamp_begin, sorted(special.inner_marks)
    (3, 2, 5, [1])
    >>> special.prompt_length([3, 4, 0])  # <|startoftranscript|> <|notimestamps|>, then a prefix
    2
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

SPACE = "\u0120"  # byte-level BPE's leading space, "Ġ"
INNER_MARK_CHARS = frozenset(",;:")
#: a language token of Whisper's vocabulary: ``<|en|>``, ``<|haw|>``, ``<|yue|>``
LANGUAGE_TOKEN = re.compile(r"<\|([a-z]{2,3})\|>")


def is_inner_mark(token: str) -> bool:
    """True for a vocabulary entry made of commas, semicolons or colons alone, after an optional
    leading space (byte-level BPE writes it ``Ġ``): punctuation inside a sentence.

    >>> [is_inner_mark(t) for t in (",", "Ġ,", ",,", ":", ".", "?", "Ġthe", "Ġ", "5")]
    [True, True, True, True, False, False, False, False, False]
    """
    body = token[1:] if token.startswith("Ġ") else token
    return bool(body) and all(ch in INNER_MARK_CHARS for ch in body)


@dataclass(frozen=True)
class SpecialTokens:
    sot: int
    eot: int
    no_timestamps: int
    no_speech: int
    vocab_size: int
    suppress_ids: tuple = ()  # config.json "suppress_ids" (what -1 expands to)
    suppress_ids_begin: tuple = ()  # config.json "suppress_ids_begin" (suppress_blank)
    inner_marks: frozenset = frozenset()  # tokens of inner punctuation alone: ",", " ,", ";", ":", ",,", ...
    languages: tuple = ()  # (id, code) of every language token: ((50259, "en"), (50260, "zh"), ...)
    #: the text of every token (:class:`Spelling`), by which a drafter follows words
    #: the model spells in other pieces than its map's; None: drafters match token ids only
    spelling: Spelling | None = field(default=None, compare=False, repr=False)

    @property
    def timestamp_begin(self) -> int:
        return self.no_timestamps + 1

    @property
    def timestamp_end(self) -> int:
        return self.vocab_size - 1

    @classmethod
    def from_vocabulary(cls, vocab: Sequence[str], config: dict) -> "SpecialTokens":
        index = {tok: i for i, tok in enumerate(vocab)}
        no_speech = index.get("<|nospeech|>", index.get("<|nocaptions|>"))
        return cls(
            sot=index["<|startoftranscript|>"],
            eot=index["<|endoftext|>"],
            no_timestamps=index["<|notimestamps|>"],
            no_speech=no_speech,
            vocab_size=len(vocab),
            suppress_ids=tuple(config.get("suppress_ids", ())),
            suppress_ids_begin=tuple(config.get("suppress_ids_begin", ())),
            inner_marks=frozenset(i for i, tok in enumerate(vocab) if is_inner_mark(tok)),
            languages=tuple((i, m.group(1)) for i, tok in enumerate(vocab)
                            if (m := LANGUAGE_TOKEN.fullmatch(tok)) and i > index["<|startoftranscript|>"]),
            spelling=Spelling(vocab, index["<|endoftext|>"]),
        )

    @classmethod
    def from_model_dir(cls, model_dir: str) -> "SpecialTokens":
        """Read ``vocabulary.txt`` (or ``.json``) and ``config.json`` of a CT2 model."""
        txt = os.path.join(model_dir, "vocabulary.txt")
        if os.path.exists(txt):
            with open(txt, encoding="utf-8") as f:
                vocab = [line.rstrip("\n") for line in f]
        else:
            with open(os.path.join(model_dir, "vocabulary.json"), encoding="utf-8") as f:
                vocab = json.load(f)
        config_path = os.path.join(model_dir, "config.json")
        config = {}
        if os.path.exists(config_path):
            with open(config_path, encoding="utf-8") as f:
                config = json.load(f)
        return cls.from_vocabulary(vocab, config)

    def sot_index(self, prompt: Sequence[int]) -> int:
        try:
            return list(prompt).index(self.sot)
        except ValueError:
            raise ValueError("<|startoftranscript|> token was not found in the prompt")

    def language_of(self, prompt: Sequence[int]) -> str | None:
        """The language code of the token after ``<|startoftranscript|>``, or None (an English-only
        model's prompt names none).

        >>> vocab = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|fr|>", "<|transcribe|>", "<|notimestamps|>"]
        >>> special = SpecialTokens.from_vocabulary(vocab, {})
        >>> special.language_of([1, 3, 4]), special.language_of([1, 4, 5])
        ('fr', None)
        """
        i = self.sot_index(prompt) + 1
        return dict(self.languages).get(prompt[i]) if i < len(prompt) else None

    def prompt_length(self, prompt: Sequence[int]) -> int:
        """Length up to the end of the task tokens (ids in [sot, no_timestamps])
        after SOT; tokens beyond it are a decoding *prefix*."""
        i = self.sot_index(prompt)
        while i < len(prompt) and self.sot <= prompt[i] <= self.no_timestamps:
            i += 1
        return i


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
        # each token's first two characters as a number (-1: a shorter text), for :meth:`candidates`
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
        return text.startswith(SPACE) or not has_letters(text)


def has_letters(text: str) -> bool:
    return any(ch.isalnum() for ch in text)
