"""Hostile inputs: recall indexes with valid checksums but bad arrays, damaged teacher files.

Each crafted recall index goes through the same writer as a real one
(:meth:`RecallIndex.save`, or :func:`write_map` for a header it would not
write), so that its checksum is valid and only the checks of the arrays can
refuse it. Each must be refused on load with one line, never accepted and
left to fail inside the decoding loop.
"""

import gzip
import json
import tracemalloc

import numpy as np
import pytest
from click.testing import CliRunner

from tokenmap.build.corpus import MAX_LINE_BYTES, CorpusError, CorpusStats, read_corpus
from tokenmap.decode.recall import RecallDrafter, load_recall, model_fields
from tokenmap.maps.audio_fingerprints import MEL_SIZE
from tokenmap.maps.mapfile import load_maps, write_map
from tokenmap.maps.recallindex import RecallIndex
from tokenmap.maps.schema import RECALL_VERSION, MapFormatError
from tokenmap_cli.main import cli

TB = 100  # timestamp_begin of the toy index
VOCAB = 2000
HEADER = {"fingerprint": "f" * 64, "vocab_size": VOCAB, "encoder": "e", "model": "toy"}


def unit(rows: int, width: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((rows, width)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def good_arrays() -> dict:
    """Two segments of a 40-wide "encoder" (8 dimensions x 5 chunks): [7, 8] for 60 frames, [9] for 50."""
    return {"vectors": unit(2, 40), "mel": np.concatenate([unit(1, MEL_SIZE), np.zeros((1, MEL_SIZE), np.float32)]),
            "offsets": np.array([0, 3, 5], np.int64), "tokens": np.array([7, 8, TB + 60, 9, TB + 50], np.uint32)}


def save(path, header=HEADER, **changes):
    """Write an index of :func:`good_arrays` with ``changes`` through :meth:`RecallIndex.save`."""
    a = {**good_arrays(), **changes}
    RecallIndex(dict(header), a["vectors"], a["mel"], a["offsets"], a["tokens"]).save(path)
    return path


def refused(path, match, **load) -> str:
    with pytest.raises(MapFormatError) as info:
        RecallIndex.load(path, **load)
    message = str(info.value)
    # the container's array table is checked as a token map's (tokenmap.maps.mapfile), the arrays as an index's
    assert "\n" not in message and message.startswith(f"{path}: corrupt "), message
    assert match in message, message
    return message


def test_the_crafting_writer_makes_a_valid_index(tmp_path):
    index = RecallIndex.load(save(tmp_path / "good.trec"), fingerprint="f" * 64, encoder="e", vocab_size=VOCAB,
                             timestamp_begin=TB)
    assert len(index) == 2 and index.nearest(unit(2, 40)[0])[1] == [7, 8, TB + 60]


BAD = {
    "mel rows of another width": (dict(mel=unit(2, 100)), "array 'mel' has 100 entries along axis 1"),
    "fingerprints not in chunks": (dict(vectors=unit(2, 41)), "rows of 41 values, not 5 chunks"),
    "fingerprints of width 0": (dict(vectors=np.zeros((2, 0), np.float32)), "rows of 0 values"),
    "more fingerprints than segments": (dict(vectors=unit(3, 40)), "along axis 0"),
    "mel for fewer segments": (dict(mel=unit(1, MEL_SIZE)), "array 'mel' has 1 entries along axis 0"),
    "a 3-D fingerprint array": (dict(vectors=unit(2, 40).reshape(2, 8, 5)), "bad entry for array 'vectors'"),
    "NaN fingerprint": (dict(vectors=np.where(np.eye(2, 40) > 0, np.nan, unit(2, 40))), "NaN or infinite"),
    "infinite mel": (dict(mel=np.full((2, MEL_SIZE), np.inf, np.float32)), "NaN or infinite"),
    "fingerprint not of unit length": (dict(vectors=np.ones((2, 40), np.float32)), "row 0 is not a unit vector"),
    "zero encoder fingerprint": (dict(vectors=np.concatenate([unit(1, 40), np.zeros((1, 40))])),
                                 "row 1 is not a unit vector"),
    "token id past the vocabulary": (dict(tokens=np.array([7, 8, TB + 60, VOCAB, TB + 50], np.uint32)),
                                     f"token id {VOCAB} outside the vocabulary"),
    "token id 2**32 - 1": (dict(tokens=np.array([7, 8, TB + 60, 2**32 - 1, TB + 50], np.uint32)),
                           "outside the vocabulary"),
    "offsets past the tokens": (dict(offsets=np.array([0, 3, 9], np.int64)), "must run from 0 to its length 5"),
    "offsets not from 0": (dict(offsets=np.array([1, 3, 5], np.int64)), "must run from 0"),
    "negative offsets": (dict(offsets=np.array([0, -4, 5], np.int64)), "decrease"),
    "decreasing offsets": (dict(vectors=unit(3, 40), mel=unit(3, MEL_SIZE),
                                offsets=np.array([0, 4, 2, 5], np.int64)), "decrease"),
    "a segment without tokens": (dict(offsets=np.array([0, 5, 5], np.int64)), "segment 1 has no tokens"),
    "offsets for another count": (dict(offsets=np.array([0, 5], np.int64)), "array 'offsets' has 2 entries"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_crafted_index_is_refused_in_one_line(tmp_path, case):
    changes, match = BAD[case]
    path = save(tmp_path / "bad.trec", **changes)
    refused(path, match)
    refused(path, match, fingerprint="f" * 64, encoder="e", vocab_size=VOCAB, timestamp_begin=TB)


def test_segments_must_end_with_their_length_as_a_timestamp(tmp_path):
    checks = dict(vocab_size=VOCAB, timestamp_begin=TB)
    no_timestamp = save(tmp_path / "a.trec", tokens=np.array([7, 8, 60, 9, TB + 50], np.uint32))
    refused(no_timestamp, "does not end with its length as a timestamp", **checks)
    too_long = save(tmp_path / "b.trec", tokens=np.array([7, 8, TB + 1501, 9, TB + 50], np.uint32))
    refused(too_long, "does not end with its length", **checks)
    zero = save(tmp_path / "c.trec", tokens=np.array([7, 8, TB, 9, TB + 50], np.uint32))
    refused(zero, "does not end with its length", **checks)
    inside = save(tmp_path / "d.trec", tokens=np.array([7, TB + 3, TB + 60, 9, TB + 50], np.uint32))
    refused(inside, "a timestamp token inside a segment's text", **checks)
    # without the model's timestamp_begin, only what is model-independent is checked: the drafter stays in range
    index = RecallIndex.load(no_timestamp)
    frames = np.zeros((1500, 8), np.float32)
    assert RecallDrafter(index, frames, TB).draft([TB], 20) == []


def test_the_header_must_count_the_segments(tmp_path):
    path = tmp_path / "count.trec"
    write_map(path, {**HEADER, "kind": "recall", "segments": 7}, {
        k: v.astype(np.float16) if k in ("vectors", "mel") else v for k, v in good_arrays().items()},
        version=RECALL_VERSION)
    refused(path, "header says 7 segments, the arrays hold 2")


@pytest.mark.model
def test_transcribe_refuses_a_crafted_index_in_one_line(tmp_path, base_model_dir, data_dir):
    """Through ``load_recall`` (the model's checks, timestamps included) and the CLI: one ``Error:`` line."""
    from tokenizers import Tokenizer

    fields = model_fields(base_model_dir, Tokenizer.from_file(str(base_model_dir / "tokenizer.json")))
    tb = fields["vocab_size"] - 1501  # base: 50364
    arrays = dict(vectors=unit(1, 5 * 512), mel=unit(1, MEL_SIZE), offsets=np.array([0, 3], np.int64))
    good = save(tmp_path / "good.trec", fields, tokens=np.array([440, 441, tb + 50], np.uint32), **arrays)
    bad = save(tmp_path / "bad.trec", fields, tokens=np.array([440, 441, 442], np.uint32), **arrays)
    assert len(load_recall(str(good), Tokenizer.from_file(str(base_model_dir / "tokenizer.json")),
                           base_model_dir)) == 1
    res = CliRunner().invoke(cli, ["transcribe", "-m", str(base_model_dir), "--encoder", "fork", "--recall",
                                   str(bad), "-l", "en", str(data_dir / "en-conf-getpin.flac")])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert res.stderr.startswith("Error: ") and res.stderr.count("\n") == 1, res.stderr
    assert f"{bad}: corrupt recall index (a segment does not end with its length" in res.stderr


# -- teacher files ----------------------------------------------------------------------------------
@pytest.fixture
def corpus(tmp_path):
    from tokenmap_bench.synthetic import synthetic_corpus

    path = tmp_path / "maint.txt"
    path.write_text("\n".join(synthetic_corpus(300, seed=11)) + "\n", encoding="utf-8")
    return path


def build(corpus, teacher, *extra):
    from tokenmap.models import resolve_model

    out = corpus.parent / "m.tmap"
    return CliRunner().invoke(cli, ["build", str(corpus), "--model", str(resolve_model("base", download=False)),
                                    "-o", str(out), "--jobs", "1", "--force", "--teacher", str(teacher), *extra])


def one_error_line(res) -> str:
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith("Error: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.output
    return res.stderr


GOOD = json.dumps({"text": "Press 1 for billing.", "domain": "maint"}) + "\n"


@pytest.mark.parametrize("balance", [False, True], ids=["plain", "balance"])
@pytest.mark.parametrize("line, why", [
    ('{"text": "Press 2 for the front', "not JSON (Unterminated string starting at: column 10)"),
    ("Press 3 for sales.", "not JSON (Expecting value: column 1)"),
    ('["Press 4"]', 'a JSON list, not an object with a "text"'),
    ('{"text": "a"} {"text": "b"}', "not JSON (Extra data: column 15)"),
], ids=["truncated", "plain-text", "array", "two-records"])
def test_a_malformed_teacher_line_is_one_error_naming_it(corpus, tmp_path, line, why, balance):
    teacher = tmp_path / "teacher.jsonl"
    teacher.write_text(GOOD + "\n" + line + "\n" + GOOD, encoding="utf-8")
    error = one_error_line(build(corpus, teacher, *(["--balance"] if balance else [])))
    assert error == f"Error: {teacher}:3: {why}\n"


def huge_line(path, gz=False, size=50 << 20):
    """A good line, then a ``size``-byte line without a newline, written a megabyte at a time."""
    with (gzip.open(path, "wb", compresslevel=1) if gz else open(path, "wb")) as f:
        f.write(GOOD.encode() + b'{"text": "')
        chunk = b"x" * (1 << 20)
        for _ in range(size // len(chunk)):
            f.write(chunk)
    return path


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
def test_a_huge_teacher_line_is_refused_in_one_line(corpus, tmp_path, gz):
    teacher = huge_line(tmp_path / ("teacher.jsonl.gz" if gz else "teacher.jsonl"), gz)
    error = one_error_line(build(corpus, teacher))
    assert error.startswith(f"Error: {teacher}:2: a line longer than 1 MB")


def test_reading_a_huge_line_holds_about_a_megabyte(tmp_path):
    teacher = huge_line(tmp_path / "teacher.jsonl")
    tracemalloc.start()
    try:
        with pytest.raises(CorpusError, match=":2: a line longer than 1 MB"):
            list(read_corpus([teacher]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_LINE_BYTES


def test_empty_and_textless_teacher_lines_are_skipped(corpus, tmp_path):
    teacher = tmp_path / "teacher.jsonl"
    lines = [GOOD, "\n", json.dumps({"text": ""}) + "\n", json.dumps({"text": " \t "}) + "\n",
             json.dumps({"id": "no text"}) + "\n", json.dumps({"text": 5}) + "\n", GOOD]
    teacher.write_text("".join(lines), encoding="utf-8")
    stats = CorpusStats()
    assert [u.text for u in read_corpus([teacher], stats=stats)] == ["Press 1 for billing."] * 2
    assert stats.skipped == {"empty": 2, "bad JSON line": 2}
    res = build(corpus, teacher)
    assert res.exit_code == 0, res.output
    assert load_maps(corpus.parent / "m.tmap")[0].header["teacher"]["utterances"] == 2
    all_empty = tmp_path / "empty.jsonl"
    all_empty.write_text(json.dumps({"text": ""}) + "\n", encoding="utf-8")
    error = one_error_line(build(corpus, all_empty, "--balance"))
    assert "no usable utterances (1 empty lines skipped)" in error
