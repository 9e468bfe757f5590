"""``tokenmap bench``: speed, acceptance and accuracy of token-map drafting against baselines.

Modules: :mod:`~tokenmap.bench.data` (manifest, maps, machine),
:mod:`~tokenmap.bench.systems` (the decoders compared),
:mod:`~tokenmap.bench.harness` (interleaved timed runs),
:mod:`~tokenmap.bench.stock` / ``stock_runner.py`` (stock faster-whisper in its own venv),
:mod:`~tokenmap.bench.metrics` (pure metric functions),
:mod:`~tokenmap.bench.aggregate`, :mod:`~tokenmap.bench.report`, :mod:`~tokenmap.bench.plots` (output).
"""
