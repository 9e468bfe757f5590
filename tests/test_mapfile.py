"""Token-map file format: round trip, lookup, and a fuzzed loader."""

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tokenmap.maps.mapfile import TokenMap, key_hash, key_hash_rows, load_maps, write_map, write_map_set
from tokenmap.maps.schema import MAGIC, MapFormatError

BOS = TokenMap.BOS


def tiny_arrays():
    """Keys [BOS] -> [5, 6]; [7] -> [8] then [9]; [BOS, 7] -> no candidate (order 2)."""
    rows1 = np.array([[BOS, 0xFFFFFFFE], [7, 0xFFFFFFFE]], dtype=np.uint32)
    h1 = key_hash_rows(rows1[:, :1])
    o1 = np.argsort(h1)
    rows2 = np.array([[BOS, 7]], dtype=np.uint32)
    cands = {BOS: [[5, 6]], 7: [[8], [9]]}
    key_tokens = np.concatenate([rows1[o1], rows2])
    cand_offsets, tok_offsets, tokens = [0], [0], []
    for row in key_tokens[:2]:
        for c in cands[int(row[0])]:
            tokens += c
            tok_offsets.append(len(tokens))
        cand_offsets.append(len(tok_offsets) - 1)
    cand_offsets.append(cand_offsets[-1])
    n_c = len(tok_offsets) - 1
    return {
        "key_hash": np.concatenate([h1[o1], key_hash_rows(rows2)]),
        "key_tokens": key_tokens, "key_count": np.array([10, 4, 3], dtype=np.uint32),
        "order_offsets": np.array([0, 2, 3], dtype=np.int64),
        "cand_offsets": np.array(cand_offsets, dtype=np.int64),
        "cand_tok_offsets": np.array(tok_offsets, dtype=np.int64),
        "cand_tokens": np.array(tokens, dtype=np.uint32),
        "cand_expected": np.linspace(1, 2, n_c).astype(np.float32),
        "cand_saving": np.linspace(3, 1, n_c).astype(np.float32),
    }


HEADER = {"fingerprint": "ab" * 32, "order": 2, "model": "base", "family": "whisper-multilingual", "vocab_size": 1000}


@pytest.fixture()
def tiny_map(tmp_path):
    path = tmp_path / "t.tmap"
    write_map(path, HEADER, tiny_arrays())
    return path


def test_hash_scalar_matches_vectorised():
    rows = np.array([[1, 2, 3], [BOS, 0, 50000]], dtype=np.uint32)
    assert key_hash_rows(rows).tolist() == [key_hash([1, 2, 3]), key_hash([BOS, 0, 50000])]
    assert key_hash([1]) != key_hash([1, 0])


def test_round_trip_and_lookup(tiny_map):
    tm = TokenMap.load(tiny_map, "ab" * 32)
    assert tm.header["model"] == "base" and tm.order == 2
    assert tm.draft([BOS]) == [5, 6]
    assert tm.draft([1, 2, 7]) == [8]            # back-off to the 1-token key
    assert [c[0] for c in tm.candidates([7])] == [[8], [9]]
    assert tm.draft([BOS, 7]) == []              # stored key without a candidate: no back-off
    assert tm.draft([3]) == [] and tm.draft([]) == []
    assert tm.keys_per_order() == [2, 1] and tm.num_candidates == 3
    assert tm.candidates_per_key() == {0: 1, 1: 1, 2: 1}


def test_layout_alignment_and_header(tiny_map):
    raw = tiny_map.read_bytes()
    assert raw[:8] == MAGIC
    version, hlen = struct.unpack_from("<II", raw, 8)
    assert version == 4  # NGRAM_VERSION: one n-gram map
    import json
    header = json.loads(raw[16:16 + hlen])
    assert header["data_start"] % 64 == 0
    assert all(a["offset"] % 64 == 0 for a in header["arrays"])


def test_foreign_tokenizer_message(tiny_map):
    with pytest.raises(MapFormatError, match="made for another tokenizer.*tokenmap build --model base"):
        TokenMap.load(tiny_map, "cd" * 32)


@pytest.mark.parametrize("mutate, message", [
    (lambda b: b"", "bad magic"),
    (lambda b: b"PK\x03\x04" + b[4:], "bad magic"),
    (lambda b: b[:5], "truncated"),
    (lambda b: b[:100], "truncated"),
    (lambda b: b[:-1], "checksum|truncated"),
    (lambda b: b[:-40] + bytes([b[-40] ^ 1]) + b[-39:], "checksum"),
    (lambda b: b[:8] + struct.pack("<I", 99) + b[12:], "format version 99"),
])
def test_bad_files(tiny_map, mutate, message):
    tiny_map.write_bytes(mutate(tiny_map.read_bytes()))
    with pytest.raises(MapFormatError, match=message):
        TokenMap.load(tiny_map)


def test_missing_file(tmp_path):
    with pytest.raises(MapFormatError, match="cannot read"):
        TokenMap.load(tmp_path / "nope.tmap")


def _check_loader(path):
    """Loading either works (and lookups stay in bounds) or raises MapFormatError."""
    try:
        maps = load_maps(path, verify=False)
    except MapFormatError:
        return
    for tm in maps:
        for ctx in ([BOS], [7], [BOS, 7], [1, 2, 3]):
            tm.draft(ctx)
            tm.candidates(ctx)


def _set(path):
    """A map set: section "a/en" is the tiny map, "b/fr" the tiny map with every draft token + 100."""
    shifted = dict(tiny_arrays(), cand_tokens=tiny_arrays()["cand_tokens"] + 100)
    write_map_set(path, HEADER, [({"task": "a/en", "order": 2, "min_count": 2}, tiny_arrays()),
                                 ({"task": "b/fr", "order": 2, "min_count": 1}, shifted)])
    return path


def test_map_set_round_trip(tmp_path):
    path = _set(tmp_path / "s.tmap")
    assert struct.unpack_from("<I", path.read_bytes(), 8)[0] == 2  # SET_VERSION
    maps = load_maps(path, "ab" * 32)
    assert [m.task for m in maps] == ["a/en", "b/fr"]
    assert maps[0].draft([BOS]) == [5, 6] and maps[1].draft([BOS]) == [105, 106]
    assert maps[1].header["min_count"] == 1 and maps[1].header["model"] == "base"  # section over file header
    assert TokenMap.load(path, section="b/fr").draft([7]) == [108]
    assert TokenMap.load(path, section=0).task == "a/en"
    with pytest.raises(MapFormatError, match="map set of 2 task sections .a/en, b/fr.*load_maps"):
        TokenMap.load(path)
    with pytest.raises(MapFormatError, match="no section 'c/de'"):
        TokenMap.load(path, section="c/de")
    with pytest.raises(MapFormatError, match="another tokenizer"):
        load_maps(path, "cd" * 32)


def test_load_maps_of_a_single_map(tiny_map):
    (tm,) = load_maps(tiny_map)
    assert tm.task is None and tm.draft([BOS]) == [5, 6]


def test_map_set_needs_distinct_tasks(tmp_path):
    with pytest.raises(ValueError, match="own task name"):
        write_map_set(tmp_path / "x.tmap", HEADER, [({"task": "a", "order": 2}, tiny_arrays())] * 2)


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_loader_mutations(tmp_path, data):
    """Random byte flips, truncations and header edits never crash, hang or over-allocate."""
    base = tmp_path.parent / "fuzz-base.tmap"
    if not base.exists():
        _fresh(base)
        _set(tmp_path.parent / "fuzz-set.tmap")
    raw = bytearray((tmp_path.parent / data.draw(st.sampled_from(["fuzz-base.tmap", "fuzz-set.tmap"]))).read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    path = tmp_path / "fuzz.tmap"
    path.write_bytes(bytes(raw[:cut]) if data.draw(st.booleans()) else bytes(raw))
    _check_loader(path)


def _fresh(path):
    write_map(path, HEADER, tiny_arrays())
    return path.read_bytes()


@settings(max_examples=100, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.integers(0, 2**40), min_size=1, max_size=2), offset=st.integers(-5, 2**62),
       name=st.sampled_from(["cand_tokens", "key_tokens", "key_hash", "bogus", "1.key_hash", "7.key_hash", "01.x"]),
       as_set=st.booleans())
def test_fuzz_array_table(tmp_path, shape, offset, name, as_set):
    """Hostile array tables (huge shapes/offsets, bad section prefixes) are rejected before any allocation."""
    import json
    path = tmp_path / "h.tmap"
    raw = _set(path).read_bytes() if as_set else _fresh(path)
    hlen = struct.unpack_from("<I", raw, 12)[0]
    header = json.loads(raw[16:16 + hlen])
    for spec in header["arrays"]:
        if spec["name"] == name or name == "bogus":
            spec.update(shape=shape, offset=offset, name=name)
            break
    blob = json.dumps(header).encode()
    path.write_bytes(raw[:12] + struct.pack("<I", len(blob)) + blob + raw[16 + hlen:])
    _check_loader(path)


def test_drafter_uses_the_maps_own_order(tmp_path):
    """A map of order 2 is looked up with 2 tokens of context (not a fixed 3)."""
    from tokenmap.decode.drafters import TokenMapDrafter

    class Order2:
        BOS = 0xFFFFFFFF
        order = 2

        def __init__(self):
            self.seen = []

        def draft(self, context):
            self.seen.append(list(context))
            return [9]

    m = Order2()
    d = TokenMapDrafter(m)
    assert d.draft([1, 2, 3, 4], 5) == [9]
    assert m.seen[-1] == [3, 4]
    d.draft([1], 5)
    assert m.seen[-1] == [Order2.BOS, 1]


def test_a_map_of_format_1_says_to_rebuild_it(tmp_path):
    """The 3-token n-gram maps of earlier releases are refused in one line that names the fix."""
    path = tmp_path / "old.tmap"
    write_map(path, HEADER, tiny_arrays(), version=1)
    for load in (TokenMap.load, load_maps):
        with pytest.raises(MapFormatError, match=r"format 1 .*no longer reads: rebuild it with `tokenmap build`"):
            load(path)
