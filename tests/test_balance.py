"""Budget allocation (tokenmap.balance.plan), divergence helpers, and a small --balance build."""

import math

import numpy as np
import pytest

from tokenmap.balance.budget import (DEFAULT_BUDGET, GENEROUS, Budget, allocate, best_task, excess, protected_tasks, shares)
from tokenmap.balance.sections import summed_tests
from tokenmap.balance.streams import split_dev
from tokenmap.balance.merged import merge_arrays
from tokenmap.decode.cost import DEFAULT
from tokenmap.balance.divergence import cross_entropy
from tokenmap_bench.metrics import ranks, spearman
from tokenmap.maps.mapfile import TokenMap

BOUND = Budget(min_count=1, max_candidates=7, max_draft_len=24, weight=9.0)
from tokenmap.models import resolve_model

MODEL = resolve_model("base", download=False)  # assembled by `make`


def test_weights_are_proportional_to_excess_divergence():
    d = {"a": 2.0, "b": 4.0, "c": 6.0, "d": 3.0}
    assert excess(d) == {"a": 0.0, "b": 2.0, "c": 4.0, "d": 1.0}
    w = shares(d)
    assert w == {"a": 0.0, "b": 0.5, "c": 1.0, "d": 0.25}
    alloc = allocate(d, generous=BOUND)
    for t in d:  # weight (continuous) moves exactly in proportion to w_T
        assert alloc[t].weight == pytest.approx(1.0 + w[t] * (BOUND.weight - 1.0))
    assert alloc["b"].max_candidates == 5 and alloc["b"].max_draft_len == 20  # 3 + 0.5*4, 16 + 0.5*8
    assert alloc["d"].max_draft_len == 18  # 16 + 0.25*8


def test_monotone_in_divergence():
    d = {f"t{i}": float(i) for i in range(8)}
    alloc = allocate(d, generous=BOUND)
    seq = [alloc[f"t{i}"] for i in range(8)]
    assert all(x.weight <= y.weight and x.max_candidates <= y.max_candidates and x.max_draft_len <= y.max_draft_len
               and x.min_count >= y.min_count for x, y in zip(seq, seq[1:]))


def test_best_task_keeps_the_defaults():
    default = Budget(min_count=3, max_candidates=2, max_draft_len=12)
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
            for field in ("min_count", "max_candidates", "max_draft_len", "weight"):
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
        Budget(min_count=0)
    with pytest.raises(ValueError):
        Budget(max_draft_len=65)
    with pytest.raises(ValueError):
        Budget(weight=0.0)


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


def _arrays(entries, order=2):
    """Map arrays from ``{key tuple: (count, [(tokens, expected, saving)])}``."""
    from tokenmap.balance.merged import _to_arrays
    return _to_arrays(entries, order)


def test_merge_keeps_best_task_first_and_pools_the_rest():
    bos = TokenMap.BOS
    best = {(bos,): (100, [((1, 2, 3), 2.5, 20.0)]), (5,): (50, [((6,), 0.9, 9.0)])}
    thin = {(bos,): (10, [((7, 8), 1.8, 15.0)]), (9,): (4, [((10, 11), 1.5, 12.0)])}
    budgets = {"best": DEFAULT_BUDGET, "thin": BOUND}
    arrays = merge_arrays({"best": _arrays(best), "thin": _arrays(thin)}, budgets, ["best"], 2, DEFAULT)
    tm = TokenMap({"order": 2}, arrays)
    assert tm.draft([bos]) == [1, 2, 3]  # the best task's draft is unchanged at a shared key
    assert [c[0] for c in tm.candidates([bos])] == [[1, 2, 3], [7, 8]]
    assert tm.draft([bos, 5]) == [6] and tm.draft([bos, 9]) == [10, 11]  # keys of one task survive
    # without a protected task, the thin task's weight can win the shared key
    heavy = {"best": DEFAULT_BUDGET, "thin": Budget(weight=40.0)}
    tm2 = TokenMap({"order": 2}, merge_arrays({"best": _arrays(best), "thin": _arrays(thin)}, heavy, [], 2,
                                              DEFAULT))
    assert tm2.draft([bos]) == [7, 8]
    # two protected tasks are pooled among themselves by weighted count, as a plain multi-task map would
    both = {"best": _arrays(best), "thin": _arrays(thin)}
    tm3 = TokenMap({"order": 2}, merge_arrays(both, budgets | {"thin": DEFAULT_BUDGET}, ["best", "thin"], 2, DEFAULT))
    assert tm3.draft([bos]) == [1, 2, 3]  # counts 100 vs 10 (the thin share no longer pays: dropped)
    tm4 = TokenMap({"order": 2}, merge_arrays(both, heavy, ["best", "thin"], 2, DEFAULT))
    assert tm4.draft([bos]) == [7, 8]  # 10 x weight 40 outweighs 100


def test_cross_entropy_prefers_the_fitting_map():
    bos = TokenMap.BOS
    tm = TokenMap({"order": 2, "vocab_size": 1000}, _arrays({(bos,): (10, [((1, 2), 1.8, 15.0)]),
                                                             (bos, 1): (9, [((2,), 0.9, 9.0)]),
                                                             (1,): (9, [((2,), 0.9, 9.0)])}))
    good = cross_entropy(tm, [[1, 2]])
    bad = cross_entropy(tm, [[3, 4]])
    assert 0 < good < 1.0 < bad <= math.log(1000 / 0.01) + 1e-9
    assert math.isnan(cross_entropy(tm, []))


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
    from tokenmap.maps.mapfile import load_maps
    from tokenmap.textok import TextTokenizer

    tok = TextTokenizer.from_file(MODEL / "tokenizer.json")
    files, _, _ = _two_tasks(tmp_path)
    out = tmp_path / "bal.tmap"
    result = build_balanced(files, out, tokenizer=tok, model=str(MODEL), options=BuildOptions(jobs=1))
    maps = load_maps(out, tok.fingerprint)
    bal = maps[0].header["balance"]
    assert [m.task for m in maps] == ["maint/en", "thin/en"] and bal["layout"] == "sections"
    assert bal["best"] == "maint/en" and bal["tasks"]["maint/en"]["w"] == 0.0
    best, thin = maps
    assert (best.header["min_count"], best.header["max_candidates"]) == (2, 3)  # w = 0: the defaults
    assert (thin.header["min_count"], thin.header["max_draft_len"]) == (GENEROUS.min_count, GENEROUS.max_draft_len)
    assert result.keys == best.num_keys + thin.num_keys > 0
    assert result.coverage == summed_tests([best.header["self_test"], thin.header["self_test"]])
    ids = tok.encode("Please call hydraulic pump 3 inspected")
    assert thin.draft([TokenMap.BOS] + ids[:2])  # the thin task's own section knows its opening
    with pytest.raises(ValueError, match="layout 'x'"):
        build_balanced(files, tmp_path / "x.tmap", tokenizer=tok, layout="x")


def test_best_section_is_the_plain_map_of_its_corpus(tmp_path):
    """The fastest task's section is what it would get alone: its acceptance cannot drop."""
    from tokenmap.balance.sections import build_balanced
    from tokenmap.build.builder import BuildOptions
    from tokenmap.maps.mapfile import load_maps
    from tokenmap.textok import TextTokenizer

    tok = TextTokenizer.from_file(MODEL / "tokenizer.json")
    files, maint, _ = _two_tasks(tmp_path, 2000, 80, seeds=(5, 9))
    opts = BuildOptions(jobs=1)
    build_balanced(files, tmp_path / "bal.tmap", tokenizer=tok, model=str(MODEL), options=opts, protect=0.0)
    build_balanced(files[:1], tmp_path / "ref.tmap", tokenizer=tok, model=str(MODEL), options=opts)
    best = load_maps(tmp_path / "bal.tmap")[0]
    (ref,) = load_maps(tmp_path / "ref.tmap")
    assert best.task == ref.task == "maint/en" and best.header["balance"]["protected"] == ["maint/en"]
    for name, arr in ref.arrays.items():
        assert np.array_equal(best.arrays[name], arr), name


def test_build_merged_records_the_allocation(tmp_path):
    from tokenmap.balance.sections import build_balanced
    from tokenmap.build.builder import BuildOptions
    from tokenmap.textok import TextTokenizer

    tok = TextTokenizer.from_file(MODEL / "tokenizer.json")
    files, _, _ = _two_tasks(tmp_path)
    out = tmp_path / "bal.tmap"
    result = build_balanced(files, out, tokenizer=tok, model=str(MODEL), options=BuildOptions(jobs=1),
                            layout="merged")
    tm = TokenMap.load(out, tok.fingerprint)
    bal = tm.header["balance"]
    assert set(bal["tasks"]) == {"maint/en", "thin/en"} and bal["best"] in bal["tasks"]
    assert bal["layout"] == "merged"
    assert bal["tasks"][bal["best"]]["w"] == 0.0 and bal["tasks"][bal["best"]]["weight"] == 1.0
    assert result.keys == tm.num_keys > 0 and np.all(np.diff(tm.arrays["order_offsets"]) >= 0)
    ids = tok.encode("Please call hydraulic pump 3 inspected")
    assert isinstance(tm.draft([TokenMap.BOS] + ids[:2]), list)


def test_protected_tasks_keep_the_default_budget():
    d = {"maint/en": 2.0, "incar/en": 3.0, "tel/en": 7.0}  # w = 0, 0.2, 1
    alloc = allocate(d, generous=BOUND, protect=0.25)
    assert alloc["incar/en"] == DEFAULT_BUDGET and alloc["tel/en"] == BOUND
    assert allocate(d, generous=BOUND)["incar/en"] != DEFAULT_BUDGET


def test_rare_keys_seen_in_other_tasks_are_dropped():
    from tokenmap.balance.merged import drop_foreign_rare

    bos = TokenMap.BOS
    thin = {(bos,): (1, [((1, 2), 0.9, 5.0)]), (5,): (1, [((6,), 0.9, 5.0)]), (9,): (1, [((10,), 0.9, 5.0)]),
            (5, 7): (3, [((8,), 0.9, 5.0)])}
    other = np.array([bos, 5, 4, 5, 7, 3], dtype=np.uint32)  # has (bos,), (5,), (5, 7) but never 9
    tm = TokenMap({"order": 2}, drop_foreign_rare(_arrays(thin), [other], min_count=2, order=2))
    assert tm.draft([9]) == [10]  # rare, but no other task has the context: kept
    assert tm.draft([bos]) == [] and tm.draft([4, 5]) == []  # rare and seen elsewhere: dropped
    assert tm.draft([5, 7]) == [8]  # frequent enough: kept although seen elsewhere


def test_thin_task_keys_never_shadow_a_protected_context():
    from tokenmap.balance.merged import drop_shadowing

    bos = TokenMap.BOS
    protected_stream = np.array([bos, 1, 2, 3, 4], dtype=np.uint32)
    protected = _arrays({(2,): (5, [((3, 4), 1.5, 9.0)])})  # (1, 2) and (2, 3) were pruned from its map
    thin = {(1, 2): (3, [((9,), 0.9, 5.0)]), (2,): (2, [((8,), 0.9, 5.0)]), (7, 2): (3, [((6,), 0.9, 5.0)])}
    kept = drop_shadowing({"thin": _arrays(thin)}, protected_stream, protected, order=2)
    tm = TokenMap({"order": 2}, kept["thin"])
    assert tm.draft([1, 2]) == [8]  # the protected corpora have (1, 2): that key is dropped, (2,) answers
    assert tm.draft([7, 2]) == [6]  # a context only the thin task has survives
    assert tm.draft([5, 2]) == [8]  # a key the protected map has too is kept (its candidates lead in the merge)


def test_merged_map_drafts_like_the_protected_map_on_protected_text(tmp_path):
    from tokenmap.balance.budget import PROTECTED
    from tokenmap.balance.sections import build_balanced
    from tokenmap.build.builder import BuildOptions
    from tokenmap.textok import TextTokenizer

    tok = TextTokenizer.from_file(MODEL / "tokenizer.json")
    files, maint, _ = _two_tasks(tmp_path, 2000, 80, seeds=(5, 9))
    opts = BuildOptions(jobs=1)
    build_balanced(files, tmp_path / "bal.tmap", tokenizer=tok, model=str(MODEL), options=opts, protect=0.0,
                   layout="merged")
    bal = TokenMap.load(tmp_path / "bal.tmap", tok.fingerprint)
    assert bal.header["balance"]["protected"] == [bal.header["balance"]["best"]]
    build_balanced(files[:1], tmp_path / "ref.tmap", tokenizer=tok, model=str(MODEL), options=opts, layout="merged")
    ref = TokenMap.load(tmp_path / "ref.tmap", tok.fingerprint)  # one task: the protected map alone
    assert bal.header["balance"]["best"] == "maint/en"
    checked = 0
    for line in maint[:200]:
        ids = [TokenMap.BOS] + tok.encode(line)
        for i in range(1, len(ids)):
            assert bal.draft(ids[:i]) == ref.draft(ids[:i]), (line, i)
            checked += 1
    assert checked > 1000 and PROTECTED == "(protected)"
