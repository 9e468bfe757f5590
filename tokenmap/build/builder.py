"""Build a token map from transcripts: load, validate, count, self-test, save.

The map is a suffix trie of the corpus (:mod:`tokenmap.maps.suffixmap`): every token sequence of up to
``depth`` tokens with its count. The pipeline (:func:`build_map`) is a fixed sequence:

1. **load** - stream utterances (:mod:`tokenmap.build.corpus`), bridge them to Whisper's style
   (:mod:`tokenmap.build.style`), tokenize them with the target model's tokenizer in batches and spool the ids
   to a temporary file as one flat ``uint32`` stream ``BOS t1 t2 ... SEP BOS ...``; teacher transcripts (the
   model's own output on other audio of the domain) follow, unbridged, ``teacher_copies`` times;
2. **validate** - refuse an output that is one of the inputs or lies inside an input directory, an existing
   output without ``force``, and an empty corpus (and, after step 3, a map without a context of two tokens or
   more);
3. **count** - :func:`tokenmap.maps.suffixmap.build_arrays`: the windows of ``depth`` tokens from every
   position, sorted in chunks, give every node of the trie with its count; a context is kept when it occurs
   ``min_count`` times (``0``: every context of a corpus up to :data:`SMALL_CORPUS_TOKENS` tokens, a closed
   phrase inventory, and those seen twice in a larger one);
4. **self-test** - the decoder's drafter replayed over the first training utterances (:func:`self_test`),
   stored in the header;
5. **save** - :func:`tokenmap.maps.mapfile.write_map`.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import islice
from pathlib import Path

import numpy as np

from tokenmap.build.corpus import CorpusStats, check_nonempty, read_corpus
from tokenmap.build.style import NO_BRIDGE, StyleOptions, bridge
from tokenmap.decode.cost import DEFAULT, CostModel, load_cost_model
from tokenmap.decode.follow import FollowDrafter
from tokenmap.decode.speculative import replay
from tokenmap.maps import mapfile, schema, suffixmap
from tokenmap.textok import TextTokenizer, model_dir_for

log = logging.getLogger("tokenmap")

#: corpora up to this many tokens keep every context seen once (a closed phrase inventory)
SMALL_CORPUS_TOKENS = 200_000

Progress = Callable[[str, int], None]


class BuildError(RuntimeError):
    """The build cannot proceed (one-line message)."""


#: the :class:`BuildOptions` a map's header leaves out (how it was built, not what it holds)
NOT_IN_HEADER = ("batch_size", "jobs", "teacher_copies", "cost", "generous", "protect")


@dataclass(frozen=True)
class BuildOptions:
    """Parameters of a build (those of :data:`NOT_IN_HEADER` aside, stored in the map's header).

    ``style`` and ``add_raw``: the style bridge (step 1); ``text_column``: of .csv/.tsv inputs;
    ``batch_size`` texts per tokenizer call, ``jobs`` tokenizer processes; ``depth``: the longest
    token sequence the map keeps (context and continuation together); ``min_count``: the count a
    context needs to be kept, 0 for the rule of the module docstring (step 3). ``teacher_copies``: the
    times the teacher's transcripts are counted; ``cost``: the verify-pass curve (default: the model's
    calibrated one, else :data:`tokenmap.decode.cost.DEFAULT`); ``generous`` and ``protect``: a balanced
    build's worst-task budget and protected share (None: :mod:`tokenmap.balance.budget`'s).
    """

    style: StyleOptions = StyleOptions()
    add_raw: bool = False
    text_column: str = "text"
    batch_size: int = 16384
    jobs: int = 2
    depth: int = 24
    min_count: int = 0
    teacher_copies: int = 1
    cost: CostModel | None = None
    generous: object = None
    protect: float | None = None

    def __post_init__(self) -> None:
        if not 2 <= self.depth <= 255 or self.min_count < 0 or self.jobs < 1 or self.batch_size < 1:
            raise ValueError("depth must be 2..255, min_count >= 0, jobs and batch_size >= 1")


@dataclass(frozen=True)
class BuildResult:
    """Summary of a finished build (sizes in bytes, times in seconds).

    ``contexts``: the map's nodes (summed over a map set's sections), ``with_continuation`` those
    with a child, ``contexts_per_length`` per context length 1, 2, ...; ``self_test``: the header's.
    """

    path: str
    size_bytes: int
    utterances: int
    skipped: dict
    tokens: int
    contexts: int
    with_continuation: int
    contexts_per_length: tuple
    seconds: float
    cost_source: str
    self_test: dict = field(default_factory=dict)


# -- 1. load -----------------------------------------------------------------
def encode_texts(texts: Sequence[str], tokenizer, style: StyleOptions, add_raw: bool) -> bytes:
    """Bridge and tokenize a batch; returns ``BOS ids... SEP`` per text as uint32 bytes
    (:func:`tokenmap.maps.schema.stream_markers`)."""
    bos, sep = schema.stream_markers(tokenizer.vocab_size)
    batch: list[str] = []
    for raw in texts:
        text = bridge(raw, style) if style.any else raw
        batch.append(text)
        if add_raw and text != raw:
            batch.append(raw)
    ids = tokenizer.encode_batch(batch)
    return np.fromiter((t for x in ids for t in (bos, *x, sep)), dtype=np.uint32).tobytes()


_WORKER: dict = {}


def _encode_worker(texts: list[str]) -> tuple[int, bytes]:
    w = _WORKER
    return len(texts), encode_texts(texts, w["tokenizer"], w["style"], w["add_raw"])


def spool_tokens(utterances: Iterable, tokenizer, options: BuildOptions, out, progress: Progress | None = None) -> int:
    """Tokenize utterances in batches (``options.jobs`` processes) and write the uint32 stream to ``out``,
    in input order whatever ``jobs``; returns the number of uint32 written."""
    total = 0
    texts = (utt.text for utt in utterances)
    batches = iter(lambda: list(islice(texts, options.batch_size)), [])  # lists of texts until none is left
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
        if pool is not None:  # Ctrl-C: SIGKILL the pool's workers; joining its threads could block for ever
            for proc in multiprocessing.active_children():
                if "PoolWorker" in proc.name:
                    proc.kill()
            pool = None
        raise
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        _WORKER.clear()
    return total


def split_utterances(stream: np.ndarray, sep: int, limit: int | None = None) -> list[list[int]]:
    """The utterances of a ``BOS ids SEP ...`` stream without BOS/SEP (with ``limit``, the first ``limit``
    that end in its first ``200 * limit`` tokens)."""
    if limit is not None:
        stream = np.asarray(stream[:limit * 200])
    ends = np.flatnonzero(stream == sep)[:limit]
    return [stream[a + 1:b].tolist() for a, b in zip(np.r_[0, ends[:-1] + 1], ends)]


# -- 4. self-test ------------------------------------------------------------
def self_test(sm, utterances: Sequence[Sequence[int]], cost: CostModel) -> dict:
    """Replay the decoder's drafter (:class:`tokenmap.decode.follow.FollowDrafter`, no timestamps) over
    the map's own training utterances as if the model had emitted each: tokens per pass, acceptance,
    and the decoder speed-up the cost curve predicts."""
    eot = sm.bos  # any id above the text ids: the utterance's end
    drafter = FollowDrafter(sm, timestamp_begin=None, eot=eot, cost=cost)
    stats = replay(drafter, utterances, eot=eot, with_timestamps=False, timestamp_begin=eot + 2, cost=cost)
    d = stats.as_dict()
    d["acceptance"] = d.pop("acceptance_rate")
    keep = ("tokens", "passes", "drafts", "drafted", "accepted", "acceptance", "tokens_per_pass", "speedup")
    return {k: round(d[k], 4) if isinstance(d[k], float) else d[k] for k in keep} | {"utterances": len(utterances)}


# -- the pipeline ------------------------------------------------------------
def _created() -> str | None:
    """ISO time of ``SOURCE_DATE_EPOCH``, else None: a map holds no wall-clock time, so two builds of the
    same corpus with the same options are byte for byte the same."""
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
    """The JSON header of a map (everything but the array table and the trie's ``min_count``)."""
    params = {k: v for k, v in asdict(replace(options, cost=None)).items() if k not in NOT_IN_HEADER}
    created = _created()
    bos, sep = schema.stream_markers(tokenizer.vocab_size)
    return {
        "format": "tokenmap",
        "fingerprint": tokenizer.fingerprint,
        "family": tokenizer.family,
        "vocab_size": tokenizer.vocab_size,
        "tokenizer_repairs": list(getattr(tokenizer, "repairs", [])),  # BPE merges restored (textok.repair_merges)
        "model": model,
        "depth": options.depth,
        "params": params,
        "cost_model": cost.to_json(),
        "utterances": stats.utterances,
        "tokens": n_tokens,
        "skipped": dict(sorted(stats.skipped.items())),
        "domains": dict(sorted(stats.domains.items())),
        "languages": dict(sorted(stats.langs.items())),
        "corpus_sha256": dict(sorted(stats.files.items())),
        **({"created": created} if created else {}),
        "bos": bos,
        "sep": sep,
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


def context_min_count(min_count: int, n_tokens: int) -> int:
    """The count a context needs to be kept in a map of ``n_tokens`` (``min_count`` 0: the rule of step 3)."""
    return min_count or (1 if n_tokens <= SMALL_CORPUS_TOKENS else 2)


def require_keys(keys: int, stats: CorpusStats, n_tokens: int, min_count: int) -> None:
    """Refuse to write a map without a context of two tokens or more (it would never draft), as an
    empty corpus is refused."""
    if keys:
        return
    skipped = ", ".join(f"{v} {k}" for k, v in sorted(stats.skipped.items()) if k != "empty")
    raise BuildError(f"no map written: no context of the corpus occurs {min_count} times or more "
                     f"({stats.utterances} usable utterances, {n_tokens} tokens"
                     + (f"; lines skipped: {skipped}" if skipped else "") + "); add text"
                     + (" or lower --context-min-count" if min_count > 1 else ""))


def resolve_inputs(output: Path, force: bool, model: str, tokenizer, cost: CostModel | None,
             inputs: Sequence[str | os.PathLike] = ()):
    """Check ``output`` against the ``inputs`` and ``force``, check ``SOURCE_DATE_EPOCH``, and default the
    tokenizer and the cost model (shared with :mod:`tokenmap.balance.sections`)."""
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
              tokenizer=None, options: BuildOptions = BuildOptions(), force: bool = False,
              progress: Progress | None = None, teacher: Sequence = ()) -> BuildResult:
    """Build ``output`` from ``corpus`` files/dirs (see module docstring).

    ``teacher``: files of the model's own transcripts of other audio from the
    domain (``tokenmap transcribe`` output), read like a corpus but without
    the style bridge (they are in Whisper's style already) and counted
    ``options.teacher_copies`` times: the map learns how the model writes what it hears.
    ``tokenizer`` defaults to the model's (:class:`tokenmap.textok.TextTokenizer`).  Raises :class:`BuildError`,
    :class:`tokenmap.build.corpus.CorpusError` or ``TokenizerError``.
    """
    t0 = time.perf_counter()
    output = Path(output)
    progress = progress or (lambda stage, count: None)
    tokenizer, cost = resolve_inputs(output, force, model, tokenizer, options.cost, [*corpus, *teacher])
    sep = schema.stream_markers(tokenizer.vocab_size)[1]
    stats, taught = CorpusStats(), CorpusStats()
    stream = _read_stream(corpus, tokenizer, options, stats, progress)
    check_nonempty(stats)
    corpus_tokens = len(stream) - 2 * stats.utterances
    if teacher:
        lines = _read_stream(teacher, tokenizer, replace(options, style=NO_BRIDGE, add_raw=False), taught, None)
        stream = np.concatenate([stream, *[lines] * max(0, options.teacher_copies)])
    n_tokens = len(stream)
    progress("count", 0)
    min_count = context_min_count(options.min_count, n_tokens)
    arrays = suffixmap.build_arrays(stream, sep, options.depth, min_count)
    header = make_header(tokenizer, model, options, stats, cost, corpus_tokens)
    header["min_count"] = min_count
    if teacher:
        header["teacher"] = {"utterances": taught.utterances, "copies": options.teacher_copies,
                             "sha256": dict(sorted(taught.files.items()))}
    sm = suffixmap.TokenMap(header, arrays)
    progress("test", 0)
    require_keys(int(np.count_nonzero(arrays["node_depth"] >= 2)), stats, corpus_tokens, min_count)
    header["self_test"] = self_test(sm, split_utterances(stream, sep, 2000), cost)
    progress("save", 0)
    size = mapfile.write_map(output, header, arrays)
    result = build_result(output, size, stats, header, [sm], options.depth, t0, cost)
    log.info("built %s: %d contexts (min count %d, depth %d), %d bytes in %.1f s", output,
             result.contexts, min_count, options.depth, size, result.seconds)
    return result


def build_result(output: Path, size: int, stats: CorpusStats, header: dict, maps: Sequence, depth: int,
                 started: float, cost: CostModel) -> BuildResult:
    """The :class:`BuildResult` of a written file, its counts summed over ``maps`` (a map set's sections)."""
    per_length = np.sum([np.bincount(m.arrays["node_depth"], minlength=depth + 1)[1:] for m in maps], axis=0)
    continued = sum(int(np.count_nonzero(m.arrays["node_best"] >= 0)) for m in maps)
    return BuildResult(str(output), size, stats.utterances, dict(stats.skipped), int(header["tokens"]),
                       sum(m.num_nodes for m in maps), continued, tuple(int(x) for x in per_length),
                       round(time.perf_counter() - started, 3), cost.source, header["self_test"])
