"""A map drafter follows words the model spells in other pieces than the map's (tokenmap.decode.follow.WordSync)."""

import dataclasses

import numpy as np
import pytest

from tokenmap.decode.follow import FollowDrafter
from tokenmap.decode.special import Spelling

#: a toy vocabulary: the map's canonical " cancell" "etto", and the pieces the model may write instead
VOCAB = ["Ġpress", "Ġthe", "Ġcancell", "etto", "Ġkey", ".", "Ġcan", "ce", "ll", "Ġan", "Ġlater",
         "<|endoftext|>", "<|bos|>", "<|sep|>"]
ID = {t: i for i, t in enumerate(VOCAB)}
EOT, BOS, SEP = ID["<|endoftext|>"], ID["<|bos|>"], ID["<|sep|>"]


def _ids(*texts):
    return [ID[t] for t in texts]


@pytest.fixture
def toy_map():
    from tokenmap.maps.suffixmap import TokenMap

    # " press the cancelletto key." once; " an etto later." twice, so "etto" alone goes on with " later"
    utterances = [_ids("Ġpress", "Ġthe", "Ġcancell", "etto", "Ġkey", ".")] + [_ids("Ġan", "etto", "Ġlater", ".")] * 2
    stream = [t for u in utterances for t in [BOS, *u, SEP]]
    return TokenMap.from_stream(np.array(stream, dtype=np.uint32), bos=BOS, sep=SEP, depth=12)


def _drafter(token_map, spelled: bool):
    return FollowDrafter(token_map, timestamp_begin=None, eot=EOT, spelling=Spelling(VOCAB, EOT) if spelled else None)


def test_the_next_draft_finishes_a_word_begun_in_other_pieces(toy_map):
    written = _ids("Ġpress", "Ġthe", "Ġcan")  # the model's " can" where the map has " cancell"
    spelled = _drafter(toy_map, True)
    assert spelled.draft(written, 8)[:4] == _ids("ce", "ll", "etto", "Ġkey")
    assert spelled.draft(written + _ids("ce"), 8)[:3] == _ids("ll", "etto", "Ġkey")
    assert _drafter(toy_map, False).draft(written, 8)[:1] != _ids("ce")


def test_after_a_word_in_other_pieces_the_context_is_the_sentence_again(toy_map):
    written = _ids("Ġpress", "Ġthe", "Ġcan", "ce", "ll", "etto")
    assert _drafter(toy_map, True).draft(written, 8) == _ids("Ġkey", ".")
    assert _drafter(toy_map, False).draft(written, 8)[:1] == _ids("Ġlater")  # "etto" alone: the other utterance


def test_pieces_take_the_longest_vocabulary_entry_first():
    spelling = Spelling(["Ġcan", "ce", "ll", "cell", "Ġ,", "ab", "<|endoftext|>"], end=6)
    assert spelling.pieces("cellab") == [3, 5]
    assert spelling.pieces("cex") is None
    assert spelling.text(6) == "" and spelling.starts_word(4) and not spelling.starts_word(1)


@pytest.mark.model
def test_the_model_vocabulary_resynchronises_an_italian_word(base_model_dir, tmp_path):
    from tokenmap import build_map, load_maps
    from tokenmap.decode.drafters import map_drafter
    from tokenmap.decode.special import SpecialTokens

    corpus = tmp_path / "it.txt"
    corpus.write_text("Premere il tasto cancelletto per uscire.\n", encoding="utf-8")
    build_map([corpus], tmp_path / "it.tmap", model=str(base_model_dir))
    token_map = load_maps(str(tmp_path / "it.tmap"))[0]
    special = SpecialTokens.from_model_dir(str(base_model_dir))
    spelling = special.spelling
    start = [special.timestamp_begin]
    canonical = map_drafter(token_map, special).draft(start, 24)  # the one utterance, in the map's pieces
    texts = [spelling.text(t) for t in canonical]
    assert "Ġcancell" in texts and texts[texts.index("Ġcancell") + 1] == "etto"
    before = start + canonical[: texts.index("Ġcancell")]
    written = before + spelling.pieces("Ġcan") + spelling.pieces("ce")
    draft = map_drafter(token_map, special).draft(written, 24)
    assert [spelling.text(t) for t in draft[:3]] == ["ll", "etto", "Ġper"]
    ids_only = map_drafter(token_map, dataclasses.replace(special, spelling=None)).draft(written, 24)
    assert [spelling.text(t) for t in ids_only[:2]] != ["ll", "etto"]
