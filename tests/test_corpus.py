"""Corpus readers: formats, domains, bad inputs."""

import gzip
import json
from pathlib import Path

import pytest

from tokenmap.build.corpus import (
    MAX_CHARS,
    CorpusError,
    CorpusStats,
    check_nonempty,
    read_corpus,
)


def _read(paths, **kw):
    stats = CorpusStats()
    return list(read_corpus(paths, stats=stats, **kw)), stats


def test_txt_domain_and_lang_from_folders(tmp_path):
    d = tmp_path / "maintenance" / "en"
    d.mkdir(parents=True)
    (d / "train.txt").write_text("Pump 3 inspected.\n\n  Valve   ok \n", encoding="utf-8")
    utts, stats = _read([tmp_path])
    assert [u.text for u in utts] == ["Pump 3 inspected.", "Valve ok"]
    assert {(u.domain, u.lang) for u in utts} == {("maintenance", "en")}
    assert stats.utterances == 2 and stats.domains["maintenance"] == 2
    assert len(stats.files[str(d / "train.txt")]) == 64


def test_jsonl_csv_tsv_gz(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps({"text": "Hello.", "domain": "ivr", "lang": "fr"}) + "\n"
                                      + json.dumps({"nope": 1}) + "\n", encoding="utf-8")
    (tmp_path / "b.csv").write_text("id,sentence\n1,\"Pump, 3.\"\n", encoding="utf-8")
    (tmp_path / "c.tsv").write_text("sentence\tdomain\nValve ok.\tplant\n", encoding="utf-8")
    with gzip.open(tmp_path / "d.txt.gz", "wt", encoding="utf-8") as f:
        f.write("Zipped line.\n")
    utts, stats = _read([tmp_path / "a.jsonl", tmp_path / "d.txt.gz"])
    assert [(u.text, u.domain, u.lang) for u in utts] == [("Hello.", "ivr", "fr"), ("Zipped line.", tmp_path.name, "")]
    assert stats.skipped["bad JSON line"] == 1  # an object without a text
    (tmp_path / "e.jsonl").write_text(json.dumps({"text": "Hello."}) + "\nnot json\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"e\.jsonl:2: not JSON"):
        _read([tmp_path / "e.jsonl"])
    utts, _ = _read([tmp_path / "b.csv", tmp_path / "c.tsv"], text_column="sentence")
    assert [(u.text, u.domain) for u in utts] == [("Pump, 3.", tmp_path.name), ("Valve ok.", "plant")]
    with pytest.raises(CorpusError, match="no column 'text'.*--text-column"):
        _read([tmp_path / "b.csv"])


def test_bad_lines_are_skipped_and_counted(tmp_path, caplog):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"good one\n" + b"caf\xe9 latin-1\n" + b"x" * (10 << 20) + b"\n" + b"ctrl\x07char\n"
                  + ("y" * (MAX_CHARS + 1)).encode() + b"\ngood two\n")
    utts, stats = _read([p])
    assert [u.text for u in utts] == ["good one", "good two"]
    assert stats.skipped == {"not UTF-8": 1, "too long": 2, "binary": 1}
    assert "skipped 4 corpus lines" in caplog.text


def test_binary_file_is_an_error(tmp_path):
    p = tmp_path / "model.bin"
    p.write_bytes(b"\x00\x01\x02garbage" * 100)
    with pytest.raises(CorpusError, match="looks binary"):
        _read([p])


def test_missing_and_empty(tmp_path):
    with pytest.raises(CorpusError, match="no such file"):
        _read([tmp_path / "missing.txt"])
    (tmp_path / "sub").mkdir()
    with pytest.raises(CorpusError, match="no .txt"):
        _read([tmp_path / "sub"])
    (tmp_path / "empty.txt").write_text("")
    _, stats = _read([tmp_path / "empty.txt"])
    with pytest.raises(CorpusError, match="no usable utterances"):
        check_nonempty(stats)


def test_a_corpus_that_is_mostly_not_text(tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"good line\n" + b"caf\xe9\n" * 2)
    _, stats = _read([tmp_path / "bad.txt"])
    with pytest.raises(CorpusError, match="mostly not text: 2 of 3 lines skipped .2 not UTF-8"):
        check_nonempty(stats)
    (tmp_path / "bad.txt").write_bytes(b"good line\nanother\n" + b"caf\xe9\n")
    check_nonempty(_read([tmp_path / "bad.txt"])[1])  # a few bad lines among good ones: skipped, no error


def test_bad_gzip(tmp_path):
    p = tmp_path / "x.txt.gz"
    p.write_bytes(b"not gzip at all\n")
    with pytest.raises(CorpusError, match="cannot read"):
        _read([p])


def test_directory_walk_skips_held_out_test_files(tmp_path):
    from tokenmap.build.corpus import expand_paths

    d = tmp_path / "maintenance" / "en"
    d.mkdir(parents=True)
    (d / "train.txt").write_text("Pump 1 checked.\n")
    (d / "test.txt").write_text("Pump 2 checked.\n")
    (d / "test.tsv").write_text("a\tPump 3 checked.\n")
    assert [p.name for p in expand_paths([tmp_path])] == ["train.txt"]
    assert [p.name for p in expand_paths([d / "test.txt"])] == ["test.txt"]  # explicit: allowed


def test_directory_walk_reads_each_file_once(tmp_path):
    """Links to a file already listed are dropped (corpora/maintenance/train.txt -> en/train.txt)."""
    from tokenmap.build.corpus import expand_paths
    d = tmp_path / "maintenance"
    (d / "en").mkdir(parents=True)
    (d / "en" / "train.txt").write_text("Pump 1 checked.\nValve 2 replaced.\n")
    (d / "en" / "test.txt").write_text("Pump 2 checked.\n")
    (d / "train.txt").symlink_to(Path("en") / "train.txt")
    (d / "test.txt").symlink_to(Path("en") / "test.txt")
    (d / "heldout.txt").symlink_to(Path("en") / "test.txt")  # a link to a test file is held out too
    assert [p.relative_to(d).as_posix() for p in expand_paths([d])] == ["en/train.txt"]
    utts, stats = _read([d, d / "train.txt"])
    assert len(utts) == 2 and stats.utterances == 2
    utts, _ = _read([d / "train.txt"])  # the link alone: domain and language from its target
    assert {(u.domain, u.lang) for u in utts} == {("maintenance", "en")}


def test_repository_maintenance_links():
    from tokenmap.build.corpus import expand_paths
    root = Path(__file__).resolve().parents[1] / "corpora" / "maintenance"
    assert (root / "train.txt").resolve() == (root / "en" / "train.txt").resolve()
    assert (root / "test.txt").resolve() == (root / "en" / "test.txt").resolve()
    names = [p.relative_to(root).as_posix() for p in expand_paths([root])]
    assert names == ["en/train.txt", "en/train_written.txt", "es/train.txt", "fr/train.txt"]
