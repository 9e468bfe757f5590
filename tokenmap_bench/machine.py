"""The machine and checkout a run was measured on: CPU, cores, commit, command; the process's peak memory."""

from __future__ import annotations

import datetime
import os
import platform
import resource
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path


def checkout_root() -> Path:
    """The source checkout a run reads ``corpora/`` from and records the commit of.

    The current directory when it holds ``corpora/`` (``make bench`` runs from the
    checkout's root), else the folder above this package (an editable install).
    """
    cwd = Path.cwd()
    return cwd if (cwd / "corpora").is_dir() else Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit(root: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@dataclass(frozen=True)
class Machine:
    cpu: str
    cores: int
    date: str
    python: str
    platform: str
    git_commit: str
    command: str

    def as_dict(self) -> dict:
        return asdict(self)


def machine_info(root: Path, argv=None) -> Machine:
    return Machine(cpu=cpu_model(), cores=os.cpu_count() or 0,
                   date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                   python=platform.python_version(), platform=platform.platform(),
                   git_commit=git_commit(root), command=" ".join(argv if argv is not None else sys.argv))


def peak_rss_mb() -> float:
    """Peak resident set size of this process, MiB (VmHWM; ru_maxrss as a fallback)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024.0, 1)
    except (OSError, ValueError):
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)
