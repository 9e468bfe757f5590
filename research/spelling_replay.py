"""Replay: a map's drafts with and without following words the model spells in other pieces than the map's.

    python research/spelling_replay.py --manifest bench-data/wer-150/manifest.jsonl --set asterisk-it \\
        --prompt-list it=/usr/share/doc/asterisk-core-sounds-it/core-sounds-it.txt.gz
    python research/spelling_replay.py --set telephony --context auto      # results/e2e/maps/DOMAIN-LANG.tmap

Each file is transcribed once without a map (plain greedy ``generate``, tokenmap's default configuration,
``--context``), recording every window's prompt and tokens; each window is then replayed
(:func:`tokenmap.decode.speculative.replay_window`, on this machine's calibrated curve) through the file's map
drafter twice: with the vocabulary's spelling (:class:`tokenmap.decode.follow.WordSync`, the default) and matching
token ids only. A file starts with a fresh drafter, as in a new process. Prints, per split of the
manifest, passes, tokens a pass, drafted and kept tokens, and the decoder speed-up the calibrated cost
curve gives those passes.
"""
import argparse
import dataclasses
import gzip
import json
from pathlib import Path

import tokenmap
from tokenmap import build_map, load_maps, resolve_model
from tokenmap.decode.cost import load_cost_model
from tokenmap.decode.speculative import ReplayStats, replay_window

ROOT = Path(__file__).resolve().parents[1]


def prompt_list(path: str) -> list[str]:
    """The prompts' texts of an Asterisk prompt list (``name: text`` lines, ``;`` comments; gzip or not)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8-sig") as f:
        lines = [line.split(":", 1)[1].strip() for line in f if ":" in line and not line.startswith(";")]
    return [line for line in lines if line]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest", default=str(ROOT / "bench-data/e2e-all.jsonl"))
    ap.add_argument("--set", default="telephony")
    ap.add_argument("--maps", default=str(ROOT / "results/e2e/maps"), help="folder of DOMAIN-LANG.tmap")
    ap.add_argument("--prompt-list", default=None, metavar="LANG=FILE", help="build the map of this prompt list")
    ap.add_argument("--context", default="auto")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.manifest)]
    rows = [r for r in rows if r["set"] == args.set]
    model_dir = resolve_model("base", download=False)
    model = tokenmap.WhisperModel(str(model_dir), compute_type="int8", cpu_threads=2, session_cache=False)
    sm, cost = model.model, load_cost_model(model_dir)
    variants = (("spelling", sm.special), ("ids", dataclasses.replace(sm.special, spelling=None)))
    windows: list = []
    plain = sm.plain.generate
    sm.plain.generate = lambda features, prompts, **kw: _record(plain(features, prompts, **kw), prompts, windows)
    lists = dict([args.prompt_list.split("=", 1)]) if args.prompt_list else {}
    maps = {}
    totals = {(split, name): ReplayStats() for split in ("all", "dev", "test") for name in ("spelling", "ids")}
    counts = dict.fromkeys(totals, 0)
    for r in rows:
        key = f"prompt-list-{r['lang']}" if r["lang"] in lists else f"{r['domain']}-{r['lang']}"
        if key not in maps:
            maps[key] = load_maps(str(_map_path(key, r["lang"], lists, Path(args.maps))))[0]
        windows.clear()
        segments, _ = model.transcribe(str(Path(args.manifest).parent / r["audio"]), language=r["lang"], beam_size=1,
                                       temperature=0.0, vad_filter=False, audio_context=args.context)
        list(segments)  # decoding happens as the segments are read
        seconds = min(30.0, r["duration"]) if len(windows) == 1 else None
        for name, special in variants:
            sm.drafting.token_map, sm.drafting.special = maps[key], special
            drafter = sm.drafting.make_drafter(seconds=seconds)  # one a file: what it learns stays in the file
            for prompt, truth in windows:
                stats = _replay(drafter, prompt, truth, special, cost)
                for split in {"all", r.get("split", "all")}:
                    totals[(split, name)].add(stats)
                    counts[(split, name)] += 1
        sm.drafting.token_map, sm.drafting.special = None, variants[0][1]
    for (split, name), t in totals.items():
        if t.passes:
            d = t.as_dict(cost.prefill_ms, counts[(split, name)])
            print(f"{split:5s} {name:9s} windows {counts[(split, name)]} tokens {t.tokens} passes {t.passes} "
                  f"({d['tokens_per_pass']:.3f} a pass) kept {t.accepted}/{t.drafted}, replayed S {d['speedup']:.3f}")


def _replay(drafter, prompt: list, truth: list, special, cost) -> ReplayStats:
    """One window as the loop would decode it (the first pass feeds the prompt after SOT; the previous
    text, before SOT, is the drafter's history)."""
    sot = special.sot_index(prompt)
    return replay_window(drafter, truth, special.eot, prompt[-1] != special.no_timestamps, special.timestamp_begin,
                         cost, feed=max(1, len(prompt) - sot - 1), history=prompt[1:sot])


def _record(result, prompts, windows: list):
    windows.append((list(prompts[0]), list(result[0].sequences_ids[0])))
    return result


def _map_path(key: str, lang: str, lists: dict, folder: Path) -> Path:
    if lang not in lists:
        return folder / f"{key}.tmap"
    path = Path("/tmp/spelling-replay") / f"{key}.tmap"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        text = path.with_suffix(".txt")
        text.write_text("\n".join(prompt_list(lists[lang])) + "\n", encoding="utf-8")
        build_map([text], path, model="base", force=True)
    return path


if __name__ == "__main__":
    main()
