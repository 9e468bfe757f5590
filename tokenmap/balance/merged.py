"""``tokenmap build --balance --layout merged``: the balanced budgets in *one* map.

The first form of ``--balance`` (kept for comparison; the default layout is
a map set, :mod:`tokenmap.balance.plan`).  One map must serve every task, so the
thin tasks' extra budget has to live beside the well-served tasks' keys:

* tasks within :data:`tokenmap.balance.budget.PROTECT` of the best are *protected*:
  their corpora are counted together with the default budget (exactly a
  plain multi-task map over them), their candidates lead every key, and
  another task's key is dropped where the protected corpora have that
  context but their map backs off from it (:func:`drop_shadowing`);
* a task whose count threshold was lowered keeps its rare n-grams only where
  no other task's corpus has that context (:func:`drop_foreign_rare`);
* the keys are merged (:func:`merge_arrays`): a key seen in several tasks
  keeps the candidates of each, ranked by their saving under the
  ``weight``-ed share of the key's count, the protected tasks' first.

On the bench audio this lowered U but also the fastest task's speed-up
(docs/BENCHMARKS.md): a single map cannot give a thin task more drafts
without drafting them on the fastest task's text too.
"""

from __future__ import annotations

import logging
from typing import Mapping, Sequence

import numpy as np

from numpy.lib.stride_tricks import sliding_window_view

from tokenmap.balance.budget import PROTECTED, Budget
from tokenmap.balance.plan import BalancePlan
from tokenmap.balance.streams import task_arrays
from tokenmap.build.builder import make_header, require_keys
from tokenmap.decode.cost import CostModel
from tokenmap.maps import mapfile, schema

log = logging.getLogger("tokenmap")

def ngram_hashes(streams: Sequence[np.ndarray], n: int) -> np.ndarray:
    """Sorted unique :func:`tokenmap.maps.mapfile.key_hash_rows` of every ``n``-gram of ``streams``."""
    parts = [mapfile.key_hash_rows(sliding_window_view(s, n)) for s in streams if len(s) >= n]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.uint64)


def drop_foreign_rare(arrays: dict, others: Sequence[np.ndarray], min_count: int, order: int) -> dict:
    """``arrays`` without the keys counted fewer than ``min_count`` times that occur in ``others``.

    A task with a lowered count threshold keeps its rare n-grams only where
    no other task's corpus has that context: a thin task's singleton must not
    take over (by longest-suffix back-off) a context another task drafts.
    """
    entries = _entries(arrays)
    drop = set()
    for n in range(1, order + 1):
        rare = [k for k, (count, _) in entries.items() if len(k) == n and count < min_count]
        if rare:
            seen = np.isin(mapfile.key_hash_rows(np.array(rare, np.uint32)), ngram_hashes(others, n))
            drop.update(k for k, hit in zip(rare, seen.tolist()) if hit)
    keep = {k: v for k, v in entries.items() if k not in drop}
    log.debug("kept %d of %d keys (rare keys seen in other tasks dropped)", len(keep), len(entries))
    return _to_arrays(keep, order)



def _entries(arrays: dict) -> dict:
    """``{key tokens: (count, [(cand tokens, expected, saving), ...])}`` of one map's arrays."""
    oo = arrays["order_offsets"].tolist()
    co, to = arrays["cand_offsets"].tolist(), arrays["cand_tok_offsets"].tolist()
    toks, exp, sav = arrays["cand_tokens"], arrays["cand_expected"].tolist(), arrays["cand_saving"].tolist()
    keys, counts = arrays["key_tokens"], arrays["key_count"].tolist()
    out = {}
    for n in range(1, len(oo)):
        for row in range(oo[n - 1], oo[n]):
            cands = [(tuple(toks[to[c]:to[c + 1]].tolist()), exp[c], sav[c]) for c in range(co[row], co[row + 1])]
            out[tuple(keys[row, :n].tolist())] = (counts[row], cands)
    return out


def _pool(contrib: list, budgets: Mapping[str, Budget], cost: CostModel) -> list:
    """Candidates of ``[(task, count, cands)]`` pooled by first token, best saving first.

    Candidates that start with the same token add their expected accepted
    tokens, weighted by ``weight_T * count_T`` (as if the tasks' weighted
    corpora were counted together); the tokens of the largest contributor are
    kept; candidates that would not save time are dropped.
    """
    total = sum(budgets[t].weight * count for t, count, _ in contrib) or 1.0
    pooled: dict = {}  # first token -> [expected, (contribution, tokens)]
    for task, count, cands in contrib:
        mass = budgets[task].weight * count / total
        for toks, exp, _ in cands:
            entry = pooled.setdefault(toks[0], [0.0, (-1.0, toks)])
            entry[0] += exp * mass
            entry[1] = max(entry[1], (exp * mass, toks))
    scored = []
    for exp, (_, toks) in pooled.values():
        sav = exp * cost.step_ms - (cost.batch(len(toks) + 1) - cost.step_ms)
        if sav > 0:
            scored.append((toks, exp, sav))
    return sorted(scored, key=lambda c: -c[2])


def _rank_key(contrib: list, budgets: Mapping[str, Budget], protected: frozenset, cost: CostModel) -> list:
    """Merged, ranked candidates of one key from ``[(task, count, cands)]``.

    The protected tasks' candidates come first, pooled among themselves as a
    plain multi-task map would (:func:`_pool`, default weights), then those
    of every task pooled with the budgets' weights; a key the protected map
    holds without candidates keeps none.
    """
    own = [c for c in contrib if c[0] in protected]
    if own and not any(cands for _, _, cands in own):
        return []  # the protected map stops its back-off here without a draft: so does the merged map
    ranked = (_pool(own, budgets, cost) if own else []) + _pool(contrib, budgets, cost)
    cap = max(budgets[t].max_candidates for t, _, _ in contrib)
    out, firsts = [], set()
    for toks, exp, sav in ranked:
        if toks[0] not in firsts and len(out) < cap:
            firsts.add(toks[0])
            out.append((toks, exp, sav))
    return out


def drop_shadowing(per_task: Mapping[str, dict], protected_stream: np.ndarray, protected_arrays: dict,
                   order: int) -> dict:
    """``{task: arrays}`` without the keys the protected corpora contain but their map left out.

    Such a context is the protected tasks' own, and their map backs off from
    it to a shorter key; another task's key there would take their drafts over.
    The protected n-grams are hashed once for all tasks.
    """
    own = set(_entries(protected_arrays))
    seen = {n: ngram_hashes([protected_stream], n) for n in range(1, order + 1)}
    out = {}
    for task, arrays in per_task.items():
        entries = _entries(arrays)
        drop = set()
        for n in range(1, order + 1):
            cand = [k for k in entries if len(k) == n and k not in own]
            if cand:
                hit = np.isin(mapfile.key_hash_rows(np.array(cand, np.uint32)), seen[n])
                drop.update(k for k, h in zip(cand, hit.tolist()) if h)
        out[task] = _to_arrays({k: v for k, v in entries.items() if k not in drop}, order) if drop else arrays
    return out


def merge_arrays(per_task: Mapping[str, dict], budgets: Mapping[str, Budget], protected: Sequence[str],
                 order: int, cost: CostModel) -> dict:
    """One map's arrays from per-task arrays (see the module docstring)."""
    keys: dict = {}
    for task in sorted(per_task):
        for key, (count, cands) in _entries(per_task[task]).items():
            keys.setdefault(key, []).append((task, count, cands))
    protected = frozenset(protected)
    merged = {key: (sum(c for _, c, _ in contrib), _rank_key(contrib, budgets, protected, cost))
              for key, contrib in keys.items()}
    return _to_arrays(merged, order)


def _to_arrays(merged: dict, order: int) -> dict:
    """Arrays of :data:`tokenmap.maps.schema.SCHEMA` from ``{key: (count, cands)}`` (hash-sorted per order)."""
    key_rows, counts, cand_counts, lens, flat, exps, savs, sizes = [], [], [], [], [], [], [], []
    for n in range(1, order + 1):
        block = [k for k in merged if len(k) == n]
        if block:
            hashes = mapfile.key_hash_rows(np.array(block, dtype=np.uint32).reshape(len(block), n))
            block = [block[i] for i in np.argsort(hashes, kind="stable")]
        sizes.append(len(block))
        for key in block:
            count, cands = merged[key]
            key_rows.append(list(key) + [schema.PAD] * (order - n))
            counts.append(min(count, 0xFFFFFFFF))
            cand_counts.append(len(cands))
            for toks, exp, sav in cands:
                lens.append(len(toks))
                flat.extend(toks)
                exps.append(exp)
                savs.append(sav)
    key_tok = np.array(key_rows, dtype=np.uint32).reshape(-1, order)
    return {
        "key_hash": np.concatenate([mapfile.key_hash_rows(key_tok[a:b, :n]) for n, (a, b) in
                                    enumerate(zip(np.cumsum([0] + sizes[:-1]), np.cumsum(sizes)), 1)]
                                   ).astype(np.uint64) if key_rows else np.zeros(0, np.uint64),
        "key_tokens": key_tok,
        "key_count": np.array(counts, dtype=np.uint32),
        "order_offsets": np.r_[0, np.cumsum(sizes)].astype(np.int64),
        "cand_offsets": np.r_[0, np.cumsum(cand_counts)].astype(np.int64),
        "cand_tok_offsets": np.r_[0, np.cumsum(lens)].astype(np.int64),
        "cand_tokens": np.array(flat, dtype=np.uint32),
        "cand_expected": np.array(exps, dtype=np.float32),
        "cand_saving": np.array(savs, dtype=np.float32),
    }


def build_merged(plan: BalancePlan):
    """One map over the tasks of ``plan`` (module docstring); returns a :class:`tokenmap.build.builder.BuildResult`."""
    options, default, protected = plan.options, plan.default, plan.protected
    bos, sep = plan.bos, plan.sep
    if plan.progress:
        plan.progress("count", 0)
    streams = plan.streams
    per_task = {task: task_arrays(streams[task], plan.budgets[task], options, plan.cost, bos, sep)
                for task in plan.tasks if task not in protected}
    joint = np.concatenate([streams[t] for t in protected])  # counted together, as a plain multi map
    per_task[PROTECTED] = task_arrays(joint, default, options, plan.cost, bos, sep)
    budgets = {**plan.budgets, PROTECTED: default}
    for task, budget in budgets.items():
        if budget.min_count < default.min_count:
            others = [streams[t] for t in streams if t != task]
            per_task[task] = drop_foreign_rare(per_task[task], others, default.min_count, options.max_order)
    others = {task: arrays for task, arrays in per_task.items() if task != PROTECTED}
    per_task.update(drop_shadowing(others, joint, per_task[PROTECTED], options.max_order))
    arrays = merge_arrays(per_task, budgets, [PROTECTED], options.max_order, plan.cost)
    header = make_header(plan.tokenizer, plan.model, options, plan.stats, plan.cost, plan.n_tokens(streams))
    header["balance"] = plan.header("merged")
    tm = mapfile.TokenMap(dict(header), arrays)
    header["self_test"] = plan.self_test(tm, streams.values())
    require_keys(tm.num_keys, plan.stats, header["tokens"], options.min_count)
    if plan.progress:
        plan.progress("save", 0)
    size = mapfile.write_map(plan.output, header, arrays)
    return plan.result(size, header, [tm])
