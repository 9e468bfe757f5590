"""`tokenmap build` / `tokenmap inspect` through click's CliRunner."""

import json

import pytest
from click.testing import CliRunner

from tokenmap.models import resolve_model
from tokenmap_bench.synthetic import synthetic_corpus
from tokenmap_cli.main import cli

MODEL = resolve_model("base", download=False)  # assembled by `make`


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "maint.txt"
    path.write_text("\n".join(synthetic_corpus(1500, seed=11)) + "\n", encoding="utf-8")
    return path


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_build_inspect_force(tmp_path, corpus):
    out = tmp_path / "m.tmap"
    res = run("build", corpus, "--model", MODEL, "-o", out, "--jobs", 1)
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output and "contexts" in res.output and "tokens per pass" in res.output
    again = run("build", corpus, "--model", MODEL, "-o", out, "--jobs", 1)
    assert again.exit_code == 1
    assert "already exists (use --force" in again.stderr and "Traceback" not in again.output
    assert run("build", corpus, "--model", MODEL, "-o", out, "--force", "--jobs", 1).exit_code == 0
    res = run("inspect", out, "--json", "--prefix", "Seal shows", "--model", MODEL)
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    assert info["format"] == 3 and info["contexts"] == sum(info["contexts_per_length"]) + 1  # and the root
    assert info["prefix"]["text"].startswith(" wear")
    text = run("inspect", out, "--prefix", "Seal shows", "--model", MODEL)
    assert "contexts:" in text.output and "' wear" in text.output


def test_build_errors_are_one_line(tmp_path):
    res = run("build", tmp_path / "missing.txt", "--model", MODEL, "-o", tmp_path / "m.tmap")
    assert res.exit_code == 1 and res.stderr.count("\n") == 1 and "no such file" in res.stderr
    (tmp_path / "empty.txt").write_text("")
    res = run("build", tmp_path / "empty.txt", "--model", MODEL, "-o", tmp_path / "m.tmap")
    assert res.exit_code == 1 and "no usable utterances" in res.stderr
    res = run("build", tmp_path / "empty.txt", "--model", tmp_path / "nomodel", "-o", tmp_path / "m.tmap")
    assert res.exit_code == 1 and res.stderr.startswith("Error: ")


def test_inspect_bad_file(tmp_path):
    bad = tmp_path / "x.tmap"
    bad.write_bytes(b"hello world, not a map")
    res = run("inspect", bad)
    assert res.exit_code == 1 and "not a token map (bad magic)" in res.stderr


def test_style_flags_change_the_map(tmp_path):
    corpus = tmp_path / "written.txt"
    corpus.write_text("\n".join(["pressure twenty two point five bar"] * 20) + "\n", encoding="utf-8")
    bridged, raw = tmp_path / "a.tmap", tmp_path / "b.tmap"
    assert run("build", corpus, "--model", MODEL, "-o", bridged, "--jobs", 1).exit_code == 0
    assert run("build", corpus, "--model", MODEL, "-o", raw, "--no-style-bridge", "--jobs", 1).exit_code == 0
    a = json.loads(run("inspect", bridged, "--json", "--prefix", "", "--model", MODEL).output)
    b = json.loads(run("inspect", raw, "--json", "--prefix", "", "--model", MODEL).output)
    assert a["prefix"]["text"] == " Pressure 22.5 bar."
    assert b["prefix"]["text"] == " pressure twenty two point five bar"


def test_build_creates_the_output_directory(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("Please enter your password.\n" * 3)
    out = tmp_path / "new" / "dir" / "m.tmap"
    res = run("build", corpus, "-o", out, "--jobs", 1)
    assert res.exit_code == 0, res.output
    assert out.is_file()


def test_issue_command_on_the_maintenance_corpus(tmp_path, monkeypatch):
    """`tokenmap build corpora/maintenance/train.txt -o maint.tmap`, then inspect."""
    from pathlib import Path
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    out = tmp_path / "maint.tmap"
    res = run("build", "corpora/maintenance/train.txt", "-o", out, "--model", MODEL)
    assert res.exit_code == 0, res.output
    assert "20000 utterances" in res.output and "tokens per pass" in res.output
    info = json.loads(run("inspect", out, "--json").output)
    assert info["languages"] == {"en": 20000} and info["domains"] == {"maintenance": 20000}
    text = run("inspect", out, "--prefix", "Tyre pressure front", "--model", MODEL)
    assert text.exit_code == 0 and "drafts '" in text.output


def test_build_balance_writes_a_map_set(tmp_path):
    """`tokenmap build --balance`: one section per domain/lang, budgets printed; inspect shows each section."""
    files = []
    for dom, lines in (("maint", synthetic_corpus(1500, seed=11)),
                       ("tel", (f"Please call {x.lower()}" for x in synthetic_corpus(50, seed=3)))):
        (tmp_path / dom / "en").mkdir(parents=True)
        files.append(tmp_path / dom / "en" / "train.txt")
        files[-1].write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "bal.tmap"
    res = run("build", *files, "--balance", "--model", MODEL, "-o", out, "--jobs", 1)
    assert res.exit_code == 0, res.output
    assert "budgets (best task maint/en" in res.output and "tel/en" in res.output
    info = json.loads(run("inspect", out, "--json", "--prefix", "Please call", "--model", MODEL).output)
    assert [s["task"] for s in info["sections"]] == ["maint/en", "tel/en"]
    assert all(s["format"] == 6 for s in info["sections"])
    assert info["sections"][1]["budget"]["min_count"] == 1 and info["sections"][1]["prefix"]["tokens"]
    text = run("inspect", out).output
    assert "a map set of 2 task sections" in text and "section tel/en: D_T" in text and "budget min-count 1" in text
    for flag in ("--layout", "--max-order", "--max-candidates", "--max-draft-len", "--merge-near-duplicates"):
        assert run("build", *files, flag, "x", "-o", tmp_path / "m.tmap").exit_code == 2  # no such option
