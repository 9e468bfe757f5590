"""How the engine's OpenMP threads wait between operations.

A Whisper decoder pass is a few hundred small operations (about 230 GEMMs for
base), each one an OpenMP parallel region. Between two regions the engine's
worker threads wait. CTranslate2's wheels bundle GNU libgomp, which, with its
default policy, spins only briefly before sleeping on a futex, and waking a
sleeping thread costs far more than the work of a small region, so a decoder
pass spends much of its time waking threads.

:func:`apply_wait_policy` sets ``OMP_WAIT_POLICY=ACTIVE`` with a finite
``GOMP_SPINCOUNT``: the threads spin across the short gaps of a decoder pass
and still go to sleep a millisecond or two after the last region, so an idle
process (or one waiting for the encoder worker) takes no CPU. The arithmetic
is unchanged, so is every transcript. libgomp reads these variables once,
when it is loaded, so this has to run before ``ctranslate2`` is imported:
``tokenmap/__init__.py`` calls it on import.

It leaves the environment alone when the user set either variable, or set
``TOKENMAP_THREAD_WAIT=default``. Child processes inherit the setting; pass
:func:`without_policy` as their environment to run them with the defaults.

numpy's BLAS (OpenBLAS in its wheels) keeps threads of its own, which also
spin for a while after each call. faster-whisper computes a file's log-mel
features with one BLAS product; on a short file the engine starts right after
it, and on a machine with few cores those spinning threads take the engine's
cores from decoder steps and short encodes. :func:`blas_single_thread` holds numpy's
BLAS to one thread while tokenmap transcribes (``WhisperModel.transcribe``),
and :data:`BLAS_ENVIRONMENT` is the same for a child process.

Example::

    >>> env = {}
    >>> apply_wait_policy(env, modules={})
    'applied'
    >>> env["OMP_WAIT_POLICY"], env["GOMP_SPINCOUNT"]
    ('ACTIVE', '100000')
    >>> apply_wait_policy({"OMP_WAIT_POLICY": "PASSIVE"}, modules={})
    'user'
    >>> without_policy(env, state="applied")
    {}
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import MutableMapping

logger = logging.getLogger("tokenmap")

#: the variables set, with their values (spin about a millisecond, then sleep)
POLICY = {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": "100000"}
#: numpy's BLAS on one thread, for a child process (:func:`blas_single_thread` in this one)
BLAS_ENVIRONMENT = {"OPENBLAS_NUM_THREADS": "1"}
OPT_OUT = "TOKENMAP_THREAD_WAIT"

#: what :func:`apply_wait_policy` did in this process (None until it ran)
status: str | None = None
_warned = False  # :func:`warn_if_late` has spoken

_MEANING = {
    "applied": "OMP_WAIT_POLICY=ACTIVE, GOMP_SPINCOUNT=100000 (set by tokenmap: threads spin across "
               "the gaps of a decoder pass, then sleep; {opt} to leave the defaults)",
    "user": "OMP_WAIT_POLICY={policy}, GOMP_SPINCOUNT={spin} (set by you; tokenmap left them alone)",
    "off": "OpenMP defaults ({opt} is set)",
    "late": "OpenMP defaults: ctranslate2 was imported before tokenmap, so its thread library had "
            "already read the environment; import tokenmap first for faster decoder passes",
}


def apply_wait_policy(environ: MutableMapping[str, str] | None = None, modules=None) -> str:
    """Set :data:`POLICY` in ``environ`` unless the user decided; return what happened.

    ``'applied'``, ``'user'`` (either variable already set), ``'off'``
    (``TOKENMAP_THREAD_WAIT=default``) or ``'late'`` (``ctranslate2`` is
    already in ``modules``, so its libgomp has read the environment).
    """
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    if environ.get(OPT_OUT, "").lower() in ("default", "0", "off", "no"):
        return "off"
    if any(name in environ for name in POLICY):
        return "user"
    if "ctranslate2" in modules:
        return "late"
    environ.update(POLICY)
    return "applied"


def without_policy(environ: MutableMapping[str, str] | None = None, state: str | None = None) -> dict:
    """A copy of ``environ`` without the variables tokenmap set (those a user set stay).

    ``state``: what :func:`apply_wait_policy` returned (default: this process's :data:`status`).
    """
    environ = os.environ if environ is None else environ
    state = status if state is None else state
    env = dict(environ)
    if state == "applied":
        for name in POLICY:
            env.pop(name, None)
    return env


def child_policy(environ: MutableMapping[str, str] | None = None) -> dict:
    """A copy of ``environ`` with :data:`POLICY` for a new process tokenmap starts (the stock worker).

    A new process reads the variables when its own engine loads, so it gets the policy even when
    this one imported ``ctranslate2`` before ``tokenmap`` (status ``'late'``); a user's own
    variables or ``TOKENMAP_THREAD_WAIT=default`` are kept as they are.

    >>> child_policy({})["OMP_WAIT_POLICY"], child_policy({"OMP_WAIT_POLICY": "PASSIVE"})["OMP_WAIT_POLICY"]
    ('ACTIVE', 'PASSIVE')
    >>> child_policy({OPT_OUT: "default"})
    {'TOKENMAP_THREAD_WAIT': 'default'}
    """
    env = dict(os.environ if environ is None else environ)
    apply_wait_policy(env, modules={})
    return env


def describe() -> str:
    """One line for ``tokenmap doctor``."""
    return _MEANING.get(status or "late", "unknown").format(
        opt=f"{OPT_OUT}=default", policy=os.environ.get("OMP_WAIT_POLICY", "unset"),
        spin=os.environ.get("GOMP_SPINCOUNT", "unset"))


def warn_if_late() -> bool:
    """Log one warning when the policy came too late for this process; True if it did.

    A program that imports ``faster_whisper`` or ``ctranslate2`` before ``tokenmap``
    decodes with libgomp's defaults, whose sleeping threads make every decoder pass slower.
    """
    global _warned
    if status != "late" or _warned:
        return False
    _warned = True
    logger.warning("ctranslate2 was imported before tokenmap, so the engine's threads sleep between the "
                   "operations of a decoder pass (slower decoding); import tokenmap "
                   "first, or set OMP_WAIT_POLICY=ACTIVE GOMP_SPINCOUNT=100000 before starting Python")
    return True


def install() -> str:
    """Apply the policy to this process once; the result is kept in :data:`status`."""
    global status
    if status is None:
        status = apply_wait_policy()
    return status


_blas = None  # threadpoolctl's controller of the BLAS libraries loaded, made on first use


@contextlib.contextmanager
def blas_single_thread():
    """numpy's BLAS on one thread inside the block (a no-op where threadpoolctl finds no BLAS)."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController().select(user_api="blas")
    if not _blas.lib_controllers:
        yield
        return
    with _blas.limit(limits=1):
        yield
