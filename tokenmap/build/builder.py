"""Build a token map from transcripts: load, validate, count, prune, save.

The pipeline (:func:`build_map`) is a fixed sequence:

1. **load** - stream utterances (:mod:`tokenmap.build.corpus`), bridge them to
   Whisper's style (:mod:`tokenmap.build.style`), tokenize them with the target
   model's tokenizer in batches and spool the ids to a temporary file as one
   flat ``uint32`` stream ``BOS t1 t2 ... SEP BOS ...``;
2. **validate** - refuse an output that is one of the inputs or lies inside an
   input directory, an existing output without ``force``, and an empty corpus
   (and, after step 4, a map without keys);
3. **count** - level by level (apriori, :mod:`tokenmap.build.counting`): the
   m-grams of the stream are counted with ``numpy`` (exact 64-bit keys
   ``parent_id << bits | token``), and only m-grams whose count reaches
   ``min_count`` are extended to length m + 1, up to ``max_order +
   max_draft_len``; beyond ``max_order + 1`` tokens only the branches a
   candidate can follow are extended.  It streams: each level is one pass
   over the spooled ids in chunks of ``counting.CHUNK_TOKENS`` tokens (their
   positions spilled to a temporary file between levels), so memory grows
   with the distinct n-grams of a level, not with the corpus;
4. **prune** - for every frequent context (``n <= max_order`` tokens) walk
   the trie of its continuations (most frequent child first) and cut the draft
   at the length ``L`` maximising ``E[accepted(L)] * step - (batch(L+1) - step)``
   (:class:`tokenmap.decode.cost.CostModel`), where ``E[accepted(L)] = sum_i
   count(key + prefix_i) / count(key)``; a candidate is kept only if that
   saving is positive; alternative candidates start at the 2nd, 3rd... most
   frequent next token (so no two candidates of a key share a prefix);
   **near-duplicates merge** (``merge_near_duplicates``, on by default): two
   candidates of a key that differ only in their first token over the
   shorter one's length (at least 2 tokens) are one pattern, e.g. after
   ``Pump`` the drafts `` 3 inspected, pressure`` and `` 4 inspected,`` -
   the one with the lower saving is merged into the other (dropped, counted
   in ``BuildResult.merged``), and the slot it frees goes to the next branch
   (one extra branch is walked per key).  The kept draft's saving is *not*
   raised by the merged one's count: verification is exact, so where the
   merged branch occurs the kept draft fails at its first token
   (:func:`tokenmap.build.ngrams.near_duplicates`).  The draft ``draft`` returns
   changes only where the refilled branch saves more than every kept one
   (3 of 25,769 keys on the English maintenance train split);
5. **save** - :func:`tokenmap.maps.mapfile.write_map`.

Example::

    >>> result = build_map(["maint.txt"], "out.tmap", model="base")   # doctest: +SKIP
    >>> result.keys, result.candidates, result.merged, result.size_bytes   # doctest: +SKIP
    (5120, 4406, 212, 210048)
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from tokenmap.build.corpus import CorpusStats, check_nonempty, read_corpus
from tokenmap.build.selftest import sample_utterances, self_test
from tokenmap.build.style import NO_BRIDGE, StyleOptions, bridge
from tokenmap.decode.cost import DEFAULT, CostModel, load_cost_model
from tokenmap.maps import mapfile, schema, suffixmap
from tokenmap.textok import TextTokenizer, model_dir_for

log = logging.getLogger("tokenmap")

#: corpora up to this many tokens keep every context seen once (a closed phrase inventory)
SMALL_CORPUS_TOKENS = 200_000

Progress = Callable[[str, int], None]


class BuildError(RuntimeError):
    """The build cannot proceed (one-line message)."""


@dataclass(frozen=True)
class BuildOptions:
    """Parameters of a build (all stored in the map's header).

    ``max_order`` is N (the longest context, the paper's optimum is 3);
    ``max_draft_len`` caps a candidate's length in tokens;
    ``merge_near_duplicates``: see the module docstring (step 4).
    """

    max_order: int = 3
    min_count: int = 2
    max_candidates: int = 3
    max_draft_len: int = 16
    merge_near_duplicates: bool = True
    style: StyleOptions = StyleOptions()
    add_raw: bool = False
    text_column: str = "text"
    batch_size: int = 16384
    jobs: int = 2
    depth: int = 24
    trie_min_count: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.max_order <= 8:
            raise ValueError("max_order must be between 1 and 8")
        if self.min_count < 1 or self.max_candidates < 1 or not 1 <= self.max_draft_len <= 64:
            raise ValueError("min_count, max_candidates must be >= 1 and max_draft_len 1..64")


@dataclass(frozen=True)
class BuildResult:
    """Summary of a finished build (sizes in bytes, times in seconds)."""

    path: str
    size_bytes: int
    utterances: int
    skipped: dict
    tokens: int
    keys: int
    candidates: int
    keys_per_order: tuple
    seconds: float
    cost_source: str
    coverage: dict = field(default_factory=dict)
    merged: int = 0


# -- 1. load -----------------------------------------------------------------
def encode_texts(texts: Sequence[str], tokenizer, style: StyleOptions, add_raw: bool) -> bytes:
    """Bridge and tokenize a batch; returns ``BOS ids... SEP`` per text as uint32 bytes.

    BOS/SEP here are internal ids (``vocab_size`` and ``vocab_size + 1``),
    which keep the stream dense for counting.
    """
    bos, sep = tokenizer.vocab_size, tokenizer.vocab_size + 1
    batch: list[str] = []
    for raw in texts:
        text = bridge(raw, style) if style.any else raw
        batch.append(text)
        if add_raw and text != raw:
            batch.append(raw)
    ids = tokenizer.encode_batch(batch)
    lens = np.fromiter((len(x) + 2 for x in ids), dtype=np.int64, count=len(ids))
    flat = np.empty(int(lens.sum()), dtype=np.uint32)
    ends = np.cumsum(lens)
    body = np.ones(len(flat), dtype=bool)
    body[ends - lens] = False
    body[ends - 1] = False
    flat[ends - lens] = bos
    flat[ends - 1] = sep
    flat[body] = np.fromiter((t for x in ids for t in x), dtype=np.uint32, count=int(body.sum()))
    return flat.tobytes()


_WORKER: dict = {}


def _encode_worker(texts: list[str]) -> tuple[int, bytes]:
    w = _WORKER
    return len(texts), encode_texts(texts, w["tokenizer"], w["style"], w["add_raw"])


def _batches(utterances: Iterable, size: int):
    batch: list[str] = []
    for utt in utterances:
        batch.append(utt.text)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def spool_tokens(utterances: Iterable, tokenizer, options: BuildOptions, out, progress: Progress | None = None) -> int:
    """Tokenize utterances in batches (``options.jobs`` processes) and write the uint32 stream to ``out``.

    Returns the number of uint32 written.  Output order is input order, so
    the stream does not depend on ``jobs``.
    """
    total = 0
    batches = _batches(utterances, options.batch_size)
    pool = None
    if options.jobs > 1:
        _WORKER.update(tokenizer=tokenizer, style=options.style, add_raw=options.add_raw)
        pool = multiprocessing.get_context("fork").Pool(options.jobs)
        results = pool.imap(_encode_worker, batches)
    else:
        results = ((len(b), encode_texts(b, tokenizer, options.style, options.add_raw)) for b in batches)
    try:
        for count, raw in results:
            out.write(raw)
            total += len(raw) // 4
            if progress:
                progress("load", count)
    except KeyboardInterrupt:
        if pool is not None:  # Ctrl-C: kill the workers; joining the pool's threads could block for ever
            _kill_pool_workers()
            pool = None
        raise
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        _WORKER.clear()
    return total


def _kill_pool_workers() -> None:
    """SIGKILL this process's multiprocessing pool workers (named ``*PoolWorker-*``), nothing else."""
    for proc in multiprocessing.active_children():
        if "PoolWorker" in proc.name:
            proc.kill()


# -- the pipeline ------------------------------------------------------------
def _created() -> str | None:
    """ISO time of ``SOURCE_DATE_EPOCH``, else None.

    A map holds no wall-clock time, so two builds of the same corpus with the
    same options are byte for byte the same; ``SOURCE_DATE_EPOCH`` (seconds
    since 1970) records a date of the caller's choice.
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch:
        return None
    try:
        if not epoch.isdigit():
            raise ValueError(epoch)
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch)))
    except (ValueError, OverflowError, OSError):
        raise BuildError(f"SOURCE_DATE_EPOCH={epoch!r} is not a number of seconds since 1970") from None


def make_header(tokenizer, model: str, options: BuildOptions, stats: CorpusStats, cost: CostModel,
                n_tokens: int) -> dict:
    """The JSON header of a map (everything but the array table)."""
    params = asdict(options)
    params.pop("batch_size")
    params.pop("jobs")
    created = _created()
    return {
        "format": "tokenmap",
        "fingerprint": tokenizer.fingerprint,
        "family": tokenizer.family,
        "vocab_size": tokenizer.vocab_size,
        "tokenizer_repairs": list(getattr(tokenizer, "repairs", [])),  # BPE merges restored (textok.repair_merges)
        "model": model,
        "order": options.max_order,
        "params": params,
        "cost_model": cost.to_json(),
        "utterances": stats.utterances,
        "tokens": n_tokens,
        "skipped": dict(sorted(stats.skipped.items())),
        "domains": dict(sorted(stats.domains.items())),
        "languages": dict(sorted(stats.langs.items())),
        "corpus_sha256": dict(sorted(stats.files.items())),
        **({"created": created} if created else {}),
        "bos": mapfile.TokenMap.BOS,
    }


def check_output(output: Path, inputs: Sequence[str | os.PathLike]) -> None:
    """Refuse an ``output`` that is one of the ``inputs`` or lies inside an input directory."""
    real = Path(os.path.realpath(output))
    for raw in inputs:
        source = Path(os.path.realpath(raw))
        if source == real or (real.exists() and source.exists() and os.path.samefile(real, source)):
            raise BuildError(f"{output} is one of the inputs: write the map to another file")
        if source.is_dir() and source in real.parents:
            raise BuildError(f"{output} lies inside the input directory {raw}: write the map outside it")


def require_keys(keys: int, stats: CorpusStats, n_tokens: int, min_count: int,
                 flag: str | None = "--min-count") -> None:
    """Refuse to write a map without keys (it would never draft), as an empty corpus is refused;
    ``flag`` is the option that sets ``min_count``, if any."""
    if keys:
        return
    skipped = ", ".join(f"{v} {k}" for k, v in sorted(stats.skipped.items()) if k != "empty")
    raise BuildError(f"no map written: no context of the corpus occurs {min_count} times or more with a draft "
                     f"worth verifying ({stats.utterances} usable utterances, {n_tokens} tokens"
                     + (f"; lines skipped: {skipped}" if skipped else "") + "); add text"
                     + (f" or lower {flag}" if flag else ""))


def resolve_inputs(output: Path, force: bool, model: str, tokenizer, cost: CostModel | None,
             inputs: Sequence[str | os.PathLike] = ()):
    """Check ``output`` against the ``inputs`` and ``force``, check ``SOURCE_DATE_EPOCH``, and default the
    tokenizer and the cost model (shared with :mod:`tokenmap.balance.plan`)."""
    check_output(output, inputs)
    _created()
    if output.exists() and not force:
        raise BuildError(f"{output} already exists (use --force to overwrite it)")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)  # like CTranslate2's converter
    except OSError as exc:
        raise BuildError(f"{output.parent}: cannot create the output directory ({exc.strerror or exc})") from None
    if tokenizer is None:
        tokenizer = TextTokenizer.from_model(model)
    if cost is None:
        try:
            cost = load_cost_model(model_dir_for(model))
        except Exception:  # no model dir (e.g. tokenizer given explicitly): use the default curve
            cost = DEFAULT
    return tokenizer, cost


def _read_stream(corpus: Sequence, tokenizer, options: BuildOptions, stats: CorpusStats,
                 progress: Progress | None) -> np.ndarray:
    """The ``BOS ids SEP ...`` uint32 stream of every utterance of ``corpus`` (spooled through a temp file)."""
    with tempfile.TemporaryDirectory(prefix="tokenmap-") as tmp:
        spool = Path(tmp) / "tokens.u32"
        with open(spool, "wb") as out:
            utts = read_corpus(corpus, text_column=options.text_column, stats=stats)
            n_tokens = spool_tokens(utts, tokenizer, options, out, progress)
        return np.fromfile(spool, dtype=np.uint32, count=n_tokens)


def build_map(corpus: Sequence[str | os.PathLike], output: str | os.PathLike, *, model: str = "base",
              tokenizer=None, options: BuildOptions = BuildOptions(), cost: CostModel | None = None,
              force: bool = False, progress: Progress | None = None, teacher: Sequence = (),
              teacher_copies: int = 1) -> BuildResult:
    """Build ``output`` from ``corpus`` files/dirs (see module docstring).

    ``teacher``: files of the model's own transcripts of other audio from the
    domain (``tokenmap transcribe`` output), read like a corpus but without
    the style bridge (they are in Whisper's style already) and counted
    ``teacher_copies`` times: the map learns how the model writes what it hears.
    ``tokenizer`` defaults to the model's (:class:`tokenmap.textok.TextTokenizer`);
    ``cost`` defaults to the calibrated curve for the model, else
    :data:`tokenmap.decode.cost.DEFAULT`.  Raises :class:`BuildError`,
    :class:`tokenmap.build.corpus.CorpusError` or ``TokenizerError``.
    """
    t0 = time.perf_counter()
    output = Path(output)
    tokenizer, cost = resolve_inputs(output, force, model, tokenizer, cost, [*corpus, *teacher])
    bos, sep = schema.stream_markers(tokenizer.vocab_size)
    stats, taught = CorpusStats(), CorpusStats()
    stream = _read_stream(corpus, tokenizer, options, stats, progress)
    check_nonempty(stats)
    corpus_tokens = len(stream) - 2 * stats.utterances
    if teacher:
        lines = _read_stream(teacher, tokenizer, replace(options, style=NO_BRIDGE, add_raw=False), taught, None)
        stream = np.concatenate([stream, *[lines] * max(0, teacher_copies)])
    n_tokens = len(stream)
    if progress:
        progress("count", 0)
    min_count = options.trie_min_count or (1 if n_tokens <= SMALL_CORPUS_TOKENS else 2)
    arrays = suffixmap.build_arrays(stream, sep, options.depth, min_count)
    header = make_header(tokenizer, model, options, stats, cost, corpus_tokens)
    header.update(depth=options.depth, bos=bos, sep=sep, min_count=min_count, order=options.depth)
    if teacher:
        header["teacher"] = {"utterances": taught.utterances, "copies": teacher_copies,
                             "sha256": dict(sorted(taught.files.items()))}
    sm = suffixmap.SuffixMap(header, arrays)
    if progress:
        progress("prune", 0)
    require_keys(int(np.count_nonzero(arrays["node_depth"] >= 2)), stats, corpus_tokens, min_count, None)
    header["self_test"] = self_test(sm, sample_utterances(stream, sep, 2000), cost)
    if progress:
        progress("save", 0)
    size = mapfile.write_map(output, header, arrays, version=schema.SUFFIX_VERSION)
    nodes_per_depth = np.bincount(arrays["node_depth"], minlength=options.depth + 1)[1:]
    result = BuildResult(str(output), size, stats.utterances, dict(stats.skipped), int(header["tokens"]),
                         sm.num_nodes, int(np.count_nonzero(arrays["node_best"] >= 0)),
                         tuple(int(x) for x in nodes_per_depth), round(time.perf_counter() - t0, 3), cost.source,
                         header["self_test"], 0)
    log.info("built %s: %d contexts (min count %d, depth %d), %d bytes in %.1f s", output,
             result.keys, min_count, options.depth, size, result.seconds)
    return result
