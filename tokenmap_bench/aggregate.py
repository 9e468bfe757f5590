"""Per-utterance rows -> aggregates (per system, per group, fairness, acceptance curve).

Baselines: decoder systems against ``greedy`` on the fork (``distil-spec``
against greedy without timestamps, its own mode); end-to-end systems against
``fw-e2e`` (faster-whisper on the fork), against ``stock-e2e`` (stock
faster-whisper on stock CTranslate2 with the runtime settings tokenmap gives
itself: the anchor, ``S_vs_stock``) and against ``stock-untuned-e2e`` (the same
as users run it, ``S_vs_untuned``).
"""

from __future__ import annotations

import math
from collections import defaultdict

from tokenmap_bench import metrics as M
from tokenmap_bench.data import MAP_MODES

DECODER_BASELINE = "greedy"
E2E_BASELINE = "fw-e2e"
GROUPS = ("task", "domain", "lang", "voice", "set", "regime", "bucket")
#: a TTS voice whose plain greedy WER is above this measures the voice (speech the model cannot hear),
#: not drafting: its utterances are listed apart and left out of the headline, the regimes and the
#: fairness figures (real speech always counts)
VOICE_BOUND_WER = 0.3


def baseline_of(system: str, systems: set) -> str | None:
    if system.endswith("-e2e"):
        return E2E_BASELINE
    if system in ("distil-spec", "greedy-nots"):
        return "greedy-nots" if "greedy-nots" in systems else DECODER_BASELINE
    return DECODER_BASELINE


def _times(rows, system: str) -> dict:
    return {r["id"]: r["decoder_s"] for r in rows if r["system"] == system}


def summarize_systems(rows: list[dict]) -> dict:
    """``{system: summary}`` (see :func:`tokenmap_bench.metrics.summarize`) with ``S`` vs its baseline."""
    by_system = M.group_rows(rows, lambda r: r["system"])
    names = set(by_system)
    out = {}
    for name, group in by_system.items():
        out[name] = M.summarize(group, _times(rows, baseline_of(name, names)))
        anchors = {"S_vs_stock": "stock-e2e", "S_vs_untuned": "stock-untuned-e2e"} if name.endswith("-e2e") \
            else {"S_vs_stock": "stock"} if name == "tokenmap" else {}
        for key, anchor in anchors.items():
            if anchor in names:
                out[name][key] = _speedup_against(group, _times(rows, anchor))
    return out


def _speedup_against(group: list[dict], anchor: dict) -> float:
    """The anchor's summed time over the group's, on the utterances both ran."""
    both = [r for r in group if r["id"] in anchor]
    return M.speedup(sum(anchor[r["id"]] for r in both), sum(r["decoder_s"] for r in both))


def by_group(rows: list[dict], field: str) -> dict:
    """``{group value: {system: summary}}``."""
    return {key: summarize_systems(group) for key, group in sorted(M.group_rows(rows, lambda r: r[field]).items())}


def oracle_fractions(table: dict) -> dict:
    """``{group: F}`` with F = (T_greedy - T_map) / (T_greedy - T_oracle) from a :func:`by_group` table."""
    out = {}
    for key, systems in table.items():
        if {"greedy", "tokenmap", "oracle"} <= set(systems):
            ids_t = systems["greedy"]["decoder_s"], systems["tokenmap"]["decoder_s"], systems["oracle"]["decoder_s"]
            out[key] = M.oracle_fraction(*ids_t)
    return out


def fairness(task_table: dict, system: str = "tokenmap", rows: list[dict] | None = None) -> dict:
    """Definition 1 over tasks T = domain/lang with ``D_T = 1 - A_r(T)``, and the spread of S; with the
    per-utterance ``rows``, also U's bootstrap interval (``U_ci``, utterances redrawn within each task)."""
    d = {t: M.misfit(s[system]["A_r"]) for t, s in task_table.items() if system in s}
    speed = {t: s[system].get("S", math.nan) for t, s in task_table.items() if system in s}
    out = {"system": system, "D_T": d, "U": M.unfairness(d), "S_spread": M.spread(speed),
           "D_T_definition": "1 - A_r(T) (expected total variation of point-mass draft vs greedy token)"}
    if rows is not None:
        counts: dict = defaultdict(list)
        for r in rows:
            if r["system"] == system and r.get("task") in d:
                counts[r["task"]].append((r.get("drafted", 0), r.get("accepted", 0)))
        out["U_ci"] = M.unfairness_interval(counts)
    return out


def speedup_intervals(rows: list[dict], system: str, field: str = "task") -> dict:
    """``{group: (low, high)}``: the paired bootstrap interval of ``system``'s S against its baseline
    over the group's utterances."""
    pairs = _pairs([r for r in rows if field in r], system, lambda r: r[field])
    return {key: M.speedup_interval(group) for key, group in sorted(pairs.items())}


def map_modes(rows: list[dict], task_table: dict) -> dict:
    """``{system: fairness}`` for the per-task map (``tokenmap``) and every shared-map
    system (``tokenmap-multi``, ``tokenmap-balanced``, ``tokenmap-inferred``) run on the same audio."""
    wanted = {"tokenmap"} | {f"tokenmap-{mode}" for mode in MAP_MODES[1:]}
    names = sorted({r["system"] for r in rows if r["system"] in wanted})
    return {name: fairness(task_table, name, rows) for name in names}


def identical_rows(rows: list[dict], systems) -> list[dict]:
    """The decoder rows of ``greedy`` and ``systems`` on the utterances where every one of ``systems``
    decoded exactly greedy's tokens: their times differ by drafting alone, not by a different
    output (at int8 a batched pass can change a token, and a changed output can loop or stop early)."""
    systems = set(systems)
    bad = {r["id"] for r in rows if r["system"] in systems and not r.get("identical")}
    seen: dict = defaultdict(set)
    decoder = [r for r in rows if r.get("kind", "decoder") == "decoder"]
    for r in decoder:
        if r["system"] in systems:
            seen[r["id"]].add(r["system"])
    keep = {u for u, s in seen.items() if s == systems} - bad
    return [r for r in decoder if r["id"] in keep and r["system"] in systems | {"greedy"}]


def map_modes_identical(rows: list[dict], modes: dict) -> dict:
    """``{"utterances": n, "task": task table, "modes": {system: fairness}}`` of the map-mode systems
    on the utterances all of them decoded as greedy did (:func:`identical_rows`); {} with under two modes."""
    if len(modes) < 2:
        return {}
    same = identical_rows(rows, modes)
    table = by_group(same, "task")
    return {"utterances": len({r["id"] for r in same}), "task": table,
            "modes": {name: fairness(table, name) for name in modes}}


def acceptance_by_length(rows: list[dict], system: str = "tokenmap") -> dict:
    """``{draft length: {"drafts", "A_r", "A_l"}}`` from the per-draft logs of ``system``."""
    acc: dict = defaultdict(lambda: [0, 0])
    for r in rows:
        if r["system"] == system:
            for drafted, accepted in r.get("drafts_log", []):
                acc[drafted][0] += 1
                acc[drafted][1] += accepted
    return {n: {"drafts": c, "A_r": a / (c * n), "A_l": a / c} for n, (c, a) in sorted(acc.items())}


def regimes(rows: list[dict], bound: dict) -> dict:
    """Per regime (scripted, structured, open) of the heard ``rows``; ``bound`` (the voice-bound voices,
    :func:`voice_bound`) is listed apart: ``{"table", "oracle_fraction", "voice_bound", "all",
    "by_set"}``; ``by_set`` splits each regime by set, ``{regime: {set: {system: summary}}}`` (short
    prompts and dense windows of one regime are different end-to-end workloads)."""
    kept = [r for r in rows if "regime" in r]
    table = by_group(kept, "regime")
    by_set: dict = {}
    for (regime, set_), group in sorted(M.group_rows(kept, lambda r: (r["regime"], r.get("set", ""))).items()):
        by_set.setdefault(regime, {})[set_] = summarize_systems(group)
    return {"table": table, "oracle_fraction": oracle_fractions(table), "voice_bound": bound,
            "all": summarize_systems(kept) if kept else {}, "by_set": by_set}


def _pairs(rows: list[dict], system: str, key) -> dict:
    """``{key(row): [(baseline time, system time)]}`` over the utterances ``system`` and its baseline ran."""
    base = _times(rows, baseline_of(system, {r["system"] for r in rows}))
    mine = [r for r in rows if r["system"] == system and r["id"] in base]
    return {k: [(base[r["id"]], r["decoder_s"]) for r in g] for k, g in M.group_rows(mine, key).items()}


def voice_bound(rows: list[dict]) -> dict:
    """``{voice: greedy WER}`` of the TTS voices (rows with ``tts``) the model does not hear
    (:data:`VOICE_BOUND_WER`)."""
    tts = [r for r in rows if r.get("tts") and r["system"] == DECODER_BASELINE]
    out = {}
    for voice, group in sorted(M.group_rows(tts, lambda r: r.get("voice", "")).items()):
        wer = M.summarize(group)["wer"]
        if wer > VOICE_BOUND_WER:
            out[voice] = wer
    return out


def heard_rows(rows: list[dict], bound: dict) -> list[dict]:
    """``rows`` without the utterances of the voice-bound TTS voices ``bound``."""
    return [r for r in rows if not (r.get("tts") and r.get("voice", "") in bound)]


def aggregate(rows: list[dict]) -> dict:
    """Everything the report shows, JSON-ready. The headline (``systems``), the fairness figures and the
    map modes count only the tasks the model hears (:func:`voice_bound`); ``groups`` show every task."""
    groups = {field: by_group(rows, field) for field in GROUPS if all(field in r for r in rows)}
    bound = voice_bound(rows)
    heard = heard_rows(rows, bound)
    heard_tasks = by_group(heard, "task")
    modes = map_modes(heard, heard_tasks)
    systems = summarize_systems(heard)
    intervals = {name: speedup_intervals(heard, name) for name in systems}
    return {"systems": systems, "groups": groups, "voice_bound": bound,
            "intervals": {"task": intervals,
                          "all": {name: M.speedup_interval(_pairs(heard, name, lambda r: "all").get("all", []))
                                  for name in systems}},
            "oracle_fraction": {"all": oracle_fractions({"all": systems}).get("all"),
                                "task": oracle_fractions(groups["task"])},
            "fairness": fairness(heard_tasks, rows=heard), "fairness_oracle": fairness(heard_tasks, "oracle"),
            "map_modes": modes, "map_modes_identical": map_modes_identical(heard, modes),
            "acceptance_by_length": acceptance_by_length(heard), "regimes": regimes(heard, bound)}
