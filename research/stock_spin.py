"""How much of tokenmap's end-to-end gain would a stock faster-whisper user get from the thread wait policy alone?

    python research/stock_spin.py [--manifest bench-data/quick.jsonl] [--reps 3] [--limit N] [--policy threads]

Two long-lived stock runners (faster-whisper 1.2.1 on stock CTranslate2 4.8.5, ``.venv-stock``,
the bench's ``stock_runner``): one with the OpenMP defaults, one with the policy
:mod:`tokenmap.runtime.threads` sets (``OMP_WAIT_POLICY=ACTIVE``, ``GOMP_SPINCOUNT=100000``).
Per utterance both transcribe the same file (``stock-e2e``: greedy, timestamps on) and
decode the same encoder output (``stock``: ``generate``), alternating, ``--reps`` times;
medians per utterance, then sums per regime. Prints the speed of the policy runner
relative to the default one and whether the texts are equal. ``--policy malloc`` gives the
second runner the heap policy of :mod:`tokenmap.runtime.memory` instead (``MALLOC_ARENA_MAX=1`` ...,
as environment variables), ``both`` the two together.
"""
import argparse
import collections
import statistics
from pathlib import Path
from types import SimpleNamespace

from tokenizers import Tokenizer

from tokenmap import resolve_model
from tokenmap.runtime import memory, threads
from tokenmap_bench import StockServer, load_manifest, regime_of

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", default=str(ROOT / "bench-data/quick.jsonl"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--policy", choices=("threads", "malloc", "both"), default="threads",
                    help="what the second runner sets: the thread wait policy, the heap policy, or both")
    args = ap.parse_args()
    utts = load_manifest(args.manifest, args.limit)
    options = SimpleNamespace(compute_type="int8", threads=2, timestamps=True)
    model_dir = str(resolve_model("base", download=False))
    exe = ROOT / ".venv-stock/bin/python"
    tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    default_env = {k: v for k, v in threads.without_policy(state="applied").items() if k not in memory.ENVIRONMENT}
    policy = {"threads": threads.POLICY, "malloc": memory.ENVIRONMENT,
              "both": {**threads.POLICY, **memory.ENVIRONMENT}}[args.policy]
    servers = {"default": StockServer(exe, options, model_dir, env=default_env),
               "policy": StockServer(exe, options, model_dir, env=dict(default_env, **policy))}
    sums = collections.defaultdict(lambda: collections.defaultdict(float))
    same = collections.Counter()
    for i, utt in enumerate(utts):
        prompt = [tok.token_to_id(t) for t in ("<|startoftranscript|>", f"<|{utt.lang}|>", "<|transcribe|>")]
        times = {name: collections.defaultdict(list) for name in servers}
        texts = {}
        for name, server in servers.items():
            server.prepare(utt, prompt)
        for rep in range(args.reps):
            order = list(servers.items()) if rep % 2 == 0 else list(servers.items())[::-1]
            for name, server in order:
                for op in ("stock-e2e", "stock"):
                    answer = server.run(op)
                    times[name][op].append(answer["seconds"])
                    if op == "stock-e2e":
                        texts[name] = answer["text"]
        regime = regime_of(utt.domain)
        for name in servers:
            for op, values in times[name].items():
                for key in (regime, "all"):
                    sums[key][(name, op)] += statistics.median(values)
        same[texts["default"] == texts["policy"]] += 1
        print(f"{i + 1}/{len(utts)} {utt.id}: e2e {statistics.median(times['default']['stock-e2e']):.3f} s "
              f"-> {statistics.median(times['policy']['stock-e2e']):.3f} s", flush=True)
    for server in servers.values():
        server.close()
    print(f"{'regime':<11} {'e2e default s':>13} {'e2e policy s':>12} {'speed-up':>8} "
          f"{'decode default s':>16} {'decode policy s':>15} {'speed-up':>8}")
    for key, row in sums.items():
        e2e = row[("default", "stock-e2e")], row[("policy", "stock-e2e")]
        dec = row[("default", "stock")], row[("policy", "stock")]
        print(f"{key:<11} {e2e[0]:>13.2f} {e2e[1]:>12.2f} {e2e[0] / e2e[1]:>8.3f} "
              f"{dec[0]:>16.2f} {dec[1]:>15.2f} {dec[0] / dec[1]:>8.3f}")
    print(f"texts equal: {same[True]} of {sum(same.values())}")


if __name__ == "__main__":
    main()
