"""How the engine's large buffers are allocated: kept for reuse, not returned to the system.

CTranslate2 allocates its working buffers on every call and frees them after it; with glibc's defaults they
are mapped and unmapped each time, so the kernel faults in and zeroes fresh pages on every call (the engine's
worker thread has an arena of its own, whose heaps glibc caps at 64 MB, so no threshold helps there).
:func:`apply_malloc_policy` asks glibc (``mallopt``) for :data:`SETTINGS`: one arena, no ``mmap`` for large
blocks and a high trim threshold, so freed buffers stay in the heap for the next call, at the cost of a
resident size that stays near its peak for the whole process.

So it is applied only where tokenmap owns the process: the ``tokenmap`` command (:func:`install`), the stock
worker (:func:`worker_environment`) and a program that asks (``WhisperModel(..., malloc_policy=True)`` or
``TOKENMAP_MALLOC=tokenmap``: :func:`install_if_asked`). It reaches models loaded afterwards, does nothing off
glibc, and leaves glibc alone under a ``MALLOC_*`` variable, ``GLIBC_TUNABLES`` or ``TOKENMAP_MALLOC=default``.

Example::

    >>> calls = []
    >>> class FakeLibc:
    ...     def mallopt(self, param, value):
    ...         calls.append((param, value))
    ...         return 1
    >>> apply_malloc_policy({}, FakeLibc())
    'applied'
    >>> calls[0]  # M_ARENA_MAX = 1
    (-8, 1)
    >>> apply_malloc_policy({"MALLOC_ARENA_MAX": "4"}, FakeLibc())
    'user'
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from typing import Mapping

from tokenmap.runtime import packing
from tokenmap.runtime.threads import child_policy

logger = logging.getLogger("tokenmap")

MIB = 2 ** 20
#: (name, glibc's ``mallopt`` parameter number, value, the environment variable glibc reads at start)
SETTINGS = (
    ("M_ARENA_MAX", -8, 1, "MALLOC_ARENA_MAX"),  # every thread allocates from the main heap: no size cap
    ("M_MMAP_MAX", -4, 0, "MALLOC_MMAP_MAX_"),  # large blocks come from the heap, not from mmap
    ("M_TRIM_THRESHOLD", -1, 512 * MIB, "MALLOC_TRIM_THRESHOLD_"),  # the heap's top is kept below 512 MB free
    ("M_TOP_PAD", -2, 64 * MIB, "MALLOC_TOP_PAD_"),  # the heap grows in steps of 64 MB
)
#: the same settings as environment variables, for child processes
ENVIRONMENT = {variable: str(value) for _, _, value, variable in SETTINGS}
OPT_OUT = "TOKENMAP_MALLOC"  # "default": never apply the policy; "tokenmap": apply it on import

#: what :func:`apply_malloc_policy` did in this process (None until it ran)
status: str | None = None

_MEANING = {
    "applied": "one heap, no mmap for large buffers, trim above 512 MB (set by tokenmap: the engine "
               "reuses its buffers instead of faulting in fresh pages on every call; {opt} to leave "
               "the defaults)",
    "user": "glibc malloc as your MALLOC_* / GLIBC_TUNABLES variables set it (tokenmap left it alone)",
    "off": "glibc malloc defaults ({opt} is set)",
    "unavailable": "the C library's defaults (not glibc, so tokenmap has no mallopt to call)",
    "failed": "glibc malloc defaults (mallopt refused a setting)",
}


def _opted_out(environ: Mapping[str, str]) -> bool:
    return environ.get(OPT_OUT, "").lower() in ("default", "0", "off", "no")


def _user_set(environ: Mapping[str, str]) -> bool:
    return "GLIBC_TUNABLES" in environ or any(name.startswith("MALLOC_") for name in environ)


def _glibc():
    """glibc's ``mallopt`` holder (the process's C library), or None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # only glibc has it  # noqa: B018
        return libc
    except (OSError, AttributeError):
        return None


def apply_malloc_policy(environ: Mapping[str, str] | None = None, libc=None) -> str:
    """Apply :data:`SETTINGS` unless the user decided; return what happened: ``'applied'``, ``'user'`` (a
    ``MALLOC_*`` variable or ``GLIBC_TUNABLES`` is set), ``'off'`` (``TOKENMAP_MALLOC=default``),
    ``'unavailable'`` (not glibc) or ``'failed'`` (``mallopt`` refused a setting). ``libc``: anything with a
    ``mallopt(param, value)`` method (default: glibc)."""
    environ = os.environ if environ is None else environ
    if _opted_out(environ):
        return "off"
    if _user_set(environ):
        return "user"
    libc = _glibc() if libc is None else libc
    if libc is None:
        return "unavailable"
    for name, param, value, _ in SETTINGS:
        if libc.mallopt(param, value) != 1:
            logger.debug("mallopt(%s, %d) refused", name, value)
            return "failed"
    return "applied"


def describe() -> str:
    """One line for ``tokenmap doctor``."""
    return _MEANING.get(status, "glibc malloc defaults (tokenmap's policy was not applied in this process)").format(
        opt=f"{OPT_OUT}=default")


def install() -> str:
    """Apply the policy to this process once; the result is kept in :data:`status`."""
    global status
    if status is None:
        status = apply_malloc_policy()
    return status


def release_free_memory() -> bool:
    """Give the heap's free memory back to the system (glibc ``malloc_trim``; False off glibc): what loading a
    model converted and freed, which the policy would keep resident."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def install_if_asked(environ: Mapping[str, str] | None = None) -> str | None:
    """:func:`install` when ``TOKENMAP_MALLOC=tokenmap`` asks for the policy on import; else None."""
    environ = os.environ if environ is None else environ
    return install() if environ.get(OPT_OUT, "").lower() == "tokenmap" else None


def worker_environment(environ: Mapping[str, str] | None = None) -> dict:
    """A copy of ``environ`` with the policies for a worker process tokenmap owns (the stock worker): the thread
    wait policy (:func:`tokenmap.runtime.threads.child_policy`) and the heap policy unless the user decided.

    >>> worker_environment({})["MALLOC_ARENA_MAX"], "MALLOC_ARENA_MAX" in worker_environment({OPT_OUT: "default"})
    ('1', False)
    >>> worker_environment({"TOKENMAP_THREAD_WAIT": "default"}).get("OMP_WAIT_POLICY")
    """
    env = child_policy(packing.child_environment(os.environ if environ is None else environ))
    if _opted_out(env) or _user_set(env):
        return env
    env.update(ENVIRONMENT)
    return env
