"""Hostile token maps with valid checksums: loading rejects them in one line, never crashes.

The fuzz tests build maps through the public writers (``write_map``, ``write_map_set``) from random
headers and arrays, and rewrite the arrays of a real built map in place (the checksum recomputed),
so they hold for both files the loader reads: one token map (format 3) and a map set of token maps
(format 6), both of the layout :data:`tokenmap.maps.schema.LAYOUT`.
"""

import hashlib
import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenmap.build.builder import BuildOptions, build_map
from tokenmap.decode.follow import FollowDrafter
from tokenmap.maps.mapfile import load_maps, write_map, write_map_set
from tokenmap.maps.schema import SCHEMA, MapFormatError
from tokenmap_bench.synthetic import synthetic_corpus

SENTENCES = list(synthetic_corpus(400, seed=5))
EOT = 50257  # Whisper's <|endoftext|>: a map's drafter never proposes an id at or above it


@pytest.fixture(scope="module", params=["map", "set"])
def small_map(request, tmp_path_factory, tok):
    """A real map of 400 synthetic maintenance lines: the map `build` writes, or a map set whose one
    section is that map."""
    tmp = tmp_path_factory.mktemp("small")
    (tmp / "c.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    built = Path(build_map([tmp / "c.txt"], tmp / "small.tmap", tokenizer=tok, options=BuildOptions(jobs=1)).path)
    if request.param == "map":
        return built
    (tm,) = load_maps(built)
    header = {k: v for k, v in tm.header.items() if k not in ("arrays", "data_start", "format_version")}
    write_map_set(tmp / "set.tmap", header, [({"task": "maint/en"}, tm.arrays)])
    return tmp / "set.tmap"


def base(name: str) -> str:
    """``edge_key`` of ``edge_key`` and of a set's ``0.edge_key``."""
    return name.rpartition(".")[2]


@pytest.fixture(scope="module")
def contexts(tok):
    """Contexts a decoder asks the map about: every prefix of a few training lines."""
    out = []
    for text in SENTENCES[:4]:
        ids = tok.encode(text)
        out += [ids[:i] for i in range(len(ids) + 1)]
    return out


def rewrite(src, dst, edit):
    """Copy a map, letting ``edit(name, view)`` change each array in place; recompute the checksum."""
    raw = bytearray(open(src, "rb").read())  # noqa: SIM115
    hlen = struct.unpack_from("<I", raw, 12)[0]
    header = json.loads(raw[16:16 + hlen])
    for spec in header["arrays"]:
        count = int(np.prod(spec["shape"], dtype=np.int64))
        start = header["data_start"] + spec["offset"]
        view = np.frombuffer(raw, dtype=spec["dtype"], count=count, offset=start).reshape(spec["shape"])
        edit(spec["name"], view)
    raw[-32:] = hashlib.sha256(bytes(raw[:-32])).digest()
    open(dst, "wb").write(bytes(raw))
    return dst


def assert_safe(maps, limit, contexts):
    """Every token id of every map is within ``limit`` (or the trie's BOS and SEP), and so is every draft."""
    for tm in maps:
        assert ((tm.arrays["edge_key"] & np.uint64(0xFFFFFFFF)) <= limit + 1).all()
        drafter = FollowDrafter(tm, timestamp_begin=None, eot=min(EOT, limit))
        for ctx in contexts:
            drafter.reset()
            assert all(0 <= t <= min(EOT, limit) for t in drafter.draft(ctx, 24))


def load_or_reject(path, contexts, fingerprint=None, vocab_size=None):
    """Load either fails with MapFormatError or gives maps whose drafts stay in the vocabulary."""
    try:
        maps = load_maps(path, fingerprint, vocab_size=vocab_size)
    except MapFormatError as exc:
        assert "\n" not in str(exc)
        return None
    limit = vocab_size if vocab_size is not None else maps[0].header["vocab_size"]
    assert_safe(maps, limit, contexts)
    return maps


@pytest.mark.parametrize("value", [2**31, 2**32 - 3, 50366])
def test_out_of_range_ids_are_rejected(small_map, tmp_path, tok, value):
    name = "edge_key"

    def edit(n, view):
        if base(n) == name:  # the token is the key's low 32 bits
            view[...] = (view & np.uint64(0xFFFFFFFF00000000)) | np.uint64(value)

    bad = rewrite(small_map, tmp_path / "bad.tmap", edit)
    for vocab in (tok.vocab_size, None):  # the tokenizer's size, or the one the header records
        with pytest.raises(MapFormatError, match=f"{name}.*token id {value} outside the vocabulary of 50364"):
            load_maps(bad, tok.fingerprint, vocab_size=vocab)


def test_trie_structure_is_checked(tmp_path, tok):
    tmp = tmp_path
    (tmp / "c.txt").write_text("\n".join(SENTENCES[:50]) + "\n", encoding="utf-8")
    path = build_map([tmp / "c.txt"], tmp / "small.tmap", tokenizer=tok, options=BuildOptions(jobs=1)).path
    edits = {"node_link": lambda v: v.__setitem__(-1, len(v)), "node_best": lambda v: v.__setitem__(0, len(v)),
             "edge_key": lambda v: v.__setitem__(slice(None), v[::-1].copy()),
             "node_depth": lambda v: v.__setitem__(-1, 200)}
    for name, change in edits.items():
        bad = rewrite(path, tmp / f"{name}.tmap", lambda n, view: change(view) if n == name else None)
        with pytest.raises(MapFormatError, match="corrupt token map"):
            load_maps(bad, vocab_size=tok.vocab_size)


def test_vocabulary_must_match_the_tokenizer(small_map, tok):
    with pytest.raises(MapFormatError, match="vocabulary of 50364 tokens, the tokenizer has 50363"):
        load_maps(small_map, vocab_size=50363)
    (tm,) = load_maps(small_map, tok.fingerprint, vocab_size=tok.vocab_size)
    assert tm.num_nodes > 0


def _random_values(rng, dtype, n, vocab):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        pool = np.array([0.0, 1.5, -1.0, np.nan, np.inf, -np.inf, 3e38], dtype=dt)
        return np.where(rng.random(n) < 0.5, rng.random(n) * 4, rng.choice(pool, n)).astype(dt)
    info = np.iinfo(dt)
    pool = [v for v in (0, 1, 2, 3, vocab - 1, vocab, vocab + 1, 2**31 - 1, 2**31, 0xFFFFFFFE, 0xFFFFFFFF,
                        info.max, info.min, -1) if info.min <= v <= info.max]
    small = rng.integers(0, 8, n)
    return np.where(rng.random(n) < 0.5, small, rng.choice(np.array(pool, dtype=object), n)).astype(dt)


def _mutate(rng, arrays, draw, vocab):
    """A few random edits of ``arrays``: values replaced, an array filled with one value, cut, grown,
    replaced or dropped."""
    arrays = {k: np.array(v) for k, v in arrays.items()}
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(sorted(arrays)))
        a = arrays[name]
        kind = draw(st.sampled_from(["values", "values", "fill", "cut", "grow", "replace", "drop"]))
        if kind == "values" and a.size:
            idx = rng.integers(0, a.size, draw(st.integers(1, 3)))
            a.reshape(-1)[idx] = _random_values(rng, a.dtype, len(idx), vocab)
        elif kind == "fill":
            a[...] = _random_values(rng, a.dtype, 1, vocab)[0]
        elif kind == "cut" and len(a):
            arrays[name] = a[:-1]
        elif kind == "grow":
            arrays[name] = np.concatenate([a, a[-1:] if len(a) else np.zeros((1,) + a.shape[1:], a.dtype)])
        elif kind == "replace":
            shape = tuple(draw(st.integers(0, 6)) for _ in range(a.ndim))
            arrays[name] = _random_values(rng, a.dtype, int(np.prod(shape)), vocab).reshape(shape)
        elif kind == "drop":
            del arrays[name]
    return arrays


def _edge_values(dtype, vocab):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return [np.nan, np.inf, -1.0, 0.0]
    info = np.iinfo(dt)
    return [v for v in (0, 1, 2, vocab - 1, vocab, vocab + 1, vocab + 2, 2**31, info.max, -1, info.min)
            if info.min <= v <= info.max]


def test_arrays_set_to_edge_values(small_map, contexts, tok, tmp_path):
    """Each array of a real map, all of it or its first or last entry set to 0, 1, -1, the vocabulary
    size, 2**31, its dtype's limits, NaN...: rejected, or safe to draft from."""
    raw = open(small_map, "rb").read()
    table = json.loads(raw[16:16 + struct.unpack_from("<I", raw, 12)[0]])["arrays"]
    for spec in table:
        for value in _edge_values(spec["dtype"], tok.vocab_size):
            for where in (slice(None), 0, -1):
                def edit(name, view):
                    if name == spec["name"] and view.size:
                        view.reshape(-1)[where] = value

                path = rewrite(small_map, tmp_path / "edge.tmap", edit)
                load_or_reject(path, contexts, tok.fingerprint, tok.vocab_size)


HEADER_EDITS = st.fixed_dictionaries({}, optional={
    "depth": st.one_of(st.integers(-1, 300), st.none(), st.text(max_size=2), st.booleans()),
    "bos": st.one_of(st.integers(-1, 60000), st.none()),
    "vocab_size": st.one_of(st.integers(-2, 60000), st.sampled_from([2**31, 2**32, 2**63]), st.none(),
                            st.floats(allow_nan=True)),
    "fingerprint": st.one_of(st.none(), st.integers(), st.text(max_size=4)),
})
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                      HealthCheck.too_slow])


@FUZZ
@given(data=st.data(), seed=st.integers(0, 2**32 - 1), edits=HEADER_EDITS, as_set=st.booleans(),
       use_tokenizer=st.booleans())
def test_fuzz_written_maps(small_map, contexts, tok, tmp_path, data, seed, edits, as_set, use_tokenizer):
    """Maps written by ``write_map`` (valid checksum) from random headers and arrays: load succeeds with
    every draft in the vocabulary, or fails with MapFormatError."""
    rng = np.random.default_rng(seed)
    (real,) = load_maps(small_map)
    if data.draw(st.booleans()):  # a real map's arrays, a few of them edited
        arrays = _mutate(rng, real.arrays, data.draw, tok.vocab_size)
    else:  # arrays of random shapes and values
        arrays = {}
        for name, (dtype, ndim) in SCHEMA.items():
            shape = tuple(data.draw(st.integers(0, 5)) for _ in range(ndim))
            arrays[name] = _random_values(rng, dtype, int(np.prod(shape)), tok.vocab_size).reshape(shape)
    header = {k: v for k, v in real.header.items() if k != "arrays" and k != "data_start"}
    header.update(edits)
    path = tmp_path / "fuzz.tmap"
    try:
        if as_set:
            write_map_set(path, header, [({"task": "a/en"}, arrays)])
        else:
            write_map(path, header, arrays)
    except KeyError:  # an array name the writer does not know (a dropped-and-replaced name): nothing written
        return
    load_or_reject(path, contexts, vocab_size=tok.vocab_size if use_tokenizer else None)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), picks=st.lists(st.integers(0, 8), min_size=1, max_size=3),
       flips=st.integers(1, 6))
def test_fuzz_real_map_arrays(small_map, contexts, tok, tmp_path, seed, picks, flips):
    """A real map with random bytes written into some arrays (checksum recomputed): rejected or safe."""
    rng = np.random.default_rng(seed)
    schema = sorted(SCHEMA)
    names = {schema[i % len(schema)] for i in picks}

    def edit(name, view):
        if base(name) in names and view.size:
            raw = view.reshape(-1).view(np.uint8)
            raw[rng.integers(0, raw.size, flips)] = rng.integers(0, 256, flips, dtype=np.uint8)

    path = rewrite(small_map, tmp_path / "flipped.tmap", edit)
    load_or_reject(path, contexts, tok.fingerprint, tok.vocab_size)


@pytest.mark.model
@pytest.mark.parametrize("command", ["transcribe", "stream"])
def test_cli_rejects_out_of_range_ids_without_crashing(small_map, tmp_path, data_dir, command):
    """Candidate ids >= 2**31 made the engine crash (SIGSEGV); now one line and exit code 2."""
    def edit(n, view):
        if base(n) == "edge_key":
            view[...] = (view & np.uint64(0xFFFFFFFF00000000)) | np.uint64(2**31)

    bad = rewrite(small_map, tmp_path / "bad.tmap", edit)
    proc = subprocess.run([sys.executable, "-m", "tokenmap_cli", command, "-l", "en", "--threads", "2",
                           "--map", str(bad), str(data_dir / "en-agent-pass.flac")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    section = "section 0: " if small_map.name == "set.tmap" else ""
    assert proc.stderr.splitlines() == [f"Error: {bad}: corrupt token map ({section}array 'edge_key': token id "
                                        f"{2**31} outside the vocabulary of 50364 tokens)"]
