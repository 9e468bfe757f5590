"""What runs a Whisper model on this machine: the engine, its precision, its encoder worker and the host.

* :mod:`~tokenmap.runtime.engine`: the CTranslate2 engine (the fork with a decoder-step API, or stock);
* :mod:`~tokenmap.runtime.precision`: which compute type decodes;
* :mod:`~tokenmap.runtime.stock_worker` (and its worker script ``stock_worker_child.py``): stock
  CTranslate2 in a worker process, which encodes and decodes plain windows;
* :mod:`~tokenmap.runtime.threads` and :mod:`~tokenmap.runtime.memory`: the process-wide thread wait
  and malloc policies;
* :mod:`~tokenmap.runtime.nativelib` (sources in ``native/``): tokenmap's small C library for the
  decoding loop's row math, and where ``make`` builds native code;
* :mod:`~tokenmap.runtime.report`: what ``tokenmap doctor`` prints.

Importing this package imports none of its modules (``import tokenmap`` stays cheap).
"""
