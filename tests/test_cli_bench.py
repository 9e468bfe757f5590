"""`tokenmap bench` through click's CliRunner."""

import json

import pytest
from click.testing import CliRunner

from tokenmap_cli.cmd_bench import bench

SPEECH = {"en-agent-pass.flac": "Please enter your password followed by the pound key.",
          "en-conf-getpin.flac": "Please enter the conference pin number."}


def test_missing_bench_data_names_the_fix(tmp_path):
    result = CliRunner().invoke(bench, ["--manifest", str(tmp_path / "none.jsonl"), "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "run `make bench-data` first" in result.output


def test_missing_bench_extra_names_the_install(tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jiwer" else find_spec(name, *a))
    result = CliRunner().invoke(bench, ["--manifest", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 1
    assert "tokenmap bench needs jiwer: pip install 'tokenmap[bench]'" in result.output


def test_unknown_system_is_one_line(tmp_path):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("")
    result = CliRunner().invoke(bench, ["--manifest", str(manifest), "--systems", "greedy,beam"])
    assert result.exit_code == 1 and "unknown systems: beam" in result.output


def _manifest(tmp_path, data_dir):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("".join(json.dumps({
        "id": f"telephony/{n}", "audio": str(data_dir / n), "text": SPEECH[n], "domain": "telephony", "lang": "en",
        "voice": "allison", "source": "asterisk", "set": "telephony", "duration": 3.0}) + "\n" for n in SPEECH))
    return manifest


def _teacher(tmp_path, utt_id="telephony/other.flac"):
    teacher = tmp_path / "teacher.jsonl"
    teacher.write_text(json.dumps({"id": utt_id, "domain": "telephony", "lang": "en",
                                   "text": "Please enter your mailbox number."}) + "\n")
    return teacher


def test_teacher_of_measured_audio_is_refused(tmp_path, data_dir):
    manifest = _manifest(tmp_path, data_dir)
    teacher = _teacher(tmp_path, "telephony/en-agent-pass.flac")
    result = CliRunner().invoke(bench, ["--manifest", str(manifest), "--out", str(tmp_path), "--map-mode",
                                        "per-task,taught", "--teacher", str(teacher)])
    assert result.exit_code == 1 and "(--teacher) holds transcripts of the recordings of 1 utterances" in result.output
    result = CliRunner().invoke(bench, ["--manifest", str(manifest), "--out", str(tmp_path), "--map-mode",
                                        "per-task,taught"])
    assert result.exit_code == 1 and "map mode taught needs --teacher" in result.output


@pytest.mark.model
def test_bench_two_utterances(tmp_path, data_dir):
    manifest = _manifest(tmp_path, data_dir)
    names = list(SPEECH)
    docs = tmp_path / "BENCHMARKS.md"
    out = tmp_path / "results"
    result = CliRunner().invoke(bench, ["--manifest", str(manifest), "--systems", "greedy,tokenmap,oracle",
                                        "--reps", "1", "--out", str(out), "--update-docs", str(docs),
                                        "--map-mode", "per-task,multi,inferred,taught",
                                        "--teacher", str(_teacher(tmp_path))],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "tokenmap" in result.output and "unfairness U" in result.output
    run = next(p for p in out.iterdir() if p.name != "maps")
    data = json.loads((run / "results.json").read_text())
    systems = {(r["id"], r["system"]) for r in data["rows"]}
    assert systems == {(f"telephony/{n}", s) for n in names
                       for s in ("greedy", "tokenmap", "tokenmap-multi", "tokenmap-inferred", "tokenmap-taught",
                                 "oracle")}
    assert data["maps"]["telephony/en"].endswith("telephony-en.tmap") and data["maps"]["multi"].endswith(".tmap")
    assert "fairness_ce" in data["aggregates"]["map_modes"]["tokenmap-multi"]
    assert data["maps"]["inferred"] == [data["maps"]["telephony/en"]]  # the tasks' own maps
    assert "tokenmap-inferred" in data["aggregates"]["map_modes"]
    assert data["maps"]["taught"].endswith("taught-1tasks.tmap") and data["options"]["teacher"] == [
        str(tmp_path / "teacher.jsonl")]
    assert data["options"]["threads"] == 2 and data["machine"]["cores"] >= 1
    agg = data["aggregates"]["systems"]
    assert agg["greedy"]["wer"] < 0.3 and agg["oracle"]["A_r"] == 1.0  # the prompts are heard, the oracle kept
    assert 0.2 < agg["tokenmap"]["S"] < 5 and agg["tokenmap"]["n"] == len(names)
    assert agg["tokenmap"]["drafted"] >= agg["tokenmap"]["accepted"] >= 0
    assert (out / "maps" / "telephony-en.tmap").is_file()
    assert (run / "report.md").read_text().count("| greedy |") == 1
    assert "Table I" in docs.read_text()
    assert not (run / "rows.partial.jsonl").exists()  # results.json holds every row


def test_partial_rows_survive_a_run_that_dies(tmp_path, caplog):
    import numpy as np

    from tokenmap_bench.run import PartialRows

    with pytest.raises(KeyboardInterrupt), PartialRows(tmp_path / "run") as sink:
        sink([{"id": "a", "system": "greedy", "decoder_s": np.float64(0.5)}])
        sink([{"id": "b", "system": "greedy", "token_ids": [np.int64(3)]}])
        raise KeyboardInterrupt
    rows = [json.loads(line) for line in (tmp_path / "run" / "rows.partial.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", "b"] and rows[0]["decoder_s"] == 0.5 and rows[1]["token_ids"] == [3]
    assert "rows.partial.jsonl" in caplog.text
