"""Token-map file format: round trip, map sets, retired formats, and a fuzzed loader."""

import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenmap.maps.mapfile import load_maps, write_map, write_map_set
from tokenmap.maps.schema import MAGIC, MAP_VERSION, SET_VERSION, MapFormatError
from tokenmap.maps.suffixmap import TokenMap

VOCAB = 1000
BOS, SEP = VOCAB, VOCAB + 1  # the trie's markers: the first ids past the vocabulary
HEADER = {"fingerprint": "ab" * 32, "model": "base", "family": "whisper-multilingual", "vocab_size": VOCAB,
          "depth": 4, "bos": BOS, "sep": SEP}


def tiny_arrays(shift=0):
    """The trie of two utterances ``5 6 7`` and ``5 6 8`` (every token + ``shift``)."""
    stream = np.array([BOS, 5, 6, 7, SEP, BOS, 5, 6, 8, SEP, BOS, 5, 6, 7, SEP], dtype=np.uint32)
    stream[(stream != BOS) & (stream != SEP)] += shift
    return TokenMap.from_stream(stream, BOS, SEP, depth=4).arrays


@pytest.fixture()
def tiny_map(tmp_path):
    path = tmp_path / "t.tmap"
    write_map(path, HEADER, tiny_arrays())
    return path


def test_round_trip_and_lookup(tiny_map):
    (tm,) = load_maps(tiny_map, "ab" * 32)
    assert tm.header["model"] == "base" and tm.depth == 4 and tm.task is None
    node = tm.walk([BOS, 5, 6])
    assert tm.count(node) == 3 and tm.token(tm.best(node)) == 7 and tm.count(tm.best(node)) == 2
    assert tm.walk([3]) == 0                      # unseen: the root
    assert tm.count(tm.walk([9, 5])) == 3         # backs off to the longest context held
    (again,) = load_maps(tiny_map, "ab" * 32)
    for name, arr in tiny_arrays().items():
        assert np.array_equal(again.arrays[name], arr), name


def test_layout_alignment_and_header(tiny_map):
    raw = tiny_map.read_bytes()
    assert raw[:8] == MAGIC
    version, hlen = struct.unpack_from("<II", raw, 8)
    assert version == MAP_VERSION == 3
    header = json.loads(raw[16:16 + hlen])
    assert header["data_start"] % 64 == 0
    assert all(a["offset"] % 64 == 0 for a in header["arrays"])


def test_foreign_tokenizer_message(tiny_map):
    with pytest.raises(MapFormatError, match="made for another tokenizer.*tokenmap build --model base"):
        load_maps(tiny_map, "cd" * 32)


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
        load_maps(tiny_map)


def test_missing_file(tmp_path):
    with pytest.raises(MapFormatError, match="cannot read"):
        load_maps(tmp_path / "nope.tmap")


def _check_loader(path):
    """Loading either works (and lookups stay in bounds) or raises MapFormatError."""
    try:
        maps = load_maps(path, verify=False)
    except MapFormatError:
        return
    for tm in maps:
        for ctx in ([BOS], [5], [BOS, 5, 6], [1, 2, 3], [SEP, 7]):
            node = tm.walk(ctx)
            tm.count(node)
            tm.next_choice(node)


def _set(path):
    """A map set: section "a/en" is the tiny map, "b/fr" the tiny map with every token + 100."""
    write_map_set(path, HEADER, [({"task": "a/en", "min_count": 2}, tiny_arrays()),
                                 ({"task": "b/fr", "min_count": 1}, tiny_arrays(100))])
    return path


def test_map_set_round_trip(tmp_path):
    path = _set(tmp_path / "s.tmap")
    assert struct.unpack_from("<I", path.read_bytes(), 8)[0] == SET_VERSION == 6
    maps = load_maps(path, "ab" * 32)
    assert [m.task for m in maps] == ["a/en", "b/fr"] and all(isinstance(m, TokenMap) for m in maps)
    assert maps[0].count(maps[0].walk([BOS, 5, 6])) == 3 and maps[1].count(maps[1].walk([BOS, 105, 106])) == 3
    assert maps[1].walk([BOS, 5]) == 0  # "5" is not in section b/fr: back to the root
    assert maps[1].header["min_count"] == 1 and maps[1].header["model"] == "base"  # section over file header
    with pytest.raises(MapFormatError, match="another tokenizer"):
        load_maps(path, "cd" * 32)


def test_load_maps_of_a_single_map(tiny_map):
    (tm,) = load_maps(tiny_map)
    assert tm.task is None and tm.count(tm.walk([BOS, 5])) == 3


def test_map_set_needs_distinct_tasks(tmp_path):
    with pytest.raises(ValueError, match="own task name"):
        write_map_set(tmp_path / "x.tmap", HEADER, [({"task": "a"}, tiny_arrays())] * 2)


@pytest.mark.parametrize("version, what", [(1, "an n-gram token map"), (2, "a map set of n-gram sections"),
                                           (4, "an n-gram token map")])
def test_a_retired_format_says_to_rebuild_it(tmp_path, version, what):
    """The n-gram maps of earlier releases are refused in one line that names the fix."""
    path = tmp_path / "old.tmap"
    write_map(path, HEADER, tiny_arrays(), version=version)
    with pytest.raises(MapFormatError, match=rf"{what} of format {version}, which this tokenmap no longer "
                                             r"reads: rebuild it with `tokenmap build"):
        load_maps(path)


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
       name=st.sampled_from(["edge_key", "node_count", "node_depth", "bogus", "1.edge_key", "7.edge_key", "01.x"]),
       as_set=st.booleans())
def test_fuzz_array_table(tmp_path, shape, offset, name, as_set):
    """Hostile array tables (huge shapes/offsets, bad section prefixes) are rejected before any allocation."""
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
