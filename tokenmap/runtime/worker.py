"""A worker process spoken to in JSON lines (:class:`Worker`), its data in POSIX shared memory
(:class:`SharedBlock`, which no resource tracker knows of). :mod:`tokenmap.runtime.stock_worker` runs
stock CTranslate2 this way.

Example::

    >>> block = SharedBlock(64)
    >>> block.buf[:3] = b"abc"; bytes(block.buf[:3])
    b'abc'
    >>> block.close(); block.unlink()
"""

from __future__ import annotations

import json
import math
import mmap
import os
import secrets
import select
import subprocess
import time
from contextlib import suppress

TIMEOUT_ENV = "TOKENMAP_ENCODER_TIMEOUT"


class StockWorkerError(RuntimeError):
    """The stock CTranslate2 worker (it encodes and decodes) is not installed, did not start, or failed."""


class WorkerDied(StockWorkerError):
    """The worker exited or closed its pipe."""


class WorkerHung(StockWorkerError):
    """The worker did not answer in time (it has been killed)."""


class SharedBlock:
    """A POSIX shared-memory block that no resource tracker knows of: ``name`` is what the worker attaches,
    ``buf`` the mapped bytes; :meth:`unlink` removes the block (one already removed is no error)."""

    def __init__(self, size: int):
        import _posixshmem  # what multiprocessing.shared_memory itself uses

        while True:
            name = f"/psm_{secrets.token_hex(4)}"
            try:
                fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
                break
            except FileExistsError:
                continue
        try:
            os.ftruncate(fd, size)
            self._mmap = mmap.mmap(fd, size)
        except BaseException:
            _posixshmem.shm_unlink(name)
            raise
        finally:
            os.close(fd)
        self._name, self.size = name, size
        self.buf = memoryview(self._mmap)

    @property
    def name(self) -> str:
        return self._name.lstrip("/")

    def close(self) -> None:
        if self.buf is not None:
            self.buf.release()
            self.buf = None
            self._mmap.close()

    def unlink(self) -> None:
        import _posixshmem

        with suppress(FileNotFoundError):
            _posixshmem.shm_unlink(self._name)


class Worker:
    """One worker process: a JSON line to its stdin, a JSON line back from its stdout, read with a time limit
    (both pipes unbuffered, so a child made by ``os.fork`` can close its copies without writing anything)."""

    def __init__(self, argv: list[str], env: dict):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0)
        self.pid = self.proc.pid
        self.version: str | None = None  # set once the worker said it is ready
        self._pending = b""

    def send(self, message: dict) -> None:
        data = (json.dumps(message) + "\n").encode()
        try:
            while data:
                data = data[os.write(self.proc.stdin.fileno(), data):]
        except (OSError, ValueError):  # broken pipe, or closed
            raise WorkerDied(self._death()) from None

    def receive(self, timeout: float) -> dict:
        """The next line from the worker as a dict; :class:`WorkerHung` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerHung(f"stock encoder worker {self.pid} did not answer within {timeout:g} s "
                                 f"(killed it; {TIMEOUT_ENV} sets the limit a window)")
            if not poller.poll(math.ceil(left * 1000)):
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerDied(self._death())
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise StockWorkerError(f"stock encoder worker {self.pid} answered {line[:80]!r}, not a JSON object")
        return answer

    def _death(self) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"status {code}"
        return f"stock encoder worker {self.pid} exited ({how}); see its stderr above"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, wait: float = 10.0) -> None:
        """Close its stdin (it removes the blocks and exits), killing it after ``wait`` seconds."""
        self.proc.stdin.close()
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc.stdout.close()

    def abandon(self) -> None:
        """In a forked child: close the copies of the pipes, leave the process to its owner."""
        self.proc.stdin.close()
        self.proc.stdout.close()
        ABANDONED.append(self.proc)  # never waited for here: it is not this process's child


ABANDONED: list = []  # workers a forked child let go of (never waited for there)
