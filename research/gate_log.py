"""The window gate's decision before every window of one process transcribing a set's files in turn.

    .venv/bin/python research/gate_log.py --stride 6                      # each prompt's own map
    .venv/bin/python research/gate_log.py --stride 3 --map-of maintenance-en

Prints per file its tokens, passes, drafts and windows sent to plain ``generate``, and what the gate
weighed: the account (ms a window), the account at the clock's ratios, and the two ratios. With an
earlier tokenmap first on ``PYTHONPATH`` (git a1d6054), whose clock counted ms a token, it prints those.
"""
import argparse
import json
from pathlib import Path

import tokenmap
from tokenmap import load_maps, resolve_model
from tokenmap.decode import gate as window_gate

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", default="telephony")
    ap.add_argument("--stride", type=int, default=6)
    ap.add_argument("--map-of", default=None, help="one DOMAIN-LANG map for every file (a wrong domain)")
    ap.add_argument("--context", default="full")
    args = ap.parse_args()
    utts = [json.loads(line) for line in open(ROOT / "bench-data/e2e-all.jsonl")]
    utts = [u for u in utts if u["set"] == args.set][:: args.stride]
    model = tokenmap.WhisperModel(str(resolve_model("base", download=False)), compute_type="int8", cpu_threads=2,
                                  session_cache=False, malloc_policy=True)  # as the CLI
    seen: list = []
    decide = window_gate.WindowGate.use_speculation

    def logged(gate):
        clock = getattr(gate, "time_ratio", getattr(gate, "ms_per_token", None))
        ratios = [clock(kind) for kind in ("loop", "plain")]
        seen.append((decide(gate), gate.window_saving_ms, getattr(gate, "saving_ms", None), ratios))
        return seen[-1][0]
    window_gate.WindowGate.use_speculation = logged
    maps = {}
    for u in utts:
        key = args.map_of or f"{u['domain']}-{u['lang']}"
        maps.setdefault(key, load_maps(str(ROOT / "results/e2e/maps" / f"{key}.tmap"))[0])
        model.token_map = maps[key]
        segments, _ = model.transcribe(str(ROOT / "bench-data" / u["audio"]), language=u["lang"],
                                       vad_filter=False, audio_context=args.context)
        list(segments)
        st = model.last_stats()
        opened, account, weighed, ratios = seen[-1]
        fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
        print(f"{u['id'][-28:]:28s} {key:15s} tokens {st['tokens']:3d} passes {st['passes']:3d} kept "
              f"{st['accepted']:3d}/{st['drafted']:3d} plain {st['plain_windows']} | open {opened!s:5s} account "
              f"{fmt(account)} weighed {fmt(weighed)} clock: loop {fmt(ratios[0])} plain {fmt(ratios[1])}")
        seen.clear()


if __name__ == "__main__":
    main()
