"""How the engine's OpenMP threads wait between operations, and numpy's BLAS threads.

A decoder pass is hundreds of small GEMMs, each an OpenMP parallel region. With the defaults of libgomp (the
OpenMP runtime in CTranslate2's wheels) a worker thread sleeps between regions, and waking it costs more than
the work. :func:`apply_wait_policy` sets ``OMP_WAIT_POLICY=ACTIVE`` with a finite ``GOMP_SPINCOUNT``: the
threads spin across the gaps of a pass and sleep a millisecond or two after it. libgomp reads these variables
when it loads, so ``import tokenmap`` applies it before ``ctranslate2`` is imported; a user's own setting of
either variable, or ``TOKENMAP_THREAD_WAIT=default``, is left alone. numpy's BLAS threads also spin after each
call (faster-whisper's features are one BLAS product): :func:`blas_single_thread` holds BLAS to one thread
while tokenmap transcribes.

Example::

    >>> env = {}
    >>> apply_wait_policy(env, modules={})
    'applied'
    >>> env["OMP_WAIT_POLICY"], env["GOMP_SPINCOUNT"]
    ('ACTIVE', '100000')
    >>> apply_wait_policy({"OMP_WAIT_POLICY": "PASSIVE"}, modules={})
    'user'
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
    """Set :data:`POLICY` in ``environ`` unless the user decided; return what happened: ``'applied'``,
    ``'user'`` (either variable set), ``'off'`` (``TOKENMAP_THREAD_WAIT=default``) or ``'late'``
    (``ctranslate2`` is in ``modules``: its libgomp has read the environment)."""
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


def child_policy(environ: MutableMapping[str, str] | None = None) -> dict:
    """A copy of ``environ`` with :data:`POLICY` for a new process tokenmap starts (the stock worker), even
    when this one imported ``ctranslate2`` first; a user's own variables or opt-out are kept.

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
    """Log one warning when the policy came too late for this process (``ctranslate2`` was imported
    first); True if it did."""
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
