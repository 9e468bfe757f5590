"""Share a multi-task map's budget fairly: the token-map analogue of s-CDF.

A task is a corpus ``domain/lang``.  A thin task (few lines, e.g. the
telephony prompts) gets short, rare drafts from a map, and so a small
speed-up.  s-CDF (disparate-impacts paper, eq. 9) weights each task's update
by its *excess divergence* ``D_T - D_min``; here the "update" is how generous
the map's budget is for the task (:data:`GENEROUS` is the worst task's):

* ``min_count``: lower keeps rarer n-grams (more keys, more drafts);
* ``max_candidates``: more candidates per key;
* ``max_draft_len``: the longest draft (shorter = cheaper wrong drafts);
* ``weight``: how much the task's counts weigh when a key is shared with
  other tasks in the merged map (which candidate is drafted first).

:func:`allocate` moves every setting from its default towards the generous
bound in proportion to ``w_T = (D_T - D_min) / (D_max - D_min)``: the best
task (``w = 0``) keeps the defaults, the worst (``w = 1``) gets the bound.
Tasks within :data:`PROTECT` of the best (``w_T <= PROTECT``) are
*protected*: their corpora are counted together with the default budget
(exactly a plain multi-task map over them), their candidates lead every
key, and another task's key is dropped where the protected corpora have
that context but their map backs off from it (:func:`drop_shadowing`), so
the thin tasks' extra budget does not displace the well-served tasks' drafts.
``D_T`` comes from :mod:`tokenmap.divergence` on a dev split of each task's
training corpus (every 10th line), never on test sentences.

Worked example (defaults 2/3/16/1, worst-task bound 1/6/24/8)::

    >>> bound = Budget(min_count=1, max_candidates=6, max_draft_len=24, weight=8.0)
    >>> alloc = allocate({"maint/en": 4.0, "tel/en": 8.0, "tel/es": 6.0}, generous=bound)
    >>> alloc["maint/en"] == DEFAULT_BUDGET            # w = 0: unchanged
    True
    >>> alloc["tel/en"]                                # w = 1: the bound
    Budget(min_count=1, max_candidates=6, max_draft_len=24, weight=8.0)
    >>> alloc["tel/es"]                                # w = 0.5: half way (integers round half up)
    Budget(min_count=2, max_candidates=5, max_draft_len=20, weight=4.5)
    >>> allocate({"maint/en": 4.0, "tel/en": 8.0, "tel/es": 6.0}, generous=bound, protect=0.5)["tel/es"]
    Budget(min_count=2, max_candidates=3, max_draft_len=16, weight=1.0)

:func:`build_balanced` (``tokenmap build --balance``) counts and prunes each
unprotected task with its budget (the protected ones as one stream); a task whose count threshold was lowered keeps its
rare n-grams only where no other task's corpus has that context
(:func:`drop_foreign_rare`); then the keys are merged (:func:`merge_arrays`):
a key seen in several tasks keeps the candidates of each, ranked by their
saving under the weighted share of the key's count, except that the
protected tasks' candidates come first.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from tokenmap import mapfile
from tokenmap.cost import CostModel
from tokenmap.ngrams import count_levels, select_candidates

log = logging.getLogger("tokenmap")


@dataclass(frozen=True)
class Budget:
    """One task's share of the map's budget (see the module docstring)."""

    min_count: int = 2
    max_candidates: int = 3
    max_draft_len: int = 16
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.min_count < 1 or self.max_candidates < 1 or not 1 <= self.max_draft_len <= 64 or self.weight <= 0:
            raise ValueError("budget needs min_count, max_candidates >= 1, max_draft_len 1..64, weight > 0")


DEFAULT_BUDGET = Budget()
#: the budget of the worst task (w = 1).  Chosen on the dev split (``python benchmarks/fairness.py
#: --split dev --variant ...``, never on test sentences): singletons (min_count 1) lower a thin
#: task's D_T and raise its speed-up (the telephony prompts are mostly unique lines), but on a large
#: corpus they give confident wrong drafts, hence :data:`PROTECT`; drafts longer than 8 lowered S.
GENEROUS = Budget(min_count=1, max_candidates=6, max_draft_len=8, weight=8.0)
DEV_EVERY = 10  # every 10th training line of a task is its dev split
PROTECTED = "(protected)"  # the protected tasks' corpora, counted as one
#: tasks with w_T <= PROTECT keep the default budget and lead the keys they share (the best task
#: always does).  0.65 on the dev split: the structured domains (w <= 0.60) are protected, the
#: telephony prompts (w >= 0.87) get the budget (at 0.25 / 0.5, with the earlier per-task merge,
#: maintenance/en lost 5-6 % of its S).
PROTECT = 0.65


def excess(divergence: Mapping[str, float]) -> dict[str, float]:
    """``D_T - D_min`` per task (finite values only)."""
    finite = {t: d for t, d in divergence.items() if d is not None and not math.isnan(d)}
    if not finite:
        return {}
    low = min(finite.values())
    return {t: d - low for t, d in finite.items()}


def shares(divergence: Mapping[str, float]) -> dict[str, float]:
    """``w_T = (D_T - D_min) / (D_max - D_min)`` in [0, 1]; all 0 when every D_T is equal."""
    ex = excess(divergence)
    top = max(ex.values(), default=0.0)
    return {t: (e / top if top > 0 else 0.0) for t, e in ex.items()}


def best_task(divergence: Mapping[str, float]) -> str | None:
    """The task with the smallest ``D_T`` (first in sorted order on ties)."""
    ex = excess(divergence)
    return min(sorted(ex), key=ex.get) if ex else None


def protected_tasks(divergence: Mapping[str, float], below: float = PROTECT) -> list[str]:
    """Tasks with ``w_T <= below``, best first: their candidates lead every key they share.

    The best task is always protected (``below = 0`` protects it alone).
    """
    w = shares(divergence)
    best = best_task(divergence)
    keep = [t for t in w if t == best or w[t] <= below]
    return sorted(keep, key=lambda t: (w[t], t))


def _lerp_int(lo: int, hi: int, w: float) -> int:
    return int(math.floor(lo + w * (hi - lo) + 0.5))


def allocate(divergence: Mapping[str, float], default: Budget = DEFAULT_BUDGET,
             generous: Budget = GENEROUS, protect: float = 0.0) -> dict[str, Budget]:
    """Per-task budgets, each setting moved from ``default`` towards ``generous`` by ``w_T``.

    Tasks with a NaN ``D_T`` and protected tasks (``w_T <= protect``) keep
    the defaults; every result lies between ``default`` and ``generous``
    (either may be the larger, per setting).
    """
    w = shares(divergence)
    out = {}
    for task in divergence:
        x = w.get(task, 0.0) if w.get(task, 0.0) > protect else 0.0
        out[task] = Budget(min_count=_lerp_int(default.min_count, generous.min_count, x),
                           max_candidates=_lerp_int(default.max_candidates, generous.max_candidates, x),
                           max_draft_len=_lerp_int(default.max_draft_len, generous.max_draft_len, x),
                           weight=round(default.weight + x * (generous.weight - default.weight), 6))
    return out


# -- per-task counting -------------------------------------------------------
def task_name(domain: str, lang: str) -> str:
    """``domain/lang`` (just ``domain`` when the language is unknown)."""
    return f"{domain}/{lang}" if lang else (domain or "default")


def split_dev(texts: Sequence[str], every: int = DEV_EVERY) -> tuple[list[str], list[str]]:
    """``(train, dev)``: every ``every``-th line is dev; tasks under ``2 * every`` lines use all lines for both."""
    if len(texts) < 2 * every:
        return list(texts), list(texts)
    train = [t for i, t in enumerate(texts) if i % every != every - 1]
    dev = [t for i, t in enumerate(texts) if i % every == every - 1]
    return train, dev


def encode_stream(texts: Sequence[str], tokenizer, options) -> np.ndarray:
    """The ``BOS ids SEP ...`` uint32 stream of ``texts`` (as :func:`tokenmap.builder.encode_texts`)."""
    from tokenmap.builder import encode_texts

    parts = [np.frombuffer(encode_texts(texts[i:i + options.batch_size], tokenizer, options.style,
                                        options.add_raw), dtype=np.uint32)
             for i in range(0, len(texts), options.batch_size)]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint32)


def stream_sequences(tok: np.ndarray, bos: int, sep: int) -> list[list[int]]:
    """The utterances of a stream without BOS/SEP."""
    ends = np.flatnonzero(tok == sep)
    out, start = [], 0
    for e in ends.tolist():
        out.append([t for t in tok[start:e].tolist() if t != bos])
        start = e + 1
    return out


def task_arrays(tok: np.ndarray, budget: Budget, options, cost: CostModel, bos: int, sep: int) -> dict:
    """Map arrays of one task's stream, counted and pruned with ``budget``."""
    opts = replace(options, min_count=budget.min_count, max_candidates=budget.max_candidates,
                   max_draft_len=budget.max_draft_len)
    levels = count_levels(tok, sep, opts.min_count, opts.max_order + opts.max_draft_len, jobs=1)
    return select_candidates(levels, opts, cost, bos)


def memory_map(arrays: dict, order: int, vocab_size: int) -> mapfile.TokenMap:
    """An in-memory :class:`TokenMap` over ``arrays`` (for scoring before writing)."""
    return mapfile.TokenMap({"order": order, "vocab_size": vocab_size}, arrays)


def dev_divergence(texts: Sequence[str], tokenizer, options, cost: CostModel) -> tuple[float, int]:
    """``(D_T, dev tokens)`` of the task's default-budget map (built on its train split) on its dev split."""
    from tokenmap.divergence import cross_entropy

    bos, sep = tokenizer.vocab_size, tokenizer.vocab_size + 1
    train, dev = split_dev(texts)
    default = Budget(options.min_count, options.max_candidates, options.max_draft_len)
    arrays = task_arrays(encode_stream(train, tokenizer, options), default, options, cost, bos, sep)
    seqs = stream_sequences(encode_stream(dev, tokenizer, options), bos, sep)
    tm = memory_map(arrays, options.max_order, tokenizer.vocab_size)
    return cross_entropy(tm, seqs), sum(map(len, seqs))


# -- merging -------------------------------------------------------------------
def ngram_hashes(streams: Sequence[np.ndarray], n: int) -> np.ndarray:
    """Sorted unique :func:`tokenmap.mapfile.key_hash_rows` of every ``n``-gram of ``streams``."""
    from numpy.lib.stride_tricks import sliding_window_view

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
    """Arrays of :data:`tokenmap.mapfile.SCHEMA` from ``{key: (count, cands)}`` (hash-sorted per order)."""
    key_rows, counts, cand_counts, lens, flat, exps, savs, sizes = [], [], [], [], [], [], [], []
    for n in range(1, order + 1):
        block = [k for k in merged if len(k) == n]
        if block:
            hashes = mapfile.key_hash_rows(np.array(block, dtype=np.uint32).reshape(len(block), n))
            block = [block[i] for i in np.argsort(hashes, kind="stable")]
        sizes.append(len(block))
        for key in block:
            count, cands = merged[key]
            key_rows.append(list(key) + [mapfile.PAD] * (order - n))
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


# -- the build -------------------------------------------------------------------
def read_tasks(corpus, options, stats) -> dict[str, list[str]]:
    """``{task: [texts]}`` in corpus order; a line's task is its ``domain/lang`` (:mod:`tokenmap.corpus`)."""
    from tokenmap.corpus import check_nonempty, read_corpus

    tasks: dict[str, list[str]] = {}
    for utt in read_corpus(corpus, text_column=options.text_column, stats=stats):
        tasks.setdefault(task_name(utt.domain, utt.lang), []).append(utt.text)
    check_nonempty(stats)
    return tasks


def build_balanced(corpus: Sequence, output, *, model: str = "base", tokenizer=None, options=None,
                   cost: CostModel | None = None, force: bool = False, progress=None,
                   generous: Budget = GENEROUS, protect: float = PROTECT):
    """``tokenmap build --balance``: one map over all tasks with budgets from :func:`allocate`.

    Returns a :class:`tokenmap.builder.BuildResult`; the header gets a
    ``balance`` section with every task's ``D_T`` (dev split), ``w_T`` and budget.
    """
    from tokenmap.builder import BuildError, BuildOptions, BuildResult, _resolve, make_header, simulate
    from tokenmap.corpus import CorpusStats

    t0 = time.perf_counter()
    options = options or BuildOptions()
    output = Path(output)
    tokenizer, cost = _resolve(output, force, model, tokenizer, cost)
    bos, sep = tokenizer.vocab_size, tokenizer.vocab_size + 1
    stats = CorpusStats()
    tasks = read_tasks(corpus, options, stats)
    if progress:
        progress("load", stats.utterances)
    default = Budget(options.min_count, options.max_candidates, options.max_draft_len)
    divergence, dev_tokens = {}, {}
    for task, texts in tasks.items():
        divergence[task], dev_tokens[task] = dev_divergence(texts, tokenizer, options, cost)
    budgets = allocate(divergence, default, generous, protect)
    best = best_task(divergence)
    protected = protected_tasks(divergence, protect)
    if progress:
        progress("count", 0)
    streams = {task: encode_stream(texts, tokenizer, options) for task, texts in tasks.items()}
    per_task = {task: task_arrays(streams[task], budgets[task], options, cost, bos, sep)
                for task in tasks if task not in protected}
    joint = np.concatenate([streams[t] for t in protected])  # counted together, as a plain multi map
    per_task[PROTECTED] = task_arrays(joint, default, options, cost, bos, sep)
    budgets = {**budgets, PROTECTED: default}
    for task, budget in budgets.items():
        if budget.min_count < default.min_count:
            others = [streams[t] for t in streams if t != task]
            per_task[task] = drop_foreign_rare(per_task[task], others, default.min_count, options.max_order)
    others = {task: arrays for task, arrays in per_task.items() if task != PROTECTED}
    per_task.update(drop_shadowing(others, joint, per_task[PROTECTED], options.max_order))
    arrays = merge_arrays(per_task, budgets, [PROTECTED], options.max_order, cost)
    n_tokens = sum(len(s) for s in streams.values()) - 2 * stats.utterances
    header = make_header(tokenizer, model, options, stats, cost, n_tokens)
    w = shares(divergence)
    header["balance"] = {
        "rule": "setting = default + w_T * (generous - default), w_T = (D_T - D_min) / (D_max - D_min)",
        "divergence": "cross-entropy of the map's next-token distribution on every "
                      f"{DEV_EVERY}th training line (nats/token, tokenmap.divergence)",
        "best": best, "protected": protected, "default": asdict(default), "generous": asdict(generous),
        "tasks": {t: {"D_T": round(divergence[t], 4), "w": round(w.get(t, 0.0), 4), "dev_tokens": dev_tokens[t],
                      "lines": len(tasks[t]), **asdict(budgets[t])} for t in sorted(tasks)},
    }
    tm = mapfile.TokenMap(dict(header), arrays)
    sample = [s for task in sorted(streams) for s in stream_sequences(streams[task][:200_000], bos, sep)[:200]]
    header["self_test"] = {k: round(v, 4) if isinstance(v, float) else v for k, v in simulate(tm, sample).items()}
    if progress:
        progress("save", 0)
    size = mapfile.write_map(output, header, arrays)
    if not size:
        raise BuildError(f"{output}: nothing written")
    result = BuildResult(str(output), size, stats.utterances, dict(stats.skipped), int(header["tokens"]),
                         tm.num_keys, tm.num_candidates, tuple(tm.keys_per_order()),
                         round(time.perf_counter() - t0, 3), cost.source, header["self_test"])
    log.info("built balanced %s: %d tasks (best %s), %d keys, %d candidates", output, len(tasks), best,
             result.keys, result.candidates)
    return result
