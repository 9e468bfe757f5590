"""What do tokenmap's import-time process settings do to a host program's own allocations?

Importing ``tokenmap`` calls glibc's ``mallopt`` (one arena, no ``mmap`` for large blocks, trim
threshold 512 MB, top pad 64 MB: :mod:`tokenmap.runtime.memory`) and sets ``OMP_WAIT_POLICY=ACTIVE``
``GOMP_SPINCOUNT=100000`` (:mod:`tokenmap.runtime.threads`) for the whole process. A host that
embeds tokenmap gets them for its own work too. This runs a multi-threaded allocation
workload, unrelated to Whisper, in fresh processes:

* ``default``: the workload alone;
* ``tokenmap``: ``import tokenmap`` first;
* ``tokenmap-malloc-off``: ``import tokenmap`` first with ``TOKENMAP_MALLOC=default``
  (only the thread wait policy, which this workload does not exercise: its BLAS is OpenBLAS's
  pthreads, not OpenMP).

The workload: ``--threads`` Python threads, each for ``--iters`` iterations builds and frees
lists of floats (100-100,000 items), numpy arrays of 8 KB-16 MB (filled and summed; a ring
of 8 per thread stays alive, so lifetimes overlap) and, one time in ten, a 8-32 MB array
freed at once; seeded, so every process does the same work. With ``--burst-mb``, each thread
first holds that much at once and frees it (a transient peak, as faster-whisper's features of
a long file make). The variants run interleaved, ``--reps`` times each. Reported per variant
(medians): wall time of the workload, peak RSS (VmHWM), steady RSS (read while every thread
still holds its ring, after the burst), RSS at the end (everything freed, ``gc.collect()``),
CPU seconds and minor page faults.

    python research/host_alloc.py --reps 5 --iters 1000
    python research/host_alloc.py --reps 5 --iters 1000 --burst-mb 256
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {
    "default": (False, {}),
    "tokenmap": (True, {}),
    "tokenmap-malloc-off": (True, {"TOKENMAP_MALLOC": "default"}),
}


def _status(field: str) -> float:
    """A ``/proc/self/status`` field (VmRSS, VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def work(seed: int, iters: int, held=None, burst_mb: int = 0) -> float:
    """One thread's share of the workload; returns a checksum so nothing is optimised away.

    ``burst_mb``: first hold that much in 32 MB arrays at once, then free it (a transient peak, as
    a whole-file feature extraction makes). ``held``: a barrier waited on at the end while this
    thread still holds its ring of live objects (so the main thread can read the steady RSS),
    then again before freeing them.
    """
    import numpy as np

    rng = random.Random(seed)
    burst = [np.full(4 * 2 ** 20, 1.0) for _ in range(burst_mb // 32)]
    total = float(sum(b[-1] for b in burst))
    del burst
    live = []
    for _ in range(iters):
        kind = rng.random()
        if kind < 0.45:
            n = int(10 ** rng.uniform(2, 5))
            obj = [float(j) for j in range(n)]
            total += obj[-1]
        elif kind < 0.9:
            obj = np.full(int(10 ** rng.uniform(3, 6.3)), 1.5)
            total += float(obj.sum())
        else:
            big = np.ones(int(rng.uniform(1e6, 4e6)))
            big *= 2.0
            total += float(big[-1])
            del big
            continue
        live.append(obj)
        if len(live) > 8:
            live.pop(rng.randrange(len(live)))
    if held is not None:
        held.wait()  # the main thread reads the steady RSS now
        held.wait()
    live.clear()
    return total


def child(use_tokenmap: bool, threads: int, iters: int, burst_mb: int) -> dict:
    """The workload in this process (after ``import tokenmap`` when asked); its measurements."""
    if use_tokenmap:
        import tokenmap  # noqa: F401
        from tokenmap.runtime import memory
        from tokenmap.runtime import threads as waits

        policy = {"malloc": memory.status, "thread wait": waits.status}
    else:
        policy = {}
    import gc
    import resource
    import threading
    import time

    import numpy as np  # noqa: F401  (imported before the clock starts)

    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    held = threading.Barrier(threads + 1)
    pool = [threading.Thread(target=work, args=(seed, iters, held, burst_mb)) for seed in range(threads)]
    for t in pool:
        t.start()
    held.wait()
    wall = time.perf_counter() - started
    steady = _status("VmRSS")
    held.wait()
    for t in pool:
        t.join()
    gc.collect()
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {"wall": wall, "peak_mb": _status("VmHWM"), "steady_mb": steady, "final_mb": _status("VmRSS"),
            "policy": policy, "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            "minflt": after.ru_minflt - before.ru_minflt}


def run(variant: str, threads: int, iters: int, burst_mb: int) -> dict:
    use, extra = VARIANTS[variant]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "TOKENMAP_", "OMP_", "GOMP_"))}
    env.update(extra, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, __file__, "--child", str(int(use)), "--threads", str(threads), "--iters", str(iters),
           "--burst-mb", str(burst_mb)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--iters", type=int, default=400)
    parser.add_argument("--burst-mb", type=int, default=0,
                        help="MB each thread holds at once before the mix, then frees (a multiple of 32) [0]")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child == "1", args.threads, args.iters, args.burst_mb)))
        return
    names = args.variants.split(",")
    results = {name: [] for name in names}
    for rep in range(args.reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            results[name].append(run(name, args.threads, args.iters, args.burst_mb))
            r = results[name][-1]
            print(f"rep {rep} {name}: {r['wall']:.2f} s, peak {r['peak_mb']:.0f} MB, steady {r['steady_mb']:.0f} MB, "
                  f"final {r['final_mb']:.0f} MB, "
                  f"{r['policy']}", file=sys.stderr)
    print("| variant | runs | wall (s) | peak RSS (MB) | steady RSS (MB) | final RSS (MB) | CPU (s) | minor faults |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in names:
        rs = results[name]
        med = {k: statistics.median(r[k] for r in rs)
               for k in ("wall", "peak_mb", "steady_mb", "final_mb", "cpu", "minflt")}
        print(f"| {name} | {len(rs)} | {med['wall']:.2f} | {med['peak_mb']:.0f} | {med['steady_mb']:.0f} | "
              f"{med['final_mb']:.0f} | {med['cpu']:.2f} | {med['minflt']:,.0f} |")


if __name__ == "__main__":
    main()
