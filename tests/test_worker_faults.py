"""The stock-encoder worker under faults: killed, hung, orphaned, forked, shared by threads.

Every test also checks /dev/shm: a shared-memory segment (``psm_*``) that
appeared during the test and that no process maps any more is a leak. (Other
processes on the machine may create and hold their own segments meanwhile;
those are mapped, so they do not count.)
"""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tokenmap.encoders.base import StockEncoder
from tokenmap.runtime.stock_worker import (
    DEFAULT_TIMEOUT,
    TIMEOUT_ENV,
    StockWorker,
    StockWorkerError,
    encoder_timeout,
    stock_dir,
    stock_installed,
)
from tokenmap.runtime.worker import Worker

SHM = Path("/dev/shm")
ROOT = Path(__file__).resolve().parent.parent


def _segments() -> set[str]:
    return {p.name for p in SHM.glob("psm_*")}


def _mapped() -> set[str]:
    """The ``psm_*`` segments some process still maps (from every /proc/PID/maps)."""
    names = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                text = (proc / "maps").read_text()
            except OSError:
                continue
            names.update(line.split("/dev/shm/", 1)[1].split()[0] for line in text.splitlines()
                         if "/dev/shm/psm_" in line)
    return names


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie left for a parent that does not reap is not running)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _wait_until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def shm():
    """Fails the test when it leaves a shared-memory segment behind."""
    before = _segments()
    yield before
    leaked = set()

    def clean():
        nonlocal leaked
        leaked = (_segments() - before) - _mapped()
        return not leaked

    after = len(_segments())
    assert _wait_until(clean, 5), f"leaked {sorted(leaked)} ({len(before)} psm_* segments before, {after} after)"


@pytest.fixture(scope="module")
def stock(base_model_dir):
    if not stock_installed():
        pytest.skip(f"no stock CTranslate2 in {stock_dir()}: run `make stock-encoder`")
    return base_model_dir


@pytest.fixture(scope="module")
def inputs():
    """Four different [1, 80, 3000] float32 windows."""
    rng = np.random.default_rng(34)
    return [rng.standard_normal((1, 80, 3000), dtype=np.float32) for _ in range(4)]


@pytest.fixture(scope="module")
def shared(stock):
    enc = StockWorker(stock, "int8", threads=2)
    yield enc
    enc.close()


@pytest.fixture(scope="module")
def expected(shared, inputs):
    """Each input's encoder output, encoded one after another."""
    return [np.asarray(shared.encode(x)) for x in inputs]


def test_timeout_setting(monkeypatch, caplog):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert encoder_timeout() == DEFAULT_TIMEOUT >= 60 and encoder_timeout(2.5) == 2.5
    monkeypatch.setenv(TIMEOUT_ENV, "7")
    assert encoder_timeout() == 7.0
    monkeypatch.setenv(TIMEOUT_ENV, "soon")
    with caplog.at_level(logging.WARNING, logger="tokenmap"):
        assert encoder_timeout() == DEFAULT_TIMEOUT
    assert TIMEOUT_ENV in caplog.text
    for bad in (0, -1, float("nan"), "3"):
        with pytest.raises(ValueError, match="positive number of seconds"):
            encoder_timeout(bad)


# -- 1. killed ------------------------------------------------------------------------------------
@pytest.mark.model
def test_a_killed_worker_is_replaced_once(stock, inputs, expected, shm, caplog):
    """SIGKILL between two windows and during one: the call goes on with a new worker, same output."""
    enc = StockWorker(stock, "int8", threads=2)
    try:
        enc.wait_ready()
        first = enc._proc.pid
        os.kill(first, signal.SIGKILL)  # between windows
        with caplog.at_level(logging.WARNING, logger="tokenmap"):
            np.testing.assert_array_equal(np.asarray(enc.encode(inputs[0])), expected[0])
            second = enc._proc.pid
            batch = np.concatenate(inputs[:2])  # about two encodes long, so the kill lands inside
            killer = threading.Timer(0.15, os.kill, (second, signal.SIGKILL))
            killer.start()
            got = np.asarray(enc.encode(batch))
            killer.join()
        np.testing.assert_array_equal(got, np.concatenate(expected[:2]))
        assert len({first, second, enc._proc.pid}) == 3 and not _alive(first) and not _alive(second)
        restarts = [r.getMessage() for r in caplog.records if "starting a new one" in r.getMessage()]
        assert len(restarts) == 2 and all("killed by signal 9" in m for m in restarts)
        names = [b.name for b in enc._blocks.values()]
    finally:
        enc.close()
    assert names and not any((SHM / n).exists() for n in names)


@pytest.mark.model
def test_a_worker_that_dies_again_gives_up_with_one_line(stock, inputs, shm, monkeypatch, caplog, fork_stand_in):
    """The replacement dies too: no third worker; the fallback takes over, or one error line."""
    receive = Worker.receive

    def dying(self, timeout):  # every worker dies once it was asked to encode
        if self.version is not None:
            os.kill(self.pid, signal.SIGKILL)
        return receive(self, timeout)

    monkeypatch.setattr(Worker, "receive", dying)
    fork = fork_stand_in()
    enc = StockEncoder(stock, "int8", threads=2, fallback=fork)
    with caplog.at_level(logging.WARNING, logger="tokenmap"):
        assert enc.encode(inputs[0]) == ("fork", (1, 80, 3000))
        assert enc.encode(inputs[0]) == ("fork", (1, 80, 3000))
    assert fork.calls == 2 and "killed by signal 9" in enc.worker.failed and "\n" not in enc.worker.failed
    assert sum("starting a new one" in r.getMessage() for r in caplog.records) == 1
    assert sum("the fork encodes and decodes from now on" in r.getMessage() for r in caplog.records) == 1
    plain = StockWorker(stock, "int8", threads=2)
    try:
        with pytest.raises(StockWorkerError, match=r"^stock encoder worker \d+ exited \(killed by signal 9\)"):
            plain.encode(inputs[0])
    finally:
        plain.close()


KILL_EVERY_CHILD = """
import os, signal, sys
import numpy as np
from tokenmap.runtime.stock_worker import StockWorker

def children():
    found = []
    for proc in os.listdir("/proc"):
        try:
            stat = open(f"/proc/{proc}/stat").read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(stat[1]) == os.getpid():
            found.append(int(proc))
    return found

x = np.random.default_rng(1).standard_normal((1, 80, 3000), dtype=np.float32)
encoders = [StockWorker(sys.argv[1], "int8", threads=2) for _ in range(2)]
first = [np.asarray(e.encode(x)) for e in encoders]
for pid in children():  # the workers and multiprocessing's resource tracker, were there one
    os.kill(pid, signal.SIGKILL)
again = [np.asarray(e.encode(x)) for e in encoders]
for e in encoders:
    e.close()
print(all(np.array_equal(a, b) for a, b in zip(first, again)))
"""


@pytest.mark.model
def test_killing_every_child_prints_no_traceback(stock, shm):
    """The OOM killer taking the workers (and any other child): stderr stays clean, nothing leaks."""
    run = subprocess.run([sys.executable, "-c", KILL_EVERY_CHILD, str(stock)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"
    assert "Traceback" not in run.stderr and "resource_tracker" not in run.stderr, run.stderr


# -- 2. hung --------------------------------------------------------------------------------------
@pytest.mark.model
@pytest.mark.parametrize("with_fallback", [True, False])
def test_a_hung_worker_times_out(stock, inputs, expected, shm, caplog, with_fallback, fork_stand_in):
    fork = fork_stand_in() if with_fallback else None
    enc = StockEncoder(stock, "int8", threads=2, fallback=fork)
    try:
        np.testing.assert_array_equal(np.asarray(enc.encode(inputs[0])), expected[0])
        pid, enc.worker.timeout = enc.worker._proc.pid, 2.0
        os.kill(pid, signal.SIGSTOP)
        start = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="tokenmap"):
            if with_fallback:
                assert enc.encode(inputs[0]) == ("fork", (1, 80, 3000))
                assert "did not answer within 2 s" in enc.worker.failed
                assert sum("did not answer" in r.getMessage() for r in caplog.records) == 1
            else:
                with pytest.raises(StockWorkerError, match=r"^stock encoder worker \d+ did not answer within 2 s "
                                                            rf"\(killed it; {TIMEOUT_ENV} [^\n]*\)$"):
                    enc.encode(inputs[0])
        assert 2.0 <= time.monotonic() - start < 10
        assert _wait_until(lambda: not _alive(pid), 5)
    finally:
        enc.close()


# -- 3. parent killed -----------------------------------------------------------------------------
OWNER = """
import json, os, subprocess, sys, time
import numpy as np
from tokenmap.runtime.stock_worker import StockWorker

enc = StockWorker(sys.argv[1], "int8", threads=2)
enc.encode(np.zeros((1, 80, 3000), np.float32))
holder = None
if sys.argv[2] == "held":  # another process keeps the worker's stdin open: no end of file for it
    holder = subprocess.Popen(["sleep", "60"], pass_fds=[enc._proc.stdin.fileno()]).pid
print(json.dumps({"worker": enc._proc.pid, "blocks": [b.name for b in enc._blocks.values()], "holder": holder}),
      flush=True)
time.sleep(60)
"""


@pytest.mark.model
@pytest.mark.parametrize("pipe", ["closed", "held"])
def test_the_worker_exits_when_its_owner_is_killed(stock, shm, pipe):
    info = {}
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(stock), pipe], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT)
    try:
        info = json.loads(owner.stdout.readline())
        assert _alive(info["worker"]) and all((SHM / n).exists() for n in info["blocks"])
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        start = time.monotonic()
        assert _wait_until(lambda: not _alive(info["worker"]), 5), "the worker outlived its owner"
        assert time.monotonic() - start < 5
        assert not any((SHM / n).exists() for n in info["blocks"])
    finally:
        owner.kill()
        if info.get("holder"):
            os.kill(info["holder"], signal.SIGKILL)


# -- 4. two models, fork --------------------------------------------------------------------------
@pytest.mark.model
def test_two_models_in_one_process(stock, tiny_model_dir, inputs, expected, shm):
    base, tiny = StockWorker(stock, "int8", threads=1), StockWorker(tiny_model_dir, "int8", threads=1)
    try:
        small = np.asarray(tiny.encode(inputs[1]))
        np.testing.assert_array_equal(np.asarray(base.encode(inputs[1])), expected[1])
        assert small.shape == (1, 1500, 384) and base._proc.pid != tiny._proc.pid
        assert not {b.name for b in base._blocks.values()} & {b.name for b in tiny._blocks.values()}
        base.close()
        np.testing.assert_array_equal(np.asarray(tiny.encode(inputs[1])), small)
    finally:
        base.close()
        tiny.close()


@pytest.mark.model
def test_a_forked_child_gets_its_own_worker(stock, inputs, expected, shm):
    enc = StockWorker(stock, "int8", threads=2)
    try:
        np.testing.assert_array_equal(np.asarray(enc.encode(inputs[2])), expected[2])
        worker, names = enc._proc.pid, [b.name for b in enc._blocks.values()]
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the child
            report = {}
            try:
                got = np.asarray(enc.encode(inputs[2]))
                report = {"same": bool(np.array_equal(got, expected[2])), "worker": enc._proc.pid,
                          "blocks": [b.name for b in enc._blocks.values()]}
                enc.close()
            except BaseException as exc:
                report = {"error": repr(exc)}
            finally:
                os.write(write, json.dumps(report).encode())
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:
            report = json.loads(f.read())
        os.waitpid(child, 0)
        assert report.get("same"), report
        assert report["worker"] != worker and not set(report["blocks"]) & set(names)
        assert not any((SHM / n).exists() for n in report["blocks"])  # the child's own, closed
        assert enc._proc.pid == worker and _alive(worker) and all((SHM / n).exists() for n in names)
        np.testing.assert_array_equal(np.asarray(enc.encode(inputs[2])), expected[2])
    finally:
        enc.close()


# -- 5. threads -----------------------------------------------------------------------------------
@pytest.mark.model
def test_threads_share_one_encoder(shared, inputs, expected, shm):
    """4 threads x 4 encodes through one encoder give what one thread gets."""
    def work(i):
        return [np.asarray(shared.encode(inputs[(i + k) % 4])) for k in range(4)]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(4)))
    for i, outputs in enumerate(results):
        for k, got in enumerate(outputs):
            np.testing.assert_array_equal(got, expected[(i + k) % 4])
