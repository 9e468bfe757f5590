"""The decoding engine: the CTranslate2 fork with a decoder-step API.

Stock ``ctranslate2`` offers Whisper only ``encode``/``generate``/``detect_language``/
``align``. Speculative decoding needs to feed draft tokens and truncate the
decoder state, which the MIT fork ``ctranslate2-crisperwhisper`` adds
(``prefill``, ``forward_batch``, ``truncate_to_step``). Both distributions
install the same ``ctranslate2`` package, so whichever was installed last wins;
:func:`require_step_api` says so in one line when stock CTranslate2 won.

The fork ships manylinux x86-64 wheels only. Elsewhere (macOS, Windows, Linux
on ARM) stock CTranslate2 is the engine: :func:`drafting_off_reason` says why
drafting is off and :func:`warn_drafting_off` logs it once, while transcription
goes on as plain faster-whisper.

:func:`open_engine` is the one way a Whisper model is opened for decoding (the
library's ``WhisperModel``, ``tokenmap transcribe``, live streaming and the
benchmarks): the fork check, the model lookup, the thread count, the encoder
and decoder precision (:mod:`tokenmap.runtime.precision`) and the cost curve of a verify
pass.  :func:`load_token_maps` loads the maps it drafts from.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace

from tokenizers import Tokenizer

from tokenmap.runtime import memory, threads
from tokenmap.runtime.threads import warn_if_late
from tokenmap.decode.cost import CostModel, load_cost_model
from tokenmap.decode.rules import SpecialTokens
from tokenmap.maps.mapfile import load_maps
from tokenmap.models import resolve_model
from tokenmap.runtime.precision import build_engine, choose_encoder, describe
from tokenmap.textok import TextTokenizer

FORK_DIST = "ctranslate2-crisperwhisper"
FORK_VERSION = "4.7.1.post3"
FIX_COMMAND = f"pip install --force-reinstall --no-deps {FORK_DIST}=={FORK_VERSION}"
FORK_WHEELS = "manylinux x86-64"
STEP_API = ("prefill", "forward_step", "forward_batch", "forward_batch_greedy", "generate_speculative")


logger = logging.getLogger("tokenmap")
_warned: set[str] = set()  # drafting-off messages already logged by this process


class EngineError(RuntimeError):
    """The installed CTranslate2 cannot run tokenmap's decoder."""


def missing_step_api(ctranslate2_module=None) -> list[str]:
    """Names of the fork's decoder-step methods that the loaded engine lacks."""
    ct2 = ctranslate2_module or _import_ctranslate2()
    missing = [name for name in STEP_API if not hasattr(ct2.models.Whisper, name)]
    state_cls = getattr(ct2.models, "WhisperDecoderState", None)
    if state_cls is None or not hasattr(state_cls, "truncate_to_step"):
        missing.append("truncate_to_step")
    return missing


def require_step_api():
    """Import ``ctranslate2`` and check it is the fork; return the module.

    Raises :class:`EngineError` naming the command that fixes it.
    """
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


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cpu_report(model_dir, timeout: float = 120.0) -> dict:
    """CTranslate2's own CPU report (ISA, GEMM backends), read in a subprocess.

    CTranslate2 prints it when it first loads a model with ``CT2_VERBOSE=1``,
    so this loads ``model_dir`` once in a child process.
    """
    code = (
        "import ctranslate2; "
        f"ctranslate2.models.Whisper({str(model_dir)!r}, device='cpu', compute_type='int8')"
    )
    env = dict(os.environ, CT2_VERBOSE="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": str(exc)}
    report = {}
    for line in proc.stderr.splitlines():
        text = re.sub(r"^\[.*?\]\s*\[ctranslate2\]\s*\[thread \d+\]\s*\[info\]\s*", "", line).strip()
        if text.startswith("CPU:"):
            report["cpu"] = text[4:].strip()
        elif ":" in text and text.startswith("- "):
            key, _, value = text[2:].partition(":")
            report[key.strip()] = value.strip()
    return report


def engine_info(model_dir=None) -> dict:
    """Everything `tokenmap doctor` prints, as a dict.

    ``model_dir`` (optional) is loaded in a subprocess to read CTranslate2's CPU report.
    """
    info = {
        "platform": platform_name(),
        "fork wheel for this platform": (
            f"yes ({FORK_WHEELS})" if fork_wheel_available()
            else f"no ({FORK_DIST} ships {FORK_WHEELS} wheels only)"
        ),
        "python": sys.version.split()[0],
        "ctranslate2 (module)": "not importable",
        "ctranslate2-crisperwhisper (dist)": _version(FORK_DIST),
        "ctranslate2 (stock dist)": _version("ctranslate2"),
        "faster-whisper": _version("faster-whisper"),
        "numpy": _version("numpy"),
        "tokenizers": _version("tokenizers"),
        "runtime settings": runtime_settings(),
    }
    try:
        ct2 = _import_ctranslate2()
    except EngineError as exc:
        info["step API"] = str(exc)
        info["drafting"] = "off: ctranslate2 is not importable"
        return info
    info["ctranslate2 (module)"] = ct2.__version__
    missing = missing_step_api(ct2)
    if not missing:
        info["step API"] = "present"
    elif fork_wheel_available():
        info["step API"] = f"MISSING {', '.join(missing)}; fix: {FIX_COMMAND}"
    else:
        info["step API"] = f"missing {', '.join(missing)} (stock CTranslate2; no fork wheel for this platform)"
    reason = drafting_off_reason()
    info["drafting"] = "on" if reason is None else f"off: {reason.partition(': ')[2]}"
    info["compute types (cpu)"] = ", ".join(sorted(ct2.get_supported_compute_types("cpu")))
    info["threads"] = _thread_report()
    info["thread wait"] = threads.describe()
    info["memory"] = memory.describe()
    if reason is None:
        info.update(_precision_report())
    else:
        info["encoder"] = f"ctranslate2 {ct2.__version__} in process (drafting off: plain faster-whisper)"
    if model_dir is not None:
        info.update({("cpu" if k == "cpu" else f"cpu {k}"): v for k, v in cpu_report(model_dir).items()})
    return info


def runtime_settings() -> str:
    """One line for ``tokenmap doctor``: the process-wide settings tokenmap applied here.

    They hold for the whole process, a host program's own threads and allocations included (the
    thread wait policy also reaches child processes through the environment), so the line names
    each one applied with the variable that turns it off. The thread wait policy is set on
    ``import tokenmap``; the malloc policy by the ``tokenmap`` command, by
    ``WhisperModel(..., malloc_policy=True)`` or on import with ``TOKENMAP_MALLOC=tokenmap``.
    """
    applied = []
    if memory.status == "applied":
        applied.append(f"glibc malloc: one arena, no mmap, trim threshold 512 MB, top pad 64 MB "
                       f"({memory.OPT_OUT}=default to leave glibc's defaults)")
    if threads.status == "applied":
        applied.append(f"OMP_WAIT_POLICY=ACTIVE GOMP_SPINCOUNT=100000 in the environment "
                       f"({threads.OPT_OUT}=default to leave OpenMP's defaults)")
    if not applied:
        return (f"none applied by tokenmap in this process (malloc: {memory.status or 'not asked for'}, "
                f"thread wait: {threads.status or 'not run'})")
    return "set by tokenmap for the whole process, not only the engine: " + "; ".join(applied)


def _precision_report() -> dict:
    """Which engine encodes and which precision decodes by default, and why (:mod:`tokenmap.runtime.precision`)."""
    _, reason = choose_encoder("auto")
    return {"encoder": reason, "decoder (--compute-type int8)": describe("int8"),
            "decoder (--exact)": describe("int8", exact=True)}


def _thread_report() -> str:
    omp = os.environ.get("OMP_NUM_THREADS")
    cores = os.cpu_count() or 1
    return (
        f"{cores} cores visible; OMP_NUM_THREADS={omp or 'unset'}; "
        f"tokenmap uses {default_threads()} intra-op threads unless --threads says otherwise"
    )


def default_threads() -> int:
    """Threads tokenmap gives CTranslate2 by default: every visible core, at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


@dataclass
class Engine:
    """A Whisper model opened by :func:`open_engine`.

    ``model`` is the ``ctranslate2.models.Whisper`` that decodes (a
    :class:`tokenmap.runtime.precision.SplitEngine` when another engine encodes);
    ``tokenizer`` is the model's ``tokenizers.Tokenizer`` and ``token_map`` what
    :func:`load_token_maps` made of the maps asked for; ``drafting`` is False on
    stock CTranslate2, where the precision fields stay None.
    """

    model_dir: Path
    threads: int
    model: object
    tokenizer: object
    token_map: object
    drafting: bool
    decoder_compute_type: str | None = None
    encoder_engine: str | None = None

    @cached_property
    def special(self) -> SpecialTokens:
        """The model's special token ids."""
        return SpecialTokens.from_model_dir(str(self.model_dir))

    @cached_property
    def cost(self) -> CostModel:
        """The verify-pass cost curve calibrated for this decoder precision and thread count (else the built-in one)."""
        return load_cost_model(self.model_dir, self.decoder_compute_type, self.threads)


def open_engine(model: str | os.PathLike = "base", compute_type: str = "int8", threads: int | None = None,
                decoder_compute_type: str | None = "auto", encoder: str = "auto", *, token_map=None,
                fw_model=None, without_fork: str = "raise", exact: bool = False, **load_kwargs) -> Engine:
    """Open ``model`` (anything :func:`tokenmap.models.resolve_model` accepts) for decoding on this machine.

    ``threads`` defaults to :func:`default_threads`.  Without the fork's
    decoder-step API, ``without_fork`` decides: ``"raise"`` :class:`EngineError`,
    ``"warn"`` (log why once, :func:`warn_drafting_off`) or ``"quiet"``; the last
    two return an engine with ``drafting`` False.  With the fork, ``decoder_compute_type``, ``exact`` and
    ``encoder`` choose the precision of each half (:func:`tokenmap.runtime.precision.build_engine`).
    ``token_map`` (a path, a loaded map, or a list of them) is loaded for the
    model's tokenizer before the engine is set up (:func:`load_token_maps`).
    ``fw_model`` is a faster-whisper model already loaded from the same
    directory, whose ``model`` is then set up in place; otherwise the fork's
    ``ctranslate2.models.Whisper`` is loaded here (on the CPU).  ``load_kwargs``
    (``device``, ``device_index``, ``num_workers``) go to a second decoder copy.
    """
    if without_fork == "raise":
        require_step_api()
    model_dir = resolve_model(model)
    threads = threads or default_threads()
    drafting = warn_drafting_off() if without_fork == "warn" else drafting_off_reason() is None
    warn_if_late()
    if fw_model is None:
        ct2 = _import_ctranslate2()
        fw_model = SimpleNamespace(model=ct2.models.Whisper(str(model_dir), device="cpu", compute_type=compute_type,
                                                            intra_threads=threads))
    tokenizer = getattr(fw_model, "hf_tokenizer", None)
    if tokenizer is None:
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    maps = load_token_maps(token_map, tokenizer)
    if not drafting:
        return Engine(model_dir, threads, fw_model.model, tokenizer, maps, False)
    decoder, encoder_engine = build_engine(fw_model, str(model_dir), compute_type, decoder_compute_type, encoder,
                                           cpu_threads=threads, exact=exact, **load_kwargs)
    return Engine(model_dir, threads, fw_model.model, tokenizer, maps, True, decoder, encoder_engine)


def load_token_maps(token_map, hf_tokenizer):
    """One map, or a list of maps (several paths, or a map set's sections) for
    :class:`tokenmap.decode.drafters.MapSetDrafter`; None for None.

    ``token_map`` is a path or a loaded map, or a list of them; paths are loaded
    for ``hf_tokenizer`` (a ``tokenizers.Tokenizer``), whose fingerprint they must carry.
    """
    if token_map is None:
        return None
    tok = None
    maps = []
    for m in token_map if isinstance(token_map, (list, tuple)) else [token_map]:
        if isinstance(m, (str, os.PathLike)):
            tok = tok or TextTokenizer(hf_tokenizer)
            maps.extend(load_maps(m, tok.fingerprint, vocab_size=tok.vocab_size))
        else:
            maps.append(m)
    return maps[0] if len(maps) == 1 else maps
