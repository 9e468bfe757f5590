"""Builder: determinism, context counts, style bridge, tokenizer wrapper."""

from pathlib import Path

import pytest

from tokenmap.build.builder import BuildError, BuildOptions, build_map
from tokenmap.build.style import NO_BRIDGE, StyleOptions, bridge
from tokenmap.maps.mapfile import load_maps
from tokenmap.models import resolve_model
from tokenmap_bench.synthetic import synthetic_corpus

MODEL = resolve_model("base", download=False)  # assembled by `make`


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "maint.txt"
    path.write_text("\n".join(synthetic_corpus(3000, seed=3)) + "\n", encoding="utf-8")
    return path


def _build(corpus, out, tok, **kw):
    return build_map([corpus], out, tokenizer=tok, model=str(MODEL), options=BuildOptions(jobs=1, **kw))


def test_build_and_draft(tmp_path, corpus, tok):
    from tokenmap.decode.follow import FollowDrafter
    from tokenmap.maps.mapfile import load_maps
    from tokenmap.maps.schema import MAP_VERSION
    from tokenmap.maps.suffixmap import TokenMap

    result = _build(corpus, tmp_path / "m.tmap", tok)
    assert result.utterances == 3000 and result.contexts > 100 and result.with_continuation > 100
    assert Path(result.path).read_bytes()[8] == MAP_VERSION
    (sm,) = load_maps(result.path, tok.fingerprint)
    assert isinstance(sm, TokenMap) and sm.header["family"] == "whisper-multilingual"
    assert sm.header["corpus_sha256"][str(corpus)] and sm.header["depth"] == 24
    ids = tok.encode("Seal shows wear, order a spare.")
    draft = FollowDrafter(sm, timestamp_begin=None, eot=sm.bos).draft(ids[:3], 24)
    assert len(draft) >= 3 and draft == (ids + [sm.bos])[3:3 + len(draft)]  # the training sentence goes on
    assert result.self_test["tokens_per_pass"] > 2.0


def test_determinism_byte_identical(tmp_path, corpus, tok, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    a = _build(corpus, tmp_path / "a.tmap", tok)
    b = _build(corpus, tmp_path / "b.tmap", tok)
    assert Path(a.path).read_bytes() == Path(b.path).read_bytes()
    assert load_maps(a.path)[0].header["created"] == "2023-11-14T22:13:20Z"


def test_parallel_equals_serial(tmp_path, corpus, tok, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    a = _build(corpus, tmp_path / "a.tmap", tok)
    b = build_map([corpus], tmp_path / "b.tmap", tokenizer=tok, model=str(MODEL), options=BuildOptions(jobs=2))
    assert Path(a.path).read_bytes() == Path(b.path).read_bytes()


def test_refuses_to_overwrite(tmp_path, corpus, tok):
    from tokenmap.maps.mapfile import load_maps

    out = tmp_path / "m.tmap"
    out.write_bytes(b"keep me")
    with pytest.raises(BuildError, match="already exists.*--force"):
        _build(corpus, out, tok)
    assert out.read_bytes() == b"keep me"
    build_map([corpus], out, tokenizer=tok, options=BuildOptions(jobs=1), force=True)
    assert load_maps(out)[0].num_nodes > 0


def test_min_count_prunes_rare_contexts(tmp_path, corpus, tok):
    from tokenmap.maps.mapfile import load_maps

    loose = load_maps(_build(corpus, tmp_path / "a.tmap", tok, min_count=1).path)[0]
    strict = load_maps(_build(corpus, tmp_path / "b.tmap", tok, min_count=50).path)[0]
    assert strict.num_nodes < loose.num_nodes and int(strict.arrays["node_count"].min()) >= 50
    assert loose.header["min_count"] == 1 and strict.header["min_count"] == 50
    with pytest.raises(BuildError, match="no map written"):  # a map without contexts would never draft
        _build(corpus, tmp_path / "d.tmap", tok, min_count=10**6)
    assert not (tmp_path / "d.tmap").exists()


def test_empty_corpus_is_an_error(tmp_path, tok):
    from tokenmap.build.corpus import CorpusError
    empty = tmp_path / "e.txt"
    empty.write_text("\n\n")
    with pytest.raises(CorpusError, match="no usable utterances"):
        build_map([empty], tmp_path / "m.tmap", tokenizer=tok, options=BuildOptions(jobs=1))
    assert not (tmp_path / "m.tmap").exists()


@pytest.mark.parametrize("raw, expected", [
    ("pressure twenty two point five bar", "Pressure 22.5 bar."),
    ("replace valve three", "Replace valve 3."),
    ("one of the pumps is loud", "One of the pumps is loud."),
    ("two hundred and five units", "205 units."),
    ("seventy-three degrees", "73 degrees."),
    ("code two three", "Code two three."),
    ("is it ok?", "Is it ok?"),
    ("  spaced   out  ", "Spaced out."),
    ("three thousand four hundred twelve rpm", "3412 rpm."),
    ("temperature one hundred point zero five", "Temperature 100.05."),
    ("ending with comma,", "Ending with comma."),
])
def test_style_bridge_table(raw, expected):
    assert bridge(raw) == expected


def test_style_bridge_switches():
    assert bridge("valve three", StyleOptions(numbers=False)) == "Valve three."
    assert bridge("valve three", StyleOptions(capitalize=False, final_period=False)) == "valve 3"
    assert bridge("valve three", NO_BRIDGE) == "valve three"


def test_encode_batch_equals_encode(tok):
    texts = list(synthetic_corpus(200, seed=5)) + ["it's   odd", "naïve café 's", "日本語 テスト", "x\ty", ""]
    assert tok.encode_batch(texts) == [tok.encode(t) for t in texts]
    assert tok.family == "whisper-multilingual" and len(tok.fingerprint) == 64


def test_tokenizer_fingerprints_differ():
    en = resolve_model("tiny.en", download=False) / "tokenizer.json"
    from tokenmap.textok import TextTokenizer
    a, b = TextTokenizer.from_file(MODEL / "tokenizer.json"), TextTokenizer.from_file(en)
    assert a.fingerprint != b.fingerprint and b.family == "whisper-en"
