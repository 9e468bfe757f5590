"""Budget allocation (tokenmap.balance.budget), divergence, and small --balance builds (map sets of token maps)."""

import math
from dataclasses import replace

import numpy as np
import pytest

from tokenmap.balance.budget import (
    DEFAULT_BUDGET,
    GENEROUS,
    Budget,
    allocate,
    best_task,
    excess,
    protected_tasks,
    shares,
)
from tokenmap.balance.divergence import cross_entropy, split_dev
from tokenmap.balance.sections import summed_tests
from tokenmap.maps.suffixmap import TokenMap
from tokenmap.models import resolve_model
from tokenmap_bench.metrics import ranks, spearman

BOUND = Budget(min_count=1, teacher=8)
MODEL = resolve_model("base", download=False)  # assembled by `make`


def test_weights_are_proportional_to_excess_divergence():
    d = {"a": 2.0, "b": 4.0, "c": 6.0, "d": 3.0}
    assert excess(d) == {"a": 0.0, "b": 2.0, "c": 4.0, "d": 1.0}
    w = shares(d)
    assert w == {"a": 0.0, "b": 0.5, "c": 1.0, "d": 0.25}
    alloc = allocate(d, generous=BOUND)
    assert [alloc[t].teacher for t in "abcd"] == [0, 4, 8, 2]  # 8 * w_T, rounded half up
    assert [alloc[t].min_count for t in "abcd"] == [0, 1, 1, 0]


def test_monotone_in_divergence():
    d = {f"t{i}": float(i) for i in range(8)}
    alloc = allocate(d, generous=BOUND)
    seq = [alloc[f"t{i}"] for i in range(8)]
    assert all(x.teacher <= y.teacher for x, y in zip(seq, seq[1:]))
    default = Budget(min_count=4)
    seq = [allocate(d, default=default, generous=BOUND)[f"t{i}"] for i in range(8)]
    assert all(x.min_count >= y.min_count for x, y in zip(seq, seq[1:])) and seq[0].min_count == 4


def test_best_task_keeps_the_defaults():
    default = Budget(min_count=3, teacher=1)
    d = {"maint/en": 1.5, "tel/en": 7.0, "tel/es": 5.0}
    alloc = allocate(d, default=default, generous=BOUND)
    assert best_task(d) == "maint/en"
    assert alloc["maint/en"] == default
    assert allocate(d)["maint/en"] == DEFAULT_BUDGET


def test_protected_tasks_are_the_near_best_in_order():
    d = {"maint/en": 2.0, "maint/es": 2.5, "tel/en": 7.0, "tel/es": 4.5}  # w = 0, 0.1, 1, 0.5
    assert protected_tasks(d, 0.0) == ["maint/en"]
    assert protected_tasks(d, 0.1) == ["maint/en", "maint/es"]
    assert protected_tasks(d, 0.5) == ["maint/en", "maint/es", "tel/es"]
    assert protected_tasks({"a": 3.0, "b": 3.0}, 0.0) == ["a", "b"]  # all equal: all are best


def test_worst_task_gets_the_bound_and_all_stay_within_bounds():
    d = {"a": 0.3, "b": 9.1, "c": 4.4, "d": 2.2, "e": 7.7}
    for bound in (BOUND, GENEROUS):
        alloc = allocate(d, generous=bound)
        assert alloc["b"] == bound
        for b in alloc.values():
            for field in ("min_count", "teacher"):
                lo, hi = sorted((getattr(DEFAULT_BUDGET, field), getattr(bound, field)))
                assert lo <= getattr(b, field) <= hi


def test_single_task_and_equal_divergence_change_nothing():
    assert allocate({"only": 3.2}) == {"only": DEFAULT_BUDGET}
    assert shares({"only": 3.2}) == {"only": 0.0}
    assert allocate({"a": 2.0, "b": 2.0, "c": 2.0}, generous=BOUND) == dict.fromkeys("abc", DEFAULT_BUDGET)


def test_nan_divergence_keeps_defaults_and_is_ignored():
    alloc = allocate({"a": 1.0, "b": math.nan, "c": 3.0}, generous=BOUND)
    assert alloc["b"] == DEFAULT_BUDGET and alloc["c"] == BOUND
    assert best_task({"a": math.nan}) is None


def test_budget_validation():
    with pytest.raises(ValueError):
        Budget(min_count=-1)
    with pytest.raises(ValueError):
        Budget(teacher=-1)


def test_split_dev():
    lines = [str(i) for i in range(40)]
    train, dev = split_dev(lines)
    assert dev == ["9", "19", "29", "39"] and len(train) == 36 and not set(train) & set(dev)
    assert split_dev(lines[:5]) == (lines[:5], lines[:5])  # too small: in-sample


def test_spearman_and_ranks():
    assert ranks([3.0, 1.0, 2.0, 1.0]) == [4.0, 1.5, 3.0, 1.5]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(spearman([1.0], [2.0])) and math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_cross_entropy_prefers_the_fitting_map():
    tm = TokenMap.from_stream(np.array([9, 1, 2, 10] * 9, dtype=np.uint32), bos=9, sep=10, depth=4)
    good = cross_entropy(tm, [[1, 2]], vocab_size=1000)
    bad = cross_entropy(tm, [[3, 4]], vocab_size=1000)
    assert 0 < good < 1.0 < bad <= math.log(1000 / 0.01) + 1e-9
    assert math.isnan(cross_entropy(tm, [], vocab_size=1000))


def _two_tasks(tmp_path, n_maint=3000, n_thin=60, seeds=(5, 4)):
    """Corpus files of a large task maint/en and a thin one thin/en (telephony-like lines)."""
    from tokenmap_bench.synthetic import synthetic_corpus

    maint = list(synthetic_corpus(n_maint, seed=seeds[0]))
    thin = [f"Please call {x.lower()}" for x in synthetic_corpus(n_thin, seed=seeds[1])]
    files = []
    for dom, lines in (("maint", maint), ("thin", thin)):
        (tmp_path / dom / "en").mkdir(parents=True)
        files.append(tmp_path / dom / "en" / "train.txt")
        files[-1].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return files, maint, thin


def test_build_balanced_writes_one_section_per_task(tmp_path):
    from tokenmap.balance.sections import build_balanced
    from tokenmap.build.builder import BuildOptions
    from tokenmap.build.style import bridge
    from tokenmap.decode.follow import FollowDrafter
    from tokenmap.maps.mapfile import load_maps
    from tokenmap.maps.schema import SET_VERSION
    from tokenmap.textok import TextTokenizer

    tok = TextTokenizer.from_file(MODEL / "tokenizer.json")
    files, _, thin_lines = _two_tasks(tmp_path)
    out = tmp_path / "bal.tmap"
    result = build_balanced(files, out, tokenizer=tok, model=str(MODEL), options=BuildOptions(jobs=1))
    assert out.read_bytes()[8] == SET_VERSION
    maps = load_maps(out, tok.fingerprint)
    bal = maps[0].header["balance"]
    assert [m.task for m in maps] == ["maint/en", "thin/en"] and all(isinstance(m, TokenMap) for m in maps)
    assert bal["best"] == "maint/en" and bal["tasks"]["maint/en"]["w"] == 0.0
    best, thin = maps
    assert best.header["budget"] == {"min_count": 0, "teacher": 0}  # w = 0: the defaults
    assert thin.header["budget"] == {"min_count": GENEROUS.min_count, "teacher": GENEROUS.teacher}  # w = 1: the bound
    assert thin.header["min_count"] == 1 and best.header["D_T"] < thin.header["D_T"]
    assert result.contexts == best.num_nodes + thin.num_nodes > 0
    assert result.self_test == summed_tests([best.header["self_test"], thin.header["self_test"]])
    ids = tok.encode_batch([bridge(thin_lines[0])])[0][:12]
    node = thin.walk([thin.bos] + ids)
    assert thin.arrays["node_depth"][node] == len(ids) + 1  # the thin task's section holds its line, seen once
    assert best.arrays["node_depth"][best.walk([best.bos] + ids[:2])] < 3  # the other section never saw it
    assert FollowDrafter(thin, timestamp_begin=None, eot=thin.bos).draft(ids[:2], 8)


def test_best_section_is_the_plain_map_of_its_corpus(tmp_path):
    """The fastest task's section is what `tokenmap build` makes of its corpus alone: it cannot get worse."""
    from tokenmap.balance.sections import build_balanced
    from tokenmap.build.builder import BuildOptions, build_map
    from tokenmap.maps.mapfile import load_maps
    from tokenmap.textok import TextTokenizer

    tok = TextTokenizer.from_file(MODEL / "tokenizer.json")
    files, _, _ = _two_tasks(tmp_path, 2000, 80, seeds=(5, 9))
    opts = BuildOptions(jobs=1)
    build_balanced(files, tmp_path / "bal.tmap", tokenizer=tok, model=str(MODEL), options=replace(opts, protect=0.0))
    build_map(files[:1], tmp_path / "ref.tmap", tokenizer=tok, model=str(MODEL), options=opts)
    best = load_maps(tmp_path / "bal.tmap")[0]
    (ref,) = load_maps(tmp_path / "ref.tmap")
    assert best.task == "maint/en" and best.header["balance"]["protected"] == ["maint/en"]
    assert best.header["min_count"] == ref.header["min_count"]
    for name, arr in ref.arrays.items():
        assert np.array_equal(best.arrays[name], arr), name


def test_protected_tasks_keep_the_default_budget():
    d = {"maint/en": 2.0, "incar/en": 3.0, "tel/en": 7.0}  # w = 0, 0.2, 1
    alloc = allocate(d, generous=BOUND, protect=0.25)
    assert alloc["incar/en"] == DEFAULT_BUDGET and alloc["tel/en"] == BOUND
    assert allocate(d, generous=BOUND)["incar/en"] != DEFAULT_BUDGET
