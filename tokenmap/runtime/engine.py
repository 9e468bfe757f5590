"""The engine: the CTranslate2 build that runs Whisper, whether it can draft, and its threads.

Stock ``ctranslate2`` offers Whisper only ``encode``/``generate``/``detect_language``/``align``; drafting
needs the MIT fork ``ctranslate2-crisperwhisper`` (``prefill``, ``forward_batch``, ``truncate_to_step``).
Both install the same ``ctranslate2`` package, so whichever was installed last wins: :func:`require_step_api`
says so in one line (:class:`EngineError`) when stock CTranslate2 won. Where the fork has no wheel (it ships
manylinux x86-64 only), :func:`drafting_off_reason` says why drafting is off and :func:`warn_drafting_off`
logs it once, while transcription goes on as plain faster-whisper.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
from dataclasses import dataclass

FORK_DIST = "ctranslate2-crisperwhisper"
FORK_VERSION = "4.7.1.post3"
FIX_COMMAND = f"pip install --force-reinstall --no-deps {FORK_DIST}=={FORK_VERSION}"
FORK_WHEELS = "manylinux x86-64"
STEP_API = ("prefill", "forward_step", "forward_batch", "forward_batch_greedy", "generate_speculative")


logger = logging.getLogger("tokenmap")
_warned: set[str] = set()  # drafting-off messages already logged by this process


class EngineError(RuntimeError):
    """The installed CTranslate2 cannot run tokenmap's decoder."""


@dataclass(frozen=True)
class GenerationResult:
    """The fields of ``ctranslate2.models.WhisperGenerationResult`` faster-whisper reads, for results that
    do not come from ``ctranslate2.models.Whisper.generate`` in this process."""

    sequences_ids: list
    scores: list
    no_speech_prob: float = 0.0


def missing_step_api(ctranslate2_module=None) -> list[str]:
    """Names of the fork's decoder-step methods that the loaded engine lacks."""
    ct2 = ctranslate2_module or _import_ctranslate2()
    missing = [name for name in STEP_API if not hasattr(ct2.models.Whisper, name)]
    state_cls = getattr(ct2.models, "WhisperDecoderState", None)
    if state_cls is None or not hasattr(state_cls, "truncate_to_step"):
        missing.append("truncate_to_step")
    return missing


def require_step_api():
    """Import ``ctranslate2`` and check it is the fork; return the module (else :class:`EngineError`, naming
    the command that fixes it)."""
    ct2 = _import_ctranslate2()
    missing = missing_step_api(ct2)
    if missing:
        raise EngineError(
            f"ctranslate2 {ct2.__version__} has no decoder-step API (missing: {', '.join(missing)}); "
            f"stock CTranslate2 has shadowed the fork. Fix: {sys.executable} -m {FIX_COMMAND} "
            "(or run `make engine`)"
        )
    return ct2


def platform_name() -> str:
    """This machine's operating system and CPU architecture, e.g. ``Linux x86_64``."""
    return f"{platform.system() or 'unknown'} {platform.machine() or 'unknown'}"


def fork_wheel_available(system: str | None = None, machine: str | None = None) -> bool:
    """True where the fork publishes a wheel: Linux on x86-64 (defaults: this machine)."""
    system = platform.system() if system is None else system
    machine = (platform.machine() if machine is None else machine).lower()
    return system == "Linux" and machine in ("x86_64", "amd64")


def drafting_off_reason() -> str | None:
    """None when the loaded engine can draft; otherwise one line saying why not and how to fix it."""
    try:
        ct2 = _import_ctranslate2()
    except EngineError as exc:
        return str(exc)
    missing = missing_step_api(ct2)
    if not missing:
        return None
    if fork_wheel_available():
        cause, install = "stock CTranslate2 has shadowed the fork", "install it with"
    else:
        cause, install = f"the fork has no wheel for {platform_name()}", "on Linux x86-64 install it with"
    return (
        f"token-map drafting is off: ctranslate2 {ct2.__version__} has no decoder-step API ({cause}), "
        f"so tokenmap decodes with plain faster-whisper. Drafting needs the engine fork {FORK_DIST} "
        f"({FORK_WHEELS} wheels only); {install}: {sys.executable} -m {FIX_COMMAND}"
    )


def warn_drafting_off() -> bool:
    """Log :func:`drafting_off_reason` once per process; True when drafting is available."""
    reason = drafting_off_reason()
    if reason is None:
        return True
    if reason not in _warned:
        _warned.add(reason)
        logger.warning("%s", reason)
    return False


def _import_ctranslate2():
    try:
        import ctranslate2
    except ImportError as exc:
        raise EngineError(f"ctranslate2 is not installed ({exc}). Fix: {FIX_COMMAND}") from None
    return ctranslate2


def default_threads() -> int:
    """Threads tokenmap gives CTranslate2 by default: every visible core, at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))
