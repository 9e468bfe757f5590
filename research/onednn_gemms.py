"""Which GEMMs make a decoder pass cost what it costs? oneDNN's own timings, by shape.

    python research/onednn_gemms.py [--tokens 1,2,5] [--compute-types float32,int8] [--calls 10]

For each compute type and pass length, a child process (``ONEDNN_VERBOSE=1``) prefills one
real window, makes 20 warm-up calls of ``forward_step`` (1 token) or ``forward_batch``, then
``--calls`` timed ones; the parent sums oneDNN's ``exec`` lines of the timed calls by GEMM
shape (K×N) and prints ms per call. Verbose logging slows every call a little; compare
shapes and lengths, not absolute times.
"""
import argparse
import collections
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
MARK = "-- timed calls --"


def child(compute_type: str, n: int, calls: int) -> None:
    import ctranslate2

    import tokenmap  # noqa: F401  (first: the thread wait policy)
    from tokenmap import resolve_model
    from tokenmap.decode.special import SpecialTokens
    from tokenmap_bench import features

    model_dir = resolve_model("base", download=False)
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type=compute_type, intra_threads=2)
    special = SpecialTokens.from_model_dir(str(model_dir))
    enc = model.encode(features(SimpleNamespace(audio=str(ROOT / "tests/data/en-basic-pbx-ivr-main.flac")))[0])
    state, _ = model.prefill(enc, [special.sot, special.sot + 1, special.sot + 101])
    base = state.current_step
    text = [5884, 5883, 428, 5764, 1230, 13, 1692, 3651, 11, 8359, 1045, 13, 1692, 3651, 11, 8359]

    def call():
        model.forward_step(state, text[0]) if n == 1 else model.forward_batch(state, text[:n])
        state.truncate_to_step(base)

    for _ in range(20):
        call()
    print(MARK, flush=True)
    for _ in range(calls):
        call()
    sys.stdout.flush()


def measure(compute_type: str, n: int, calls: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", f"{compute_type},{n},{calls}"], capture_output=True,
                         text=True, env=dict(os.environ, ONEDNN_VERBOSE="1"), check=True).stdout
    sums = collections.defaultdict(float)
    for line in out.split(MARK, 1)[1].splitlines():
        if line.startswith("onednn_verbose,") and ",exec," in line:
            fields = line.split(",")
            k_n = ":".join(fields[-2].split(":")[1:])  # MxK:KxN -> KxN
            sums[k_n] += float(fields[-1]) / calls
    return sums


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="1,2,5")
    ap.add_argument("--compute-types", default="float32,int8")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--child", default=None)
    args = ap.parse_args()
    if args.child:
        ct, n, calls = args.child.split(",")
        return child(ct, int(n), int(calls))
    for ct in args.compute_types.split(","):
        for n in (int(t) for t in args.tokens.split(",")):
            sums = measure(ct, n, args.calls)
            top = sorted(sums.items(), key=lambda kv: -kv[1])[:7]
            print(f"{ct} {n} token(s): total {sum(sums.values()):.2f} ms; "
                  + ", ".join(f"{shape} {ms:.2f}" for shape, ms in top), flush=True)


if __name__ == "__main__":
    main()
