"""The target model's own tokenizer, used the way Whisper emits text.

Whisper writes a segment's text with a leading space, so every utterance is
encoded as ``" " + text`` without special tokens.  The tokenizer's
*fingerprint* (sha256 of its vocabulary) goes into every token map so that a
map built for one vocabulary is never used with another.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Sequence

from tokenizers import Tokenizer

from tokenmap.maps.schema import vocab_fingerprint
from tokenmap.models import resolve_model

log = logging.getLogger("tokenmap")

#: Whisper's end-of-text id tells the vocabularies apart.
_EOT_FAMILY = {50257: "whisper-multilingual", 50256: "whisper-en"}


class TokenizerError(RuntimeError):
    """The tokenizer could not be found or loaded (one-line message)."""


def repair_merges(spec: dict) -> list[str]:
    """Restore BPE merges missing from a ``tokenizer.json`` dict (in place); return them.

    In a GPT-2-style byte-level vocabulary, token ``i >= 256`` is made by merge
    rank ``i - 256``. Some Whisper ``tokenizer.json`` files (e.g. the one of
    faster-whisper's ``base``) lost the first merge, ``"Ġ t"``, so ``" the"``
    encodes as ``[220, 3322]`` while Whisper itself emits ``[264]``; a map built
    from that would draft tokens the model never produces. A token with no
    merge that yields it gets one back at its rank.

    >>> vocab = {"a": 0, "b": 1, "c": 2, "ab": 256, "bc": 257}
    >>> spec = {"model": {"type": "BPE", "vocab": vocab, "merges": ["b c"]}}
    >>> repair_merges(spec), spec["model"]["merges"]
    (['a b'], ['a b', 'b c'])
    """
    model = spec.get("model") or {}
    merges, vocab = model.get("merges"), model.get("vocab")
    if model.get("type") != "BPE" or not merges or not isinstance(vocab, dict):
        return []
    as_pairs = not isinstance(merges[0], str)
    pairs = [tuple(m) if as_pairs else tuple(m.split(" ", 1)) for m in merges]
    made = {a + b for a, b in pairs}
    added = {t["id"] for t in spec.get("added_tokens", [])}
    missing = sorted((i, t) for t, i in vocab.items() if i >= 256 and i not in added and len(t) > 1
                     and t not in made)
    restored = []
    for i, token in missing:
        split = next(((token[:k], token[k:]) for k in range(1, len(token))
                      if token[:k] in vocab and token[k:] in vocab), None)
        if split is None or i - 256 > len(pairs):
            continue
        pairs.insert(i - 256, split)
        restored.append(" ".join(split))
    if restored:
        model["merges"] = [list(p) for p in pairs] if as_pairs else [" ".join(p) for p in pairs]
    return restored


def model_dir_for(name_or_path: str | os.PathLike) -> Path:
    """Return the model directory for a model name or a directory path."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    try:
        return Path(resolve_model(str(name_or_path)))
    except Exception as exc:  # ModelError and friends: keep it to one line
        raise TokenizerError(f"cannot resolve model {name_or_path!r}: {exc}") from exc


class TextTokenizer:
    """A ``tokenizers.Tokenizer`` plus its fingerprint and model family."""

    CACHE_LIMIT = 1_000_000

    def __init__(self, tokenizer, repairs: Sequence[str] = ()) -> None:
        self._tok = tokenizer
        self._cache: dict[str, list[int]] = {}
        self.repairs = list(repairs)  # merges restored by :func:`repair_merges`
        vocab = tokenizer.get_vocab(with_added_tokens=True)
        self.fingerprint = vocab_fingerprint(tokenizer)
        self.vocab_size = len(vocab)
        self.family = _EOT_FAMILY.get(vocab.get("<|endoftext|>"), "unknown")

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "TextTokenizer":
        """Load ``tokenizer.json`` from a file path."""
        path = Path(path)
        if not path.is_file():
            raise TokenizerError(f"no tokenizer at {path}")
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
            repairs = repair_merges(spec)
            tok = Tokenizer.from_str(json.dumps(spec))
        except Exception as exc:
            raise TokenizerError(f"cannot load tokenizer {path}: {exc}") from exc
        if repairs:
            log.info("%s: restored %d missing BPE merge(s) (%s) so text encodes as Whisper emits it",
                     path, len(repairs), ", ".join(repairs[:5]))
        return cls(tok, repairs=repairs)

    @classmethod
    def from_model(cls, name_or_path: str | os.PathLike) -> "TextTokenizer":
        """Load the tokenizer of a model name (via ``resolve_model``) or directory."""
        return cls.from_file(model_dir_for(name_or_path) / "tokenizer.json")

    def encode(self, text: str) -> list[int]:
        """Token ids of one utterance, as Whisper would emit it (leading space)."""
        return self._tok.encode(" " + text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of many utterances, equal to ``[self.encode(t) for t in texts]``.

        Whisper's byte-level pre-tokenizer never joins two space-separated
        words, so for single-spaced text the ids of ``" w1 w2"`` are the ids of
        ``" w1"`` followed by those of ``" w2"``: words are tokenized once and
        cached.  Other texts are encoded whole.
        """
        cache = self._cache
        if len(cache) > self.CACHE_LIMIT:
            cache.clear()
        out: list[list[int]] = []
        missing: set[str] = set()
        split = []
        for t in texts:
            if not t.isprintable() or "  " in t or t[:1] == " " or t[-1:] == " " or not t:
                split.append(None)
                continue
            words = t.split(" ")
            split.append(words)
            missing.update(w for w in words if w not in cache)
        if missing:
            order = sorted(missing)
            for w, enc in zip(order, self._tok.encode_batch([" " + w for w in order], add_special_tokens=False)):
                cache[w] = enc.ids
        for t, words in zip(texts, split):
            if words is None:
                out.append(self.encode(t))
            else:
                ids: list[int] = []
                for w in words:
                    ids.extend(cache[w])
                out.append(ids)
        return out

    def encode_prefix(self, text: str) -> list[int]:
        """Ids of a text prefix; an empty prefix gives ``[]``."""
        return self.encode(text) if text.strip() else []

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ids (special tokens kept)."""
        return self._tok.decode(list(ids), skip_special_tokens=False)
