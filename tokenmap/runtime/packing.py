"""Packed GEMM for the engine fork's decoder on Intel CPUs (MKL).

Stock CTranslate2 4.8 packs the weights for Intel MKL at load; the fork (4.7.1) has only an experimental
switch (``CT2_USE_EXPERIMENTAL_PACKED_GEMM=1``) that breaks loading Whisper by packing the encoder's 3-D
convolution weights too and dropping the originals. :func:`install` loads tokenmap's small library
(``native/decoder_packing.cc``, built into :func:`library_path`) into the global symbol scope, where it
replaces the fork's ``Model::is_packable`` so that only decoder weights are packed, then sets the switch. It
must run before ``ctranslate2`` is imported, acts only for the fork build it was made for, and changes nothing
without MKL (AMD, ARM); ``TOKENMAP_PACKED_GEMM=0`` turns it off. :func:`loaded` and :func:`child_environment`
remove the switch for a process that loads the fork without the library.

Example::

    >>> decide(modules={"ctranslate2": object()}, environ={})   # too late: CTranslate2 is loaded
    'too late'
    >>> decide(modules={}, environ={"TOKENMAP_PACKED_GEMM": "0"})
    'off'
    >>> child_environment({"CT2_USE_EXPERIMENTAL_PACKED_GEMM": "1", "A": "b"}, state="on")
    {'A': 'b'}
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
import sys
from pathlib import Path
from typing import MutableMapping

from tokenmap.runtime import nativelib
from tokenmap.runtime.engine import FORK_VERSION  # the fork build whose ``Model::is_packable`` the library replaces

logger = logging.getLogger("tokenmap")

SWITCH = "CT2_USE_EXPERIMENTAL_PACKED_GEMM"
OPT_OUT = "TOKENMAP_PACKED_GEMM"

#: what :func:`install` did in this process (None until it ran)
status: str | None = None


def library_path() -> Path:
    """``$XDG_CACHE_HOME/tokenmap/native/libtokenmap_packing.so`` (``make setup`` builds it)."""
    return nativelib.library_path("libtokenmap_packing.so")


def _engine_version() -> str | None:
    """The version of the installed ``ctranslate2`` package, read without importing it."""
    spec = importlib.util.find_spec("ctranslate2")
    if spec is None or not spec.submodule_search_locations:
        return None
    version_file = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    try:
        text = version_file.read_text(encoding="utf-8")
    except OSError:
        return None
    return next((line.split("=", 1)[1].strip().strip("\"'") for line in text.splitlines()
                 if line.startswith("__version__")), None)


def decide(modules=None, environ=None, library: Path | None = None) -> str:
    """What :func:`install` would do: ``"load"`` the library, or why not: ``"off"``
    (``TOKENMAP_PACKED_GEMM=0``), ``"too late"`` (``ctranslate2`` already imported), ``"other engine"``
    (not the fork build the library is for) or ``"not built"`` (no library: ``make engine``)."""
    modules = sys.modules if modules is None else modules
    environ = os.environ if environ is None else environ
    if environ.get(OPT_OUT, "").lower() in ("0", "off", "no", "false"):
        return "off"
    if "ctranslate2" in modules:
        return "too late"
    if _engine_version() != FORK_VERSION:
        return "other engine"
    if not (library or library_path()).is_file():
        return "not built"
    return "load"


def install(library: Path | None = None) -> str:
    """Turn on packed GEMM for the fork's decoder in this process when :func:`decide` says it is safe;
    :data:`status` becomes ``"on"``, ``"failed"`` (the library did not load) or :func:`decide`'s reason."""
    global status
    status = decide(library=library)
    if status == "load":
        try:
            ctypes.CDLL(str(library or library_path()), mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            logger.debug("packed GEMM library did not load: %s", exc)
            status = "failed"
        else:
            os.environ[SWITCH] = "1"
            status = "on"
    return status


def loaded() -> None:
    """Called once the fork has loaded a model in this process (CTranslate2 has read the switch): the switch
    leaves the environment, which a child process would inherit."""
    if status == "on":
        os.environ.pop(SWITCH, None)


def child_environment(environ: MutableMapping[str, str] | None = None, state: str | None = None) -> dict:
    """A copy of ``environ`` (default ``os.environ``) without the switch this module set (``state``:
    default :data:`status`), for a child process that may load the fork without the library."""
    env = dict(os.environ if environ is None else environ)
    if (status if state is None else state) == "on":
        env.pop(SWITCH, None)
    return env


def describe() -> str:
    """One line for ``tokenmap doctor``: whether the fork's decoder runs packed GEMM, and why."""
    reasons = {
        "on": "on (used where CTranslate2 runs Intel MKL, i.e. on Intel CPUs)",
        "off": f"off ({OPT_OUT}=0)",
        "too late": "off: ctranslate2 was imported before tokenmap",
        "other engine": "off: not the engine fork build the packing library is for",
        "not built": f"off: no {library_path()} (`make packing` builds it with a C++ compiler)",
        "failed": f"off: {library_path()} did not load",
    }
    return reasons.get(status or "", "not set up (tokenmap was not imported first)")
