"""Run the benchmark: every system on the same audio, interleaved, repeated.

Per utterance: decode the audio, compute the mel features of its first 30 s
window, encode once with the main model (timed as ``encode_s``), decode once
with ``greedy`` untimed (the oracle's draft, the identity reference and a
per-utterance warm-up); then ``reps`` repetitions (``open_reps`` for the open
regime's clips, whose decoder time is too short for 3), each running every system
once in an order rotated by one place per repetition (so no system always
runs first or right after another one); the figure of a system is the
median of its repetitions. The first utterance is also run once through all
systems before anything is timed (global warm-up). Stock faster-whisper on
stock CTranslate2 runs in its own process (:class:`tokenmap_bench.stock.StockServer`)
but inside the same rotation: its runs are timed in that process while this
one waits.

End-to-end systems time a whole ``transcribe()`` of the file (audio
decoding, features, every window, VAD off, language given, greedy):
``fw-e2e`` faster-whisper on the fork, ``tokenmap-nomap-e2e`` :class:`tokenmap.WhisperModel` without a map
(30 s windows), ``tokenmap-e2e`` :class:`tokenmap.WhisperModel`
with the task's map (session cache off, so repetitions stay independent),
``tokenmap-recall-e2e`` the same model with the learned map and the recall index
(scripted tasks with both), ``tokenmap-exact-e2e`` the task's map on the exact
configuration (a float32 decoder), ``tokenmap-short-e2e`` and ``tokenmap-short-nomap-e2e``
the default configuration with ``audio_context="auto"`` (short windows encoded as their audio
plus a margin, guarded; :mod:`tokenmap.context`) with the task's map and without one,
``tokenmap-mismatch-e2e`` open speech with the maintenance map, ``stock-e2e`` stock faster-whisper on stock
CTranslate2 with the runtime settings tokenmap gives itself (the anchor of every
end-to-end figure) and ``stock-untuned-e2e`` the same without them, as users run it.
"""

from __future__ import annotations

import gc
import logging
import statistics
import time
from dataclasses import asdict, dataclass, field

from tokenizers import Tokenizer

from tokenmap.decode.recall import load_recall
from tokenmap.maps.mapfile import load_maps
from tokenmap.models import resolve_model
from tokenmap.whisper import WhisperModel
from tokenmap_bench import metrics as M
from tokenmap_bench import systems as sysm
from tokenmap_bench.data import MAP_MODES, MISMATCH_DOMAIN, BenchMaps, Recording, features
from tokenmap_bench.machine import peak_rss_mb
from tokenmap_bench.stock import start_server

log = logging.getLogger("tokenmap")

ALL_SYSTEMS = ("greedy", "tokenmap", "oracle", "distil-spec", "stock", "e2e")
MISMATCH_FOR = ("opendomain",)  # domains also decoded with the maintenance map


@dataclass(frozen=True)
class BenchOptions:
    """What to run and how; stored in results.json."""

    model: str = "base"
    draft_model: str = "tiny.en"
    compute_type: str = "int8"
    threads: int = 2
    encoder: str = "auto"  # the engine that encodes (tokenmap.encoders.choice), for every system alike
    reps: int = 3
    e2e_reps: int = 3
    open_reps: int = 0  # repetitions of the open regime's utterances (0: reps); its few short clips need more
    systems: tuple = ALL_SYSTEMS
    timestamps: bool = True
    spec_tokens: int = 4
    stock_python: str = ".venv-stock/bin/python"
    heavy_per_group: int = 0  # e2e and stock only on the first N of each set/domain/lang (0 = all)
    map_modes: tuple = ("per-task",)  # "multi" / "balanced" add systems tokenmap-multi / tokenmap-balanced
    teacher: tuple = ()  # teacher transcript files of map mode "taught" (tokenmap.balance.divergence)
    learn: str = ""  # the model's transcripts of other prompts' recordings (tokenmap-learned)
    recall: str = ""  # a recall index of other prompts' recordings (`tokenmap recall`): system tokenmap-recall
    # a recall index of the whole prompt inventory, the measured prompts' own studio takes through another codec
    # included (system tokenmap-recall-inventory; exempt from the leak guard and reported under that label)
    recall_inventory: str = ""

    def __post_init__(self) -> None:
        unknown = set(self.systems) - set(ALL_SYSTEMS)
        if unknown:
            raise ValueError(f"unknown systems: {', '.join(sorted(unknown))} (choose from {', '.join(ALL_SYSTEMS)})")
        bad_modes = set(self.map_modes) - set(MAP_MODES)
        if bad_modes or "per-task" not in self.map_modes:
            raise ValueError(f"map modes: {', '.join(self.map_modes)} (choose from {', '.join(MAP_MODES)}; "
                             "per-task is always run)")
        if self.reps < 1 or self.e2e_reps < 0 or self.open_reps < 0 or self.threads < 1:
            raise ValueError("reps and threads must be >= 1, open and end-to-end repetitions >= 0")

    def reps_for(self, regime: str) -> int:
        """Timed repetitions of an utterance of ``regime``: ``open_reps`` for the open regime when set.

        >>> BenchOptions(reps=3, open_reps=15).reps_for("open"), BenchOptions(reps=3).reps_for("open")
        (15, 3)
        """
        return self.open_reps if regime == "open" and self.open_reps else self.reps


@dataclass
class RunState:
    """Models loaded once for the run."""

    eng: sysm.BenchModels
    maps: BenchMaps
    loaded_maps: dict = field(default_factory=dict)  # path -> TokenMap
    tokenizer: object = None
    fw: object = None
    tm: object = None
    tm_exact: object = None
    stock: object = None  # StockServer with tokenmap's runtime settings, or None
    stock_untuned: object = None  # StockServer with faster-whisper's defaults, or None
    stock_skipped: str | None = None
    recall: object = None  # the RecallIndex of options.recall, or None
    recall_inventory: object = None  # the RecallIndex of options.recall_inventory, or None
    failed: dict = field(default_factory=dict)  # utterance id -> {system: error}: left out of the rows

    def token_map(self, domain: str, lang: str):
        """The own map of task ``domain/lang`` (None without one)."""
        return self._load(self.maps.tasks.get((domain, lang)))

    def shared_map(self, mode: str):
        """The shared map of a map mode (``multi``), or a list of maps (``inferred``; ``balanced``: the
        sections of its map set), or None."""
        shared = self.maps.shared.get(mode)
        return [self._load(p) for p in shared] if isinstance(shared, list) else self._load(shared)

    def _load(self, path):
        """The map in ``path`` (a map set: the list of its sections), loaded once; None for None."""
        if path is None:
            return None
        if path not in self.loaded_maps:
            maps = load_maps(path)
            self.loaded_maps[path] = maps[0] if len(maps) == 1 else maps
        return self.loaded_maps[path]

    def text(self, tokens) -> str:
        return self.tokenizer.decode([t for t in tokens if t < self.eng.special.eot]).strip()


def load_state(options: BenchOptions, maps: BenchMaps) -> RunState:
    model_dir = resolve_model(options.model)
    draft_dir = resolve_model(options.draft_model) if "distil-spec" in options.systems else None
    eng = sysm.load_models(model_dir, options.compute_type, options.threads, draft_dir, options.spec_tokens,
                           encoder=options.encoder)
    state = RunState(eng, maps, tokenizer=Tokenizer.from_file(str(model_dir / "tokenizer.json")))
    if options.recall and maps.learned:
        state.recall = load_recall(options.recall, state.tokenizer, model_dir)
    if options.recall_inventory and maps.learned:
        state.recall_inventory = load_recall(options.recall_inventory, state.tokenizer, model_dir)
    if "e2e" in options.systems:
        import faster_whisper

        kw = dict(device="cpu", compute_type=options.compute_type, cpu_threads=options.threads)
        state.fw = faster_whisper.WhisperModel(str(model_dir), **kw)
        # no cost_model: the model drafts on the curve of its own decoder precision, as users get it
        tm_kw = dict(kw, token_map=None, session_cache=False, encoder=options.encoder)
        state.tm = WhisperModel(str(model_dir), **tm_kw)
        state.tm_exact = WhisperModel(str(model_dir), exact=True, **tm_kw)
    if "stock" in options.systems:
        state.stock, state.stock_skipped = start_server(options, str(model_dir))
        if "e2e" in options.systems and state.stock is not None:
            state.stock_untuned, _ = start_server(options, str(model_dir), tuned=False)
    return state


def stock_runner(state: RunState, system: str):
    """``stock`` / ``stock-e2e`` / ``stock-untuned-e2e`` / ``stock-defaults-e2e`` (untuned, faster-whisper's own
    defaults: beam 5, temperature fallback) on the utterance the stock process last prepared;
    ``Output.stats["timed_s"]`` is the time measured inside that process."""
    server = state.stock_untuned if system.startswith(("stock-untuned", "stock-defaults")) else state.stock
    op = system.replace("-untuned", "")

    def run() -> sysm.Output:
        answer = server.run(op)
        if system == "stock":
            return sysm.Output(answer["token_ids"], {"timed_s": answer["seconds"]})
        return sysm.Output([], {"text": answer["text"], "timed_s": answer["seconds"]})
    return run


def e2e_runner(model, utt: Recording, timestamps: bool, state: RunState, token_map=None, recall=None,
               audio_context: str | None = None):
    """``transcribe()`` of the whole file by ``model``; tokenmap's model with ``token_map``, ``recall`` and
    ``audio_context`` (its short-context counters go into the output's stats)."""
    ours = model is state.tm or model is state.tm_exact
    extra = {"audio_context": audio_context or "full"} if ours else {}

    def run() -> sysm.Output:
        if ours:
            model.token_map, model.recall = token_map, recall
        segments, _ = model.transcribe(utt.audio, language=utt.lang, beam_size=1, vad_filter=False,
                                       without_timestamps=not timestamps, temperature=0.0, **extra)
        text = " ".join(s.text.strip() for s in segments)
        stats = {"text": text}
        if ours:
            stats.update({k: v for k, v in model.last_stats().items()
                          if k in ("short_windows", "guarded", "loops_stopped")})
        return sysm.Output([], stats)
    return run


def heavy_ids(utterances: list[Recording], per_group: int) -> set:
    """Ids of the utterances the slow systems run on: the first ``per_group`` of each
    (set, domain, lang) group in manifest order, or all when ``per_group`` is 0."""
    if per_group <= 0:
        return {u.id for u in utterances}
    seen: dict = {}
    out = set()
    for u in utterances:
        key = (u.set, u.domain, u.lang)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= per_group:
            out.add(u.id)
    return out


def build_runners(state: RunState, utt: Recording, mel, enc, greedy_tokens, options: BenchOptions,
                  heavy: bool = True) -> dict:
    """``{system name: run}`` for this utterance (e2e systems included when ``heavy``; distil-spec on every
    English utterance)."""
    eng, chosen = state.eng, set(options.systems)
    if not heavy:
        chosen -= {"e2e"}
    prompt = eng.prompt(utt.lang, options.timestamps)
    runners = {"greedy": sysm.greedy(eng, enc, prompt)}
    learned = state.maps.learned.get((utt.domain, utt.lang)) if "tokenmap" in chosen else None
    if "tokenmap" in chosen:
        task = f"{utt.domain}/{utt.lang}"
        seconds = min(utt.duration, 30.0) or None  # the audio in the (first) window

        def spec(token_map, task, recall=None):
            return sysm.speculative(eng, enc, prompt, token_map, task, seconds, recall=recall, mel=mel)

        runners["tokenmap"] = spec(state.token_map(utt.domain, utt.lang), task)
        for mode in options.map_modes[1:]:
            runners[f"tokenmap-{mode}"] = spec(state.shared_map(mode), f"{mode} {task}")
        if learned:
            runners["tokenmap-learned"] = spec(state._load(learned), f"learned {task}")
            if state.recall is not None:
                runners["tokenmap-recall"] = spec(state._load(learned), f"recall {task}", recall=state.recall)
            if state.recall_inventory is not None:
                runners["tokenmap-recall-inventory"] = spec(state._load(learned), f"recall-inventory {task}",
                                                            recall=state.recall_inventory)
        if utt.domain in MISMATCH_FOR:
            runners["tokenmap-mismatch"] = spec(state.token_map(MISMATCH_DOMAIN, utt.lang), f"mismatch {task}")
    if "oracle" in chosen:
        runners["oracle"] = sysm.oracle(eng, enc, prompt, greedy_tokens)
    if "distil-spec" in chosen and utt.lang == "en" and eng.draft is not None:
        nots = eng.prompt(utt.lang, False)
        if options.timestamps:
            runners["greedy-nots"] = sysm.greedy(eng, enc, nots)
        runners["distil-spec"] = sysm.distil_spec(eng, mel, enc, nots)
    if "e2e" in chosen:
        runners["fw-e2e"] = e2e_runner(state.fw, utt, options.timestamps, state)
        runners["tokenmap-e2e"] = e2e_runner(state.tm, utt, options.timestamps, state,
                                             state.token_map(utt.domain, utt.lang))
        runners["tokenmap-nomap-e2e"] = e2e_runner(state.tm, utt, options.timestamps, state)
        runners["tokenmap-exact-e2e"] = e2e_runner(state.tm_exact, utt, options.timestamps, state,
                                                   state.token_map(utt.domain, utt.lang))
        runners["tokenmap-short-e2e"] = e2e_runner(state.tm, utt, options.timestamps, state,
                                                   state.token_map(utt.domain, utt.lang), audio_context="auto")
        runners["tokenmap-short-nomap-e2e"] = e2e_runner(state.tm, utt, options.timestamps, state,
                                                         audio_context="auto")
        if utt.domain in MISMATCH_FOR:  # open speech with the map of another domain: the "no slower" check
            runners["tokenmap-mismatch-e2e"] = e2e_runner(state.tm, utt, options.timestamps, state,
                                                          state.token_map(MISMATCH_DOMAIN, utt.lang))
        if learned and state.recall is not None:  # what a user of a scripted domain runs: learned map + recall
            runners["tokenmap-recall-e2e"] = e2e_runner(state.tm, utt, options.timestamps, state,
                                                        state._load(learned), state.recall)
    if heavy and "stock" in chosen and state.stock is not None:
        runners["stock"] = stock_runner(state, "stock")
        if "e2e" in chosen:
            runners["stock-e2e"] = stock_runner(state, "stock-e2e")
            if state.stock_untuned is not None:
                runners["stock-untuned-e2e"] = stock_runner(state, "stock-untuned-e2e")
                runners["stock-defaults-e2e"] = stock_runner(state, "stock-defaults-e2e")
    return runners


def _timed(run) -> tuple[float, sysm.Output]:
    """(seconds, output); a run timed in another process reports ``stats["timed_s"]``."""
    t0 = time.perf_counter()
    out = run()
    seconds = time.perf_counter() - t0
    stats = getattr(out, "stats", None) or {}
    return stats.get("timed_s", seconds), out


def run_utterance(state: RunState, utt: Recording, options: BenchOptions, index: int,
                  heavy: bool = True) -> list[dict]:
    """All systems on one utterance; one row per system."""
    mel, audio_s = features(utt)
    encode_s, enc = _timed(lambda: state.eng.main.encode(mel))
    greedy_tokens = sysm.greedy(state.eng, enc, state.eng.prompt(utt.lang, options.timestamps))().tokens
    runners = build_runners(state, utt, mel, enc, greedy_tokens, options, heavy)
    if "stock" in runners:
        try:
            for server in (state.stock, state.stock_untuned):
                if server is not None:
                    server.prepare(utt, state.eng.prompt(utt.lang, options.timestamps))
        except RuntimeError as exc:  # a stock process died: go on without them
            log.warning("%s; stock skipped from here on", exc)
            state.stock, state.stock_untuned, state.stock_skipped = None, None, str(exc)
            runners = {k: v for k, v in runners.items() if not k.startswith("stock")}
    names = list(runners)
    times: dict = {n: [] for n in names}
    outs: dict = {}
    for rep in range(options.reps_for(utt.regime)):
        shift = (rep + index) % len(names)
        for name in names[shift:] + names[:shift]:
            if name.endswith("-e2e") and rep >= options.e2e_reps or name in state.failed.get(utt.id, {}):
                continue
            try:
                seconds, outs[name] = _timed(runners[name])
            except RuntimeError as exc:  # one system failing on one utterance: recorded, the run goes on
                log.warning("%s failed on %s: %s", name, utt.id, exc)
                state.failed.setdefault(utt.id, {})[name] = str(exc)
                times[name] = []
                continue
            times[name].append(seconds)
    nots_ref = outs["greedy-nots"].tokens if "greedy-nots" in outs else greedy_tokens
    return [_row(utt, name, times[name], outs[name], audio_s, encode_s, state,
                 nots_ref if name in ("distil-spec", "greedy-nots") else greedy_tokens)
            for name in names if times[name]]


def _row(utt, name, times, out: sysm.Output, audio_s, encode_s, state: RunState, reference) -> dict:
    e2e = name.endswith("-e2e")
    stats = out.stats
    row = {"id": utt.id, "system": name, "kind": "e2e" if e2e else "decoder", "domain": utt.domain,
           "lang": utt.lang, "voice": utt.voice, "set": utt.set, "task": utt.task, "regime": utt.regime,
           "tts": not utt.recordings, "audio_s": audio_s, "bucket": duration_bucket(utt.duration or audio_s),
           "decoder_s": statistics.median(times), "times": [round(t, 6) for t in times],
           "encode_s": encode_s, "ref": utt.text}
    if e2e:
        row["text"] = stats.get("text", "")
        row.update({k: stats[k] for k in ("short_windows", "guarded", "loops_stopped") if k in stats})
        row["loops"] = M.looped(row["text"])
        return row
    row.update(text=state.text(out.tokens), tokens=len(out.tokens), identical=list(out.tokens) == list(reference),
               token_ids=list(out.tokens), loops=M.looped(state.text(out.tokens)),
               loops_stopped=int(stats.get("loops_stopped", 0)))
    for key in ("drafted", "accepted", "drafts", "passes"):
        if key in stats:
            row[key] = int(stats[key])
    if out.drafts_log:
        row["drafts_log"] = out.drafts_log
    return row


#: upper bounds (s) of the duration buckets of the end-to-end tables
BUCKETS = ((2.0, "< 2 s"), (5.0, "2-5 s"), (10.0, "5-10 s"), (30.0, "10-30 s"))


def duration_bucket(seconds: float) -> str:
    """The duration bucket of a file of ``seconds``.

    >>> duration_bucket(1.2), duration_bucket(7.0), duration_bucket(45.0)
    ('< 2 s', '5-10 s', '> 30 s')
    """
    return next((name for limit, name in BUCKETS if seconds < limit), "> 30 s")


def run_benchmark(utterances: list[Recording], options: BenchOptions, maps: BenchMaps, progress=None,
                  sink=None) -> dict:
    """Run every selected system; returns ``{"rows", "options", "peak_rss_mb", ...}``.

    ``sink(rows)``, when given, receives each utterance's rows as soon as they are measured."""
    started = time.perf_counter()
    state = load_state(options, maps)
    log.info("warm-up on %s", utterances[0].id)
    warm = BenchOptions(**{**asdict(options), "reps": 1, "e2e_reps": 1, "open_reps": 0})
    run_utterance(state, utterances[0], warm, 0)
    heavy = heavy_ids(utterances, options.heavy_per_group)
    rows: list[dict] = []
    for index, utt in enumerate(utterances):
        # faster-whisper runs a full gc.collect() on every file it decodes, whose cost grows with the
        # process's objects: the harness's own (models, maps, rows) are frozen out of it, so a system timed
        # here pays what it pays in a process of its own, as stock does in its runner
        gc.freeze()
        new = run_utterance(state, utt, options, index, utt.id in heavy)
        rows.extend(new)
        if sink:
            sink(new)
        if progress:
            progress(utt)
    result = {"rows": rows, "peak_rss_mb": {"harness": peak_rss_mb()}, "cost_model": state.eng.cost.to_json(),
              "seconds": {"main": round(time.perf_counter() - started, 1)}}
    if state.stock is not None:
        info = state.stock.close()
        result["peak_rss_mb"]["stock"] = info.get("peak_rss_mb")
        result["stock_versions"] = info.get("versions", {})
    if state.stock_untuned is not None:
        result["peak_rss_mb"]["stock-untuned"] = state.stock_untuned.close().get("peak_rss_mb")
    if state.stock_skipped:
        result["stock_skipped"] = state.stock_skipped
    result["failed_runs"] = state.failed
    return result
