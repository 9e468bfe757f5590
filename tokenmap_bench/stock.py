"""Launch :mod:`tokenmap_bench.stock_runner` in the stock virtual environment.

The stock environment (``.venv-stock``: faster-whisper 1.2.1 on stock
CTranslate2 4.8.5) is created by ``make bench-stock``. When it is missing
the ``stock`` systems are skipped with a warning naming that command. The
runner is a long-lived process (``--serve``) so that stock is timed in
the same interleaved rotation as the other systems.

Two runners: ``stock`` gets the runtime settings tokenmap applies to itself
(:func:`tuned_environment`: the OpenMP thread wait policy, numpy's BLAS on one
thread and the glibc malloc policy, as environment variables), so that every end-to-end figure
measures drafting and not those settings; ``stock-untuned`` gets neither
(:func:`untuned_environment`), as users run faster-whisper today.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from tokenmap.decode.rules import GREEDY_KW
from tokenmap.runtime import memory, threads

log = logging.getLogger("tokenmap")

RUNNER = Path(__file__).with_name("stock_runner.py")
STOCK_HINT = ("no stock environment at {path}: run `make bench-stock` (python3 -m venv .venv-stock && "
              ".venv-stock/bin/pip install faster-whisper==1.2.1 ctranslate2==4.8.5)")


#: numpy's BLAS on one thread, as tokenmap holds it while it transcribes (``threads.blas_single_thread``)
BLAS_ENVIRONMENT = {"OPENBLAS_NUM_THREADS": "1"}


def without_policy(environ: dict | None = None, state: str | None = None) -> dict:
    """A copy of ``environ`` (default: this process's) without the thread wait variables tokenmap set in it
    (``state``: what ``threads.apply_wait_policy`` did, default this process's ``threads.status``)."""
    env = dict(os.environ if environ is None else environ)
    if (threads.status if state is None else state) == "applied":
        for name in threads.POLICY:
            env.pop(name, None)
    return env


def tuned_environment(environ: dict | None = None) -> dict:
    """``environ`` (default: this process's) with tokenmap's thread wait and malloc policies as variables.

    >>> env = tuned_environment({})
    >>> env["OMP_WAIT_POLICY"], env["MALLOC_ARENA_MAX"]
    ('ACTIVE', '1')
    """
    env = without_policy(environ)
    env.update(threads.POLICY)
    env.update(BLAS_ENVIRONMENT)
    env.update(memory.ENVIRONMENT)
    return env


def untuned_environment(environ: dict | None = None) -> dict:
    """``environ`` without the variables tokenmap's policies would set: faster-whisper's defaults.

    >>> untuned_environment({"OMP_WAIT_POLICY": "ACTIVE", "MALLOC_ARENA_MAX": "1", "HOME": "/root"})
    {'HOME': '/root'}
    """
    env = without_policy(environ, state="applied")
    for name in (*memory.ENVIRONMENT, *BLAS_ENVIRONMENT):
        env.pop(name, None)
    return env


def stock_python(path: str) -> Path | None:
    exe = Path(path)
    return exe if exe.is_file() else None


class StockServer:
    """The stock runner in ``--serve`` mode: ``stock`` and ``stock-e2e`` timed in the
    main harness's rotation, on the same utterance as the other systems.

    Each run is timed inside the stock process (:meth:`run` returns those
    seconds); the main process waits meanwhile, so the 2 cores are not shared.
    ``env`` is the runner's environment (:func:`tuned_environment` or
    :func:`untuned_environment`); glibc and libgomp read it at start.
    """

    def __init__(self, exe: Path, options, model_dir: str, env: dict):
        self.proc = subprocess.Popen([str(exe), str(RUNNER), "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        self.call({"op": "load", "model_dir": model_dir, "compute_type": options.compute_type,
                   "threads": options.threads, "timestamps": options.timestamps, "generate_kw": GREEDY_KW})

    def call(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"stock runner exited (code {self.proc.poll()}) on {request['op']}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"stock runner: {answer['error']}")
        return answer

    def prepare(self, utt, prompt) -> float:
        """Encode ``utt`` in the stock process (and warm up); returns its encode seconds."""
        request = {"op": "prepare", "utt": {"id": utt.id, "audio": utt.audio, "lang": utt.lang, "prompt": prompt}}
        return self.call(request)["encode_s"]

    def run(self, system: str) -> dict:
        """One timed ``stock`` (``seconds``, ``token_ids``) or ``stock-e2e`` (``seconds``, ``text``) run."""
        return self.call({"op": system})

    def close(self) -> dict:
        """Stop the process; returns its ``peak_rss_mb`` and library ``versions``."""
        try:
            info = self.call({"op": "done"})
        finally:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        return info


def start_server(options, model_dir: str, tuned: bool = True):
    """``(StockServer, None)``, or ``(None, reason)`` when the stock environment is missing or fails.

    ``tuned``: the runner gets tokenmap's runtime settings (:func:`tuned_environment`)."""
    exe = stock_python(options.stock_python)
    if exe is None:
        log.warning(STOCK_HINT.format(path=options.stock_python))
        return None, STOCK_HINT.format(path=options.stock_python)
    try:
        return StockServer(exe, options, model_dir, tuned_environment() if tuned else untuned_environment()), None
    except (OSError, RuntimeError, ValueError) as exc:
        log.warning("stock runner failed: %s", exc)
        return None, f"stock runner failed: {exc}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run through `tokenmap bench --systems stock`")
