"""``tokenmap bench``: speed, acceptance and accuracy of token-map drafting against baselines.

Installed with tokenmap; its own dependencies (jiwer, matplotlib) come with the ``bench``
extra (``pip install 'tokenmap[bench]'``). It reads the benchmark data of a source
checkout (``bench-data/``, ``corpora/``), so it runs from the checkout's root.

The public surface is the names below (``__all__``); scripts outside the package
(``benchmarks/``, ``research/``) import only these, from ``tokenmap_bench`` itself. The
modules behind them may change.

Running the benchmark:

* :func:`bench` runs one benchmark and writes its results folder, with :class:`BenchOptions`;
* :func:`report_partial` reports a run that stopped, from its ``rows.partial.jsonl``;
* :func:`markdown` renders a result, :func:`update_docs` writes it into a Markdown file;
  :func:`fmt` and :func:`pct` format its figures.

Data:

* :func:`load_manifest` reads a manifest into :class:`Recording` objects; :func:`regime_of`
  names a domain's regime; :func:`recording_key` names the recording a file was made from;
  :func:`stable_hash` hashes independently of ``PYTHONHASHSEED`` and :func:`lowest_hash_per_group`
  draws a manifest's subsets with it;
* :func:`check_disjoint` refuses learn or teacher data of measured recordings
  (:class:`BenchDataError`);
* :func:`ensure_map` builds (or reuses) a task's map in a cache folder;
* :func:`features` computes the log-mel window the decoder sees first;
* :func:`synthetic_corpus` is a generated corpus for tests and micro-benchmarks;
* :func:`dictation_windows` and :func:`calls_windows` cut the long test sets into windows
  (:func:`estimate_seconds` guesses a sentence's spoken length; ``CALLS_PAUSE_S`` is the silence
  between two prompts of a calls window);
* :class:`GreedyBase` decodes a window greedily for teacher transcripts, :func:`segments` cuts
  its tokens at timestamps, :func:`decode_g722` reads the Asterisk prompts' G.722 files.

Metrics:

* :func:`wer`, :func:`word_errors` and :func:`normalize_text` score transcripts;
* :func:`spearman` and :func:`unfairness` compare tasks; ``VOICE_BOUND_WER`` is the WER above
  which a synthetic voice, not the decoder, bounds a task; :func:`speedup_interval` is a speed-up's
  paired bootstrap interval;
* :func:`greedy_segments` reads the model's greedy segments from a run's results.json;
  ``PREFILL_MS`` is the prefill cost an offline replay charges per utterance.

The systems compared, each a callable that decodes one window once: :func:`greedy`,
:func:`speculative` (the product's map drafting), :func:`oracle`; :func:`load_models` opens
their models.

Baseline: :func:`start_server` starts stock faster-whisper in its own environment
(:class:`StockServer`); :func:`tuned_environment` is the environment of such a process given
the runtime settings tokenmap gives itself.

Modules: :mod:`~tokenmap_bench.data` (manifest, maps, machine),
:mod:`~tokenmap_bench.systems` (the decoders compared),
:mod:`~tokenmap_bench.harness` (interleaved timed runs),
:mod:`~tokenmap_bench.stock` / ``stock_runner.py`` (stock faster-whisper in its own venv),
:mod:`~tokenmap_bench.metrics` (pure metric functions),
:mod:`~tokenmap_bench.aggregate`, :mod:`~tokenmap_bench.report`, :mod:`~tokenmap_bench.plots` (output),
:mod:`~tokenmap_bench.fairness` (map modes replayed offline), :mod:`~tokenmap_bench.run` (one run),
:mod:`~tokenmap_bench.teacher` (greedy transcripts of other recordings).
"""

import importlib

_PUBLIC = {
    "bench": "tokenmap_bench.run",
    "report_partial": "tokenmap_bench.run",
    "BenchOptions": "tokenmap_bench.harness",
    "features": "tokenmap_bench.data",
    "markdown": "tokenmap_bench.report",
    "update_docs": "tokenmap_bench.report",
    "fmt": "tokenmap_bench.report",
    "pct": "tokenmap_bench.report",
    "BenchDataError": "tokenmap_bench.data",
    "Recording": "tokenmap_bench.data",
    "load_manifest": "tokenmap_bench.data",
    "regime_of": "tokenmap_bench.data",
    "recording_key": "tokenmap_bench.data",
    "stable_hash": "tokenmap_bench.data",
    "lowest_hash_per_group": "tokenmap_bench.data",
    "check_disjoint": "tokenmap_bench.leaks",
    "ensure_map": "tokenmap_bench.data",
    "synthetic_corpus": "tokenmap_bench.synthetic",
    "dictation_windows": "tokenmap_bench.windows",
    "calls_windows": "tokenmap_bench.windows",
    "estimate_seconds": "tokenmap_bench.windows",
    "CALLS_PAUSE_S": "tokenmap_bench.windows",
    "GreedyBase": "tokenmap_bench.teacher",
    "segments": "tokenmap_bench.teacher",
    "decode_g722": "tokenmap_bench.teacher",
    "wer": "tokenmap_bench.metrics",
    "word_errors": "tokenmap_bench.metrics",
    "normalize_text": "tokenmap_bench.metrics",
    "spearman": "tokenmap_bench.metrics",
    "unfairness": "tokenmap_bench.metrics",
    "speedup_interval": "tokenmap_bench.metrics",
    "VOICE_BOUND_WER": "tokenmap_bench.aggregate",
    "greedy_segments": "tokenmap_bench.fairness",
    "PREFILL_MS": "tokenmap_bench.fairness",
    "load_models": "tokenmap_bench.systems",
    "greedy": "tokenmap_bench.systems",
    "speculative": "tokenmap_bench.systems",
    "oracle": "tokenmap_bench.systems",
    "StockServer": "tokenmap_bench.stock",
    "start_server": "tokenmap_bench.stock",
    "tuned_environment": "tokenmap_bench.stock",
}


def __getattr__(name):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'tokenmap_bench' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = sorted(_PUBLIC)
