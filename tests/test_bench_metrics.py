"""Benchmark metrics and aggregation: pure functions, no model."""

import json
import math

import pytest

from tokenmap_bench import aggregate as A
from tokenmap_bench import metrics as M
from tokenmap_bench.data import BenchDataError, Recording, load_manifest
from tokenmap_bench.harness import BenchOptions, heavy_ids
from tokenmap_bench.report import BEGIN, END, header_text, markdown, update_docs
from tokenmap_bench.systems import vocab_maps


def test_speedup_is_baseline_over_system():
    assert M.speedup(2.0, 1.6) == pytest.approx(1.25)
    assert M.speedup(1.0, 2.0) == 0.5
    assert math.isnan(M.speedup(1.0, 0.0)) and math.isnan(M.speedup(0.0, 1.0))


def test_acceptance_rate_and_length():
    assert M.acceptance_rate(30, 40) == 0.75          # eq. 4
    assert M.acceptance_length(30, 10) == 3.0         # eq. 5: per verified draft
    assert math.isnan(M.acceptance_rate(0, 0)) and math.isnan(M.acceptance_length(0, 0))


def test_rtf_and_oracle_fraction():
    assert M.rtf(0.5, 10.0) == 0.05
    assert M.oracle_fraction(1.0, 0.8, 0.6) == pytest.approx(0.5)
    assert M.oracle_fraction(1.0, 1.2, 0.6) == pytest.approx(-0.5)  # slower than greedy
    assert math.isnan(M.oracle_fraction(1.0, 0.9, 1.0))


def test_unfairness_definition_1():
    # U = 1/m sum (D_T - D_min)^2
    assert M.unfairness({"a": 0.1, "b": 0.3}) == pytest.approx(0.02)
    assert M.unfairness({"a": 0.2, "b": 0.2, "c": 0.2}) == 0.0
    assert M.unfairness({"a": 0.0, "b": 0.5, "c": 1.0}) == pytest.approx((0.25 + 1.0) / 3)
    assert M.unfairness({"a": 0.4, "b": math.nan}) == 0.0  # NaN tasks ignored
    assert math.isnan(M.unfairness({}))
    assert M.misfit(0.75) == 0.25


def test_spread():
    s = M.spread({"x": 1.0, "y": 1.5, "z": math.nan})
    assert (s["n"], s["min"], s["max"], s["argmin"], s["argmax"]) == (2, 1.0, 1.5, "x", "y")
    assert s["std"] == pytest.approx(0.25)


@pytest.mark.parametrize("text, expected", [
    ("Please enter your password, followed by the pound key.", "please enter your password followed by the pound key"),
    ("Shaft speed 1,604 RPM, OK.", "shaft speed 1604 rpm ok"),
    ("Brake lining thickness 12.3 millimeters.", "brake lining thickness 12.3 millimeters"),
    ("fill level 93 %", "fill level 93 %"),
    ("fill level 93%", "fill level 93 %"),
    ("Température 74 °C", "température 74 ° c"),
    ("Veuillez composer le code d'accès.", "veuillez composer le code daccès"),
    ("  Party's   EXTENSION!  ", "partys extension"),
    ("12,3 bar", "12.3 bar"),
])
def test_normalize_text(text, expected):
    assert M.normalize_text(text) == expected


def test_wer_uses_the_normaliser():
    assert M.wer([("Hello, world.", "hello world")]) == 0.0
    assert M.word_errors("a b c d", "a x c") == (2, 4)
    assert M.wer([("a b c d", "a x c"), ("e f", "e f")]) == pytest.approx(2 / 6)  # corpus-level
    assert M.word_errors("", "extra words") == (2, 0)
    assert M.word_errors("two words", "") == (2, 2)


def test_identity_rate():
    assert M.identity_rate([[1, 2], [3]], [[1, 2], [4]]) == 0.5
    assert math.isnan(M.identity_rate([], []))
    with pytest.raises(ValueError):
        M.identity_rate([[1]], [])


def _rows():
    def row(uid, system, t, task="maintenance/en", voice="v1", **kw):
        d, l = task.split("/")
        base = dict(id=uid, system=system, decoder_s=t, audio_s=2.0, domain=d, lang=l, task=task, voice=voice,
                    set="synthetic", ref="a b", text="a b", identical=True)
        return {**base, **kw}
    return [
        row("u1", "greedy", 1.0), row("u1", "tokenmap", 0.5, drafted=10, accepted=8, drafts=2,
                                      drafts_log=[(6, 5), (4, 3)]), row("u1", "oracle", 0.4),
        row("u2", "greedy", 3.0, task="incar/fr", voice="v2"),
        row("u2", "tokenmap", 3.0, task="incar/fr", voice="v2", drafted=10, accepted=2, drafts=5,
            drafts_log=[(2, 1), (2, 0), (2, 1), (2, 0), (2, 0)]),
        row("u2", "oracle", 1.0, task="incar/fr", voice="v2", identical=False),
    ]


def test_summarize_sums_times_before_dividing():
    s = A.summarize_systems(_rows())
    assert s["tokenmap"]["S"] == pytest.approx(4.0 / 3.5)  # not the mean of 2.0 and 1.0
    assert s["tokenmap"]["A_r"] == pytest.approx(10 / 20) and s["tokenmap"]["A_l"] == pytest.approx(10 / 7)
    assert s["oracle"]["identity"] == 0.5 and s["greedy"]["S"] == 1.0
    assert s["greedy"]["rtf"] == pytest.approx(4.0 / 4.0) and s["greedy"]["wer"] == 0.0


def test_aggregation_by_group_and_fairness():
    agg = A.aggregate(_rows())
    tasks = agg["groups"]["task"]
    assert set(tasks) == {"maintenance/en", "incar/fr"}
    assert tasks["maintenance/en"]["tokenmap"]["S"] == 2.0 and tasks["incar/fr"]["tokenmap"]["S"] == 1.0
    assert set(agg["groups"]["voice"]) == {"v1", "v2"}
    f = agg["fairness"]
    assert f["D_T"] == {"incar/fr": pytest.approx(0.8), "maintenance/en": pytest.approx(0.2)}
    assert f["U"] == pytest.approx((0.6 ** 2) / 2)
    assert f["S_spread"]["min"] == 1.0 and f["S_spread"]["max"] == 2.0
    assert agg["oracle_fraction"]["task"]["maintenance/en"] == pytest.approx(0.5 / 0.6)
    assert agg["acceptance_by_length"][2] == {"drafts": 5, "A_r": 0.2, "A_l": 0.4}
    assert agg["acceptance_by_length"][6]["A_l"] == 5


def test_baselines():
    systems = {"greedy", "greedy-nots", "distil-spec"}
    assert A.baseline_of("distil-spec", systems) == "greedy-nots"
    assert A.baseline_of("distil-spec", {"greedy"}) == "greedy"
    assert A.baseline_of("tokenmap-e2e", systems) == "fw-e2e"
    assert A.baseline_of("stock", systems) == "greedy"


def test_vocab_maps_by_string():
    d2m, m2d = vocab_maps(["a", "b", "<|en|>", "c"], ["b", "x", "<|en|>"])
    assert d2m == [1, -1, 2] and m2d == [-1, 0, 2, -1]


def test_heavy_ids_first_per_group():
    utts = [Recording(f"u{i}", "/x", "t", "telephony" if i < 3 else "incar", "en", set="s") for i in range(5)]
    assert heavy_ids(utts, 1) == {"u0", "u3"}
    assert heavy_ids(utts, 0) == {f"u{i}" for i in range(5)}


def test_options_reject_unknown_system():
    with pytest.raises(ValueError, match="unknown systems"):
        BenchOptions(systems=("greedy", "beam"))


def test_manifest_errors_name_the_fix(tmp_path):
    with pytest.raises(BenchDataError, match="make bench-data"):
        load_manifest(tmp_path / "missing.jsonl")
    bad = tmp_path / "m.jsonl"
    bad.write_text(json.dumps({"id": "a", "audio": "a.flac", "text": "t", "domain": "d", "lang": "en"}) + "\n")
    with pytest.raises(BenchDataError, match="audio missing"):
        load_manifest(bad)
    (tmp_path / "a.flac").write_bytes(b"")
    utt = load_manifest(bad)[0]
    assert utt.audio == str(tmp_path / "a.flac") and utt.task == "d/en"


def test_update_docs_replaces_only_the_generated_section(tmp_path):
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\nhand-written intro\n")
    update_docs(doc, "first run")
    update_docs(doc, "second run")
    text = doc.read_text()
    assert "hand-written intro" in text and "second run" in text and "first run" not in text
    assert text.count(BEGIN) == 1 and text.count(END) == 1


def test_markdown_report_renders(tmp_path):
    result = {"aggregates": A.aggregate(_rows()), "machine": {"date": "d", "cpu": "cpu", "cores": 2,
              "git_commit": "abc", "command": "tokenmap bench"}, "manifest": "m.jsonl", "utterances": 2,
              "options": BenchOptions().__dict__, "cost_model": {"source": "default"}, "peak_rss_mb": {}}
    md = markdown(result)
    assert "| tokenmap |" in md and "Table I" in md and "U = " in md


def test_options_reject_unknown_map_mode():
    with pytest.raises(ValueError, match="map modes"):
        BenchOptions(map_modes=("per-task", "shared"))
    assert BenchOptions(map_modes=("per-task", "multi", "balanced")).map_modes[1:] == ("multi", "balanced")


def test_map_modes_report_per_system_fairness():
    rows = _rows()
    # a balanced map that helps the slow task (incar/fr) and keeps the fast one (maintenance/en)
    rows += [dict(r, system="tokenmap-balanced",
                  decoder_s=r["decoder_s"] if r["task"] == "maintenance/en" else 2.0,
                  accepted=8 if r["task"] == "maintenance/en" else 6)
             for r in rows if r["system"] == "tokenmap"]
    agg = A.aggregate(rows)
    modes = agg["map_modes"]
    assert set(modes) == {"tokenmap", "tokenmap-balanced"}
    assert modes["tokenmap-balanced"]["U"] < modes["tokenmap"]["U"]
    assert modes["tokenmap-balanced"]["S_spread"]["min"] == pytest.approx(1.5)
    assert modes["tokenmap-balanced"]["S_spread"]["max"] == modes["tokenmap"]["S_spread"]["max"] == pytest.approx(2.0)
    result = {"aggregates": agg, "machine": {"date": "d", "cpu": "cpu", "cores": 2, "git_commit": "abc",
              "command": "tokenmap bench"}, "manifest": "m.jsonl", "utterances": 2,
              "options": BenchOptions().__dict__, "cost_model": {"source": "default"}, "peak_rss_mb": {}}
    md = markdown(result)
    assert "#### Map modes" in md and "| `tokenmap-balanced` |" in md
    assert "On the 2 utterances that every map mode decoded exactly as greedy did" in md


def test_map_modes_on_identical_utterances_only():
    rows = _rows()
    rows += [dict(r, system="tokenmap-taught", decoder_s=0.1 if r["task"] == "incar/fr" else r["decoder_s"],
                  identical=r["task"] != "incar/fr")  # a changed (shorter) output on incar/fr: not comparable
             for r in rows if r["system"] == "tokenmap"]
    rows.append(dict(rows[0], id="u3", system="greedy"))  # an utterance the map modes did not decode
    same = A.aggregate(rows)["map_modes_identical"]
    assert same["utterances"] == 1 and set(same["task"]) == {"maintenance/en"}
    assert set(same["task"]["maintenance/en"]) == {"greedy", "tokenmap", "tokenmap-taught"}  # oracle left out
    assert same["modes"]["tokenmap-taught"]["S_spread"]["max"] == pytest.approx(2.0)
    assert A.aggregate(rows)["map_modes"]["tokenmap-taught"]["S_spread"]["max"] == pytest.approx(30.0)
    assert A.map_modes_identical(rows, {"tokenmap": {}}) == {}


def test_bench_maps_name_the_map_each_system_drafts_from(tmp_path):
    from tokenmap_bench.data import BenchMaps

    own = {("maintenance", "en"): tmp_path / "m.tmap", ("telephony", "en"): None}
    maps = BenchMaps(tasks=own, shared={"multi": tmp_path / "multi.tmap", "balanced": None})
    assert maps.drafted_by("tokenmap") == own
    assert maps.drafted_by("tokenmap-multi") == dict.fromkeys(own, tmp_path / "multi.tmap")
    assert maps.drafted_by("tokenmap-balanced") == {}
    assert maps.as_dict() == {"maintenance/en": str(tmp_path / "m.tmap"), "telephony/en": None,
                              "multi": str(tmp_path / "multi.tmap"), "balanced": None}


def test_end_to_end_per_regime_against_stock():
    from tokenmap_bench.report import bucket_e2e_text, regime_e2e_text

    def row(uid, system, t, regime, audio_s, set_="s"):
        return dict(id=uid, system=system, decoder_s=t, audio_s=audio_s, domain="d", lang="en", task=f"{regime}/en",
                    voice="v", set=set_, regime=regime, ref="a b", text="a b", identical=True)

    rows = [row("s1", "greedy", 0.2, "scripted", 2.0), row("s1", "fw-e2e", 1.0, "scripted", 2.0),
            row("s1", "tokenmap-e2e", 1.25, "scripted", 2.0), row("s1", "stock-e2e", 0.8, "scripted", 2.0),
            row("d1", "greedy", 1.5, "structured", 30.0), row("d1", "fw-e2e", 3.0, "structured", 30.0),
            row("d1", "tokenmap-e2e", 2.0, "structured", 30.0), row("d1", "stock-e2e", 2.5, "structured", 30.0)]
    rows += [row("c1", s, t, "scripted", 25.0, "calls") for s, t in
             (("greedy", 1.0), ("fw-e2e", 2.0), ("tokenmap-e2e", 1.6), ("tokenmap-recall-e2e", 1.2),
              ("stock-e2e", 2.4), ("stock-untuned-e2e", 4.0))]
    rows += [dict(row("c1", "tokenmap-short-e2e", 0.8, "scripted", 25.0, "calls"), short_windows=1, guarded=1)]
    for r in rows:
        r["bucket"] = "10-30 s" if r["audio_s"] >= 10 else "2-5 s"
    agg = A.aggregate(rows)
    json.dumps(agg)  # results.json holds it: keys must be strings
    text = regime_e2e_text(agg)
    lines = {tuple(c.strip() for c in line.split("|")[1:4]): line for line in text.splitlines()[2:]}
    dense = lines["structured", "s", "`tokenmap-e2e`"]  # S vs tuned stock, vs untuned stock, vs fw-e2e
    assert "| 30.0 |" in dense and dense.endswith("| 1.25 | – | 1.50 |")
    assert lines["scripted", "s", "`tokenmap-e2e`"].endswith("| 0.64 | – | 0.80 |")
    assert lines["scripted", "calls", "`tokenmap-e2e`"].endswith("| 1.50 | 2.50 | 1.25 |")
    assert lines["scripted", "calls", "`tokenmap-recall-e2e`"].endswith("| 2.00 | 3.33 | 1.67 |")
    assert ("structured", "s", "`tokenmap-recall-e2e`") not in lines
    buckets = {tuple(c.strip() for c in line.split("|")[1:3]): line for line in
               bucket_e2e_text(agg).splitlines()[2:]}
    assert buckets["bucket 10-30 s", "`tokenmap-short-e2e`"].endswith("| 3.00 | 5.00 | 0.0 | 0 (0) | 1 of 1 |")


def test_loops_and_stopped_loops_are_counted_per_system_and_set():
    def row(uid, system, set_, text="a b", **kw):
        return dict(id=uid, system=system, decoder_s=1.0, audio_s=2.0, domain="d", lang="it", task="t/it",
                    voice="v", set=set_, ref="a b", text=text, identical=True, loops=M.looped(text), **kw)

    loop = "Grazie. " * 40
    rows = [row("u1", "greedy", "asterisk-it", loop), row("u1", "tokenmap", "asterisk-it", "Grazie.", loops_stopped=1),
            row("u2", "greedy", "asterisk-ru"), row("u2", "tokenmap", "asterisk-ru")]
    agg = A.aggregate(rows)
    assert (agg["systems"]["greedy"]["loops"], agg["systems"]["greedy"]["loops_stopped"]) == (1, 0)
    assert (agg["systems"]["tokenmap"]["loops"], agg["systems"]["tokenmap"]["loops_stopped"]) == (0, 1)
    by_set = agg["groups"]["set"]
    assert by_set["asterisk-it"]["greedy"]["loops"] == 1 and by_set["asterisk-ru"]["greedy"]["loops"] == 0
    from tokenmap_bench.report import system_table

    lines = {line.split("|")[1].strip(): line for line in system_table(agg["systems"]).splitlines()[2:]}
    assert lines["greedy"].endswith("| 1 (0) |") and lines["tokenmap"].endswith("| 0 (1) |")


def test_the_open_regime_can_have_its_own_repetitions():
    options = BenchOptions(reps=3, open_reps=15)
    assert options.reps_for("open") == 15
    assert options.reps_for("scripted") == options.reps_for("structured") == 3
    assert BenchOptions(reps=4).reps_for("open") == 4
    with pytest.raises(ValueError):
        BenchOptions(open_reps=-1)
    result = {"machine": {"date": "d", "cpu": "c", "cores": 2, "git_commit": "g", "command": "tokenmap bench"},
              "options": BenchOptions(reps=3, open_reps=15).__dict__, "manifest": "m.jsonl", "utterances": 7,
              "cost_model": {"source": "default"}, "peak_rss_mb": {}}
    assert "3 repetitions (open regime 15; end-to-end 3)" in header_text(result)
    result["options"] = BenchOptions(reps=3).__dict__
    assert "3 repetitions (end-to-end 3)" in header_text(result)


def test_speedup_interval_covers_the_pooled_speedup_and_narrows_with_agreement():
    steady = [(2.0, 1.0)] * 20
    assert M.speedup_interval(steady) == (2.0, 2.0)
    mixed = [(2.0, 1.0)] * 10 + [(1.0, 1.0)] * 10
    low, high = M.speedup_interval(mixed)
    assert low < M.speedup(30.0, 20.0) < high
    assert 1.0 < low and high < 2.0
    assert all(math.isnan(x) for x in M.speedup_interval([]))


def test_unfairness_interval_redraws_utterances_within_each_task():
    even = {"a": [(10, 5)] * 8, "b": [(10, 5)] * 8}
    assert M.unfairness_interval(even) == (0.0, 0.0)
    uneven = {"a": [(10, 9), (10, 1)] * 8, "b": [(10, 5)] * 16}
    low, high = M.unfairness_interval(uneven)
    assert low == 0.0 < high


def test_tts_voices_the_model_does_not_hear_leave_the_headline_and_fairness():
    def row(uid, system, voice, text, tts, drafted=4, accepted=2):
        return dict(id=uid, system=system, decoder_s=1.0, audio_s=2.0, domain="d", lang="en", task="d/en",
                    voice=voice, set="s", ref="one two three", text=text, tts=tts, identical=True,
                    drafted=drafted, accepted=accepted)

    rows = []
    for i in range(3):
        rows += [row(f"r{i}", "greedy", "real", "one two three", False),
                 row(f"r{i}", "tokenmap", "real", "one two three", False),
                 row(f"m{i}", "greedy", "mumbled", "four", True),
                 row(f"m{i}", "tokenmap", "mumbled", "four", True, accepted=0),
                 row(f"c{i}", "greedy", "clear", "one two three", True),
                 row(f"c{i}", "tokenmap", "clear", "one two three", True)]
    agg = A.aggregate(rows)
    assert agg["voice_bound"] == {"mumbled": 1.0}
    assert agg["systems"]["greedy"]["n"] == 6          # the real and the clear voice's utterances
    assert agg["systems"]["tokenmap"]["A_r"] == 0.5
    assert agg["groups"]["voice"]["mumbled"]["greedy"]["n"] == 3   # still shown per group
    assert agg["intervals"]["task"]["tokenmap"]["d/en"] == (1.0, 1.0)
    lossy = [dict(r, text="four") if r["voice"] == "real" else r for r in rows]
    assert "real" not in A.aggregate(lossy)["voice_bound"]     # real speech always counts
