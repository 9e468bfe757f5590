"""The engine: the CTranslate2 build that runs Whisper, and the one way a model is opened on it.

An **engine** here is a CTranslate2 build. Stock ``ctranslate2`` offers Whisper only
``encode``/``generate``/``detect_language``/``align``. Speculative decoding needs to feed draft
tokens and truncate the decoder state, which the MIT fork ``ctranslate2-crisperwhisper`` adds
(``prefill``, ``forward_batch``, ``truncate_to_step``). Both distributions install the same
``ctranslate2`` package, so whichever was installed last wins; :func:`require_step_api` says so in
one line (:class:`EngineError`) when stock CTranslate2 won.

The fork ships manylinux x86-64 wheels only. Elsewhere (macOS, Windows, Linux on ARM) stock
CTranslate2 is the engine: :func:`drafting_off_reason` says why drafting is off and
:func:`warn_drafting_off` logs it once, while transcription goes on as plain faster-whisper.

Opening a model is one path for every caller (``tokenmap.WhisperModel``, ``tokenmap transcribe``,
live streaming, the benchmarks): :func:`open_model` resolves the model name once and loads it on
the fork; :func:`setup_model` (which ``open_model`` ends with, and which a caller that loaded the
fork's model itself calls directly) checks the fork, chooses the encoder and decoder precision
(:func:`tokenmap.runtime.precision.split_model`) and loads the maps (:func:`load_token_maps`).
Both return an :class:`OpenedModel`; nothing is changed in place.

Example::

    >>> opened = open_model("base", "int8", threads=2, token_map="ivr.tmap")   # doctest: +SKIP
    >>> opened.model.encoder_engine, opened.model.decoder_compute_type          # doctest: +SKIP
    ('stock', 'int8')
"""

from __future__ import annotations

import logging
import os
import platform
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tokenizers import Tokenizer

from tokenmap.decode.cost import CostModel, load_cost_model
from tokenmap.decode.special import SpecialTokens
from tokenmap.maps.mapfile import load_maps
from tokenmap.models import resolve_model
from tokenmap.runtime import packing
from tokenmap.runtime.precision import SplitModel, split_model
from tokenmap.runtime.threads import warn_if_late
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


def default_threads() -> int:
    """Threads tokenmap gives CTranslate2 by default: every visible core, at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


@dataclass
class OpenedModel:
    """A Whisper model opened by :func:`open_model` or :func:`setup_model`.

    ``model`` is what decodes: a :class:`~tokenmap.runtime.precision.SplitModel` (its encoder and
    decoder) when ``drafting``, else the ``ctranslate2.models.Whisper`` it was given (stock
    CTranslate2 cannot draft); ``tokenizer`` is the model's ``tokenizers.Tokenizer`` and
    ``token_map`` what :func:`load_token_maps` made of the maps asked for.
    """

    model_dir: Path
    threads: int
    model: object
    tokenizer: object
    token_map: object
    drafting: bool

    @property
    def decoder_compute_type(self) -> str | None:
        """The decoder's compute type (None when not drafting)."""
        return self.model.decoder_compute_type if isinstance(self.model, SplitModel) else None

    @property
    def encoder_engine(self) -> str | None:
        """The engine that encodes: ``"openvino"``, ``"stock"`` or ``"fork"`` (None when not drafting)."""
        return self.model.encoder_engine if isinstance(self.model, SplitModel) else None

    @cached_property
    def special(self) -> SpecialTokens:
        """The model's special token ids."""
        return SpecialTokens.from_model_dir(str(self.model_dir))

    @cached_property
    def cost(self) -> CostModel:
        """The verify-pass cost curve calibrated for this decoder precision and thread count (else the built-in one)."""
        return load_cost_model(self.model_dir, self.decoder_compute_type, self.threads)


def open_model(model: str | os.PathLike = "base", compute_type: str = "int8", threads: int | None = None,
               decoder_compute_type: str | None = "auto", encoder: str = "auto", *, token_map=None,
               without_fork: str = "raise", exact: bool = False, **load_kwargs) -> OpenedModel:
    """Open ``model`` (anything :func:`tokenmap.models.resolve_model` accepts) on the CPU of this machine.

    Resolves ``model`` once, loads it on the fork at ``compute_type`` with ``threads`` (default
    :func:`default_threads`) and ends with :func:`setup_model`, whose other arguments these are.
    """
    model_dir = resolve_model(model)
    threads = threads or default_threads()
    ct2 = _import_ctranslate2()
    fork = ct2.models.Whisper(str(model_dir), device="cpu", compute_type=compute_type, intra_threads=threads)
    return setup_model(model_dir, fork, compute_type, threads, decoder_compute_type, encoder, token_map=token_map,
                       without_fork=without_fork, exact=exact, **load_kwargs)


def setup_model(model_dir: Path, fork, compute_type: str, threads: int, decoder_compute_type: str | None = "auto",
                encoder: str = "auto", *, token_map=None, tokenizer=None, without_fork: str = "raise",
                exact: bool = False, **load_kwargs) -> OpenedModel:
    """Set up ``fork``, the ``ctranslate2.models.Whisper`` already loaded from the resolved ``model_dir``.

    Without the fork's decoder-step API, ``without_fork`` decides: ``"raise"`` :class:`EngineError`,
    ``"warn"`` (log why once, :func:`warn_drafting_off`) or ``"quiet"``; the last two return
    ``fork`` itself with ``drafting`` False. With the fork, ``decoder_compute_type``, ``exact`` and
    ``encoder`` choose the precision of each half (:func:`tokenmap.runtime.precision.split_model`;
    ``load_kwargs``, e.g. ``device``, ``device_index``, ``num_workers``, go to a second decoder copy).
    ``token_map`` (a path, a loaded map, or a list of them) is loaded for ``tokenizer`` (default:
    ``model_dir``'s ``tokenizer.json``) by :func:`load_token_maps`. The caller puts the returned
    ``model`` where it decodes.
    """
    packing.loaded()  # the fork has read the packed-GEMM switch: children must not inherit it
    if without_fork == "raise":
        require_step_api()
    drafting = warn_drafting_off() if without_fork == "warn" else drafting_off_reason() is None
    warn_if_late()
    if tokenizer is None:
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    maps = load_token_maps(token_map, tokenizer)
    if not drafting:
        return OpenedModel(model_dir, threads, fork, tokenizer, maps, False)
    model = split_model(fork, str(model_dir), compute_type, decoder_compute_type, encoder, cpu_threads=threads,
                        exact=exact, **load_kwargs)
    return OpenedModel(model_dir, threads, model, tokenizer, maps, True)


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
