"""``tokenmap bench``: speed, acceptance and accuracy of token-map drafting against baselines.

Modules: :mod:`~tokenmap_bench.data` (manifest, maps, machine),
:mod:`~tokenmap_bench.systems` (the decoders compared),
:mod:`~tokenmap_bench.harness` (interleaved timed runs),
:mod:`~tokenmap_bench.stock` / ``stock_runner.py`` (stock faster-whisper in its own venv),
:mod:`~tokenmap_bench.metrics` (pure metric functions),
:mod:`~tokenmap_bench.aggregate`, :mod:`~tokenmap_bench.report`, :mod:`~tokenmap_bench.plots` (output).
"""
