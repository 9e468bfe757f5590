"""Teacher transcripts for `build --balance --teacher` (tokenmap.balance.divergence) and benchmarks/teacher_texts.py."""
import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tokenmap.balance.budget import DEFAULT_BUDGET, Budget, allocate
from tokenmap.balance.divergence import with_teacher
from tokenmap.maps.mapfile import load_maps
from tokenmap.models import resolve_model

MODEL = resolve_model("base", download=False)  # assembled by `make`
_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "teacher_texts.py"
_spec = importlib.util.spec_from_file_location("tokenmap_bench_teacher_texts", _PATH)
tt = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = tt
_spec.loader.exec_module(tt)

# the model writes the thin task's lines its own way ("Press 1" where the corpus says "press one to")
TEACHER_LINES = ["Press 1 for billing and 2 for the front desk."] * 3


def _corpora(tmp_path, n_maint=1500, n_thin=40):
    from tokenmap_bench.synthetic import synthetic_corpus

    files = []
    for dom, lines in (("maint", list(synthetic_corpus(n_maint, seed=5))),
                       ("thin", [f"Please call {x.lower()}" for x in synthetic_corpus(n_thin, seed=4)])):
        (tmp_path / dom / "en").mkdir(parents=True)
        files.append(tmp_path / dom / "en" / "train.txt")
        files[-1].write_text("\n".join(lines) + "\n", encoding="utf-8")
    teacher = tmp_path / "teacher.jsonl"
    rows = ([{"id": f"t{i}", "domain": "thin", "lang": "en", "text": t} for i, t in enumerate(TEACHER_LINES)]
            + [{"id": "m0", "domain": "maint", "lang": "en", "text": "Pump 3 inspected, no leaks found."}])
    teacher.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return files, teacher


@pytest.fixture(scope="module")
def tok():
    from tokenmap.textok import TextTokenizer

    return TextTokenizer.from_file(MODEL / "tokenizer.json")


def test_with_teacher_appends_copies():
    s, t = np.array([9, 1, 10], np.uint32), np.array([9, 2, 10], np.uint32)
    assert with_teacher(s, t, 0) is s and with_teacher(s, None, 3) is s
    assert with_teacher(s, t, 2).tolist() == [9, 1, 10, 9, 2, 10, 9, 2, 10]


def test_teacher_copies_grow_with_excess_divergence():
    bound = Budget(min_count=2, teacher=6)
    alloc = allocate({"best": 1.0, "mid": 2.0, "worst": 3.0}, generous=bound)
    assert [alloc[t].teacher for t in ("best", "mid", "worst")] == [0, 3, 6]
    assert allocate({"best": 1.0, "nan": math.nan}, generous=bound)["nan"] == DEFAULT_BUDGET
    with pytest.raises(ValueError, match="teacher >= 0"):
        Budget(teacher=-1)


def test_teacher_build_teaches_the_thin_task_and_keeps_the_best_section(tmp_path, tok):
    from tokenmap.balance.sections import build_balanced
    from tokenmap.build.builder import BuildOptions
    from tokenmap.decode.follow import FollowDrafter

    files, teacher = _corpora(tmp_path)
    bound = Budget(min_count=2, teacher=4)
    opts = BuildOptions(jobs=1, generous=bound)
    build_balanced(files, tmp_path / "t.tmap", tokenizer=tok, model=str(MODEL), options=opts, teacher=[teacher])
    build_balanced(files, tmp_path / "plain.tmap", tokenizer=tok, model=str(MODEL), options=opts)
    best, thin = load_maps(tmp_path / "t.tmap", tok.fingerprint)
    bal = best.header["balance"]
    assert bal["best"] == "maint/en" and "greedy transcripts" in bal["divergence"]
    assert bal["tasks"]["thin/en"]["teacher_lines"] == 3 and thin.header["budget"]["teacher"] == 4
    assert best.header["budget"]["teacher"] == 0
    # D_T is the default map's cross-entropy on the teacher lines: the model's own wording is far from thin/en
    assert bal["tasks"]["thin/en"]["D_T"] > bal["tasks"]["maint/en"]["D_T"]
    ref = load_maps(tmp_path / "plain.tmap", tok.fingerprint)[0]
    for name, arr in ref.arrays.items():  # the best task (w = 0) counts no teacher line
        assert np.array_equal(best.arrays[name], arr), name
    ids = tok.encode(TEACHER_LINES[0])

    def draft(tm):
        return FollowDrafter(tm, timestamp_begin=None, eot=tm.bos).draft(ids[:2], 8)[:3]

    assert draft(thin) == ids[2:5]  # the thin section drafts the model's wording
    (_, plain_thin) = load_maps(tmp_path / "plain.tmap", tok.fingerprint)
    assert draft(plain_thin) != ids[2:5]


def test_cli_build_teacher(tmp_path, caplog):
    from tokenmap_cli.main import cli

    files, teacher = _corpora(tmp_path, 300, 30)
    runner = CliRunner()
    res = runner.invoke(cli, ["build", *map(str, files), "-o", str(tmp_path / "plain.tmap"), "--model", str(MODEL),
                              "--jobs", "1", "--teacher", str(teacher), "--teacher-copies", "3"])
    assert res.exit_code == 0, res.output  # a plain map counts the teacher beside the corpus
    from tokenmap.maps.mapfile import load_maps
    assert load_maps(tmp_path / "plain.tmap")[0].header["teacher"]["copies"] == 3
    other = tmp_path / "teach"  # `tokenmap transcribe -o teach/nocorpus/en/` output: a segment a line
    (other / "nocorpus" / "en").mkdir(parents=True)
    (other / "nocorpus" / "en" / "call1.txt").write_text("Hello there.\nGoodbye.\n")
    res = runner.invoke(cli, ["build", *map(str, files), "-o", str(tmp_path / "x.tmap"), "--balance", "--model",
                              str(MODEL), "--jobs", "1", "--teacher", str(teacher), "--teacher", str(other)])
    assert res.exit_code == 0, res.output
    assert "D_T on the model's teacher transcripts" in res.output and "teacher 3 lines" in res.output
    assert "teacher lines of nocorpus/en ignored" in caplog.text


def test_teacher_texts_cuts_segments_and_drops_shared_sentences():
    rows = [{"id": "a", "system": "greedy", "kind": "decoder", "domain": "incar", "lang": "en",
             "ref": "Call Mom. Open the window.", "token_ids": [50364, 1, 2, 50400, 50400, 3, 50257, 50500]},
            {"id": "b", "system": "greedy", "kind": "decoder", "domain": "incar", "lang": "en",
             "ref": "Take me home.", "token_ids": [50364, 4, 50380]},
            {"id": "b", "system": "tokenmap", "kind": "decoder", "domain": "incar", "lang": "en",
             "ref": "Take me home.", "token_ids": [50364, 5, 50380]}]
    assert tt.segments(rows[0]["token_ids"], 50364) == [[1, 2], [3]]  # <|endoftext|> dropped
    def decode(ids):
        return " ".join(map(str, ids))

    lines, dropped = tt.teacher_lines(rows, decode, set(), None, 50364)
    assert [x["text"] for x in lines] == ["1 2", "3", "4"] and dropped == 0
    lines, dropped = tt.teacher_lines(rows, decode, tt.sentences("open the window. Other."), None, 50364)
    assert [x["id"] for x in lines] == ["b"] and dropped == 1
    halves = {tt.half_of(f"u{i}") for i in range(20)}
    assert halves == {0, 1}
    kept = tt.teacher_lines(rows, decode, set(), tt.half_of("b"), 50364)[0]
    assert {x["id"] for x in kept} <= {"a", "b"} and "b" in {x["id"] for x in kept}


def test_bench_refuses_teacher_of_measured_audio(tmp_path):
    from tokenmap_bench import BenchDataError, check_disjoint

    class U:
        id = "synthetic/incar/en/x/001"
        recordings = ()

    teacher = tmp_path / "t.jsonl"
    teacher.write_text(json.dumps({"id": "synthetic/incar/en/x/002", "text": "a"}) + "\n")
    check_disjoint([U()], teacher=[teacher])
    teacher.write_text(json.dumps({"id": U.id, "text": "a"}) + "\n")
    with pytest.raises(BenchDataError, match="1 utterances this run measures"):
        check_disjoint([U()], teacher=[teacher])


def test_plain_map_learns_the_models_wording(tmp_path, tok):
    """The corpus has no comma; the model's own transcripts do: with them, the drafter proposes it."""
    from tokenmap.build.builder import BuildOptions, build_map
    from tokenmap.decode.follow import FollowDrafter
    from tokenmap.maps.mapfile import load_maps

    corpus = tmp_path / "prompts.txt"
    corpus.write_text("Please enter your password followed by the pound key.\nPlease hold.\n")
    teacher = tmp_path / "teacher.txt"
    teacher.write_text("Please enter your password, followed by the pound key.\n")
    context = tok.encode(" Please enter your password")
    drafts = {}
    for name, taught in (("plain", ()), ("taught", (teacher,))):
        build_map([corpus], tmp_path / f"{name}.tmap", tokenizer=tok, options=BuildOptions(jobs=1, teacher_copies=2),
                  teacher=taught)
        sm = load_maps(tmp_path / f"{name}.tmap")[0]
        drafts[name] = tok.decode(FollowDrafter(sm, timestamp_begin=None, eot=sm.bos).draft(context, 8)[:2])
    assert drafts["plain"] == " followed by" and drafts["taught"] == ", followed"
