"""Token-map benchmarks (pytest-benchmark) and a 1M-sentence build script.

    .venv/bin/python -m pytest benchmarks/bench_map.py --benchmark-enable -q     # lookup, load, 100k build, bridges
    .venv/bin/python benchmarks/bench_map.py --sentences 1000000                # 1M build: time and peak RSS
    /usr/bin/time -v .venv/bin/python benchmarks/bench_map.py --sentences 250000  # RSS vs corpus size

Peak RSS is the largest single process (main or tokenizer worker); the
suffix map sorts its windows in chunks of about 2 M positions
(:data:`tokenmap.maps.suffixmap.CHUNK_POSITIONS`), so memory grows with the
chunk and the map, not with the whole corpus at once.

Corpora come from ``corpora/generate.py`` (domain "maintenance") when it is
there, else from :func:`tokenmap_bench.synthetic.synthetic_corpus`.
"""

from __future__ import annotations

import argparse
import re
import resource
import sys
import time
from pathlib import Path

import pytest

from tokenmap import resolve_model

ROOT = Path(__file__).resolve().parents[1]

MODEL = resolve_model("base", download=False)  # assembled by `make`


def sentences(n: int, seed: int = 0):
    """``n`` generated maintenance sentences (Whisper style: capitals, digits, periods)."""
    try:
        from corpora.generate import generate
        return generate("maintenance", "en", n, seed)
    except (ImportError, ValueError):
        from tokenmap_bench import synthetic_corpus
        return synthetic_corpus(n, seed)


def write_corpus(path: Path, n: int, seed: int = 0, transform=None) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for s in sentences(n, seed):
            f.write((transform(s) if transform else s) + "\n")
    return path


_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen " \
        "seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def _words(n: int) -> str:
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        return _ONES[n // 100] + " hundred" + ("" if n % 100 == 0 else " " + _words(n % 100))
    return " ".join(_ONES[int(d)] for d in str(n))


def written_style(s: str) -> str:
    """Whisper-style sentence -> typical written transcript (lower start, no period, number words)."""
    def num(m):
        whole, frac = m.group(1), m.group(2)
        text = _words(int(whole))
        return text + (" point " + " ".join(_ONES[int(d)] for d in frac) if frac else "")
    s = re.sub(r"(?<![\w-])(\d{1,3})(?:\.(\d+))?(?![\w-])", num, s)
    s = s.rstrip(".")
    return s[:1].lower() + s[1:]


@pytest.fixture(scope="module")
def tok():
    from tokenmap.textok import TextTokenizer
    return TextTokenizer.from_file(MODEL / "tokenizer.json")


@pytest.fixture(scope="module")
def map_100k(tmp_path_factory, tok):
    from tokenmap import build_map
    d = tmp_path_factory.mktemp("bench")
    corpus = write_corpus(d / "train.txt", 100_000, seed=1)
    result = build_map([corpus], d / "m.tmap", tokenizer=tok, model=str(MODEL))
    return result


def test_size_100k(map_100k):
    assert map_100k.size_bytes <= 10 * 1024 * 1024, map_100k.size_bytes


def test_load_100k(benchmark, map_100k, tok):
    from tokenmap import load_maps
    (sm,) = benchmark(load_maps, map_100k.path, tok.fingerprint)
    assert sm.num_nodes == map_100k.contexts
    if benchmark.enabled:
        assert benchmark.stats["median"] < 0.050


def test_lookup(benchmark, map_100k, tok):
    """One decoder pass's drafting: advance the match by the emitted token, walk and cut the draft."""
    from tokenmap import load_maps
    from tokenmap.decode.follow import FollowDrafter
    (sm,) = load_maps(map_100k.path, tok.fingerprint)
    drafter = FollowDrafter(sm, timestamp_begin=None, eot=sm.bos)
    contexts = []
    for s in sentences(200, seed=99):
        ids = tok.encode(s)
        contexts += [ids[:i] for i in range(0, len(ids))]
    state = {"i": 0}

    def one():
        state["i"] = (state["i"] + 1) % len(contexts)
        return drafter.draft(contexts[state["i"]], 24)
    benchmark(one)
    if benchmark.enabled:
        assert benchmark.stats["mean"] < 200e-6


def test_build_100k(benchmark, tmp_path, tok):
    from tokenmap import build_map
    corpus = write_corpus(tmp_path / "train.txt", 100_000, seed=2)
    out = tmp_path / "b.tmap"
    result = benchmark.pedantic(lambda: build_map([corpus], out, tokenizer=tok, force=True), rounds=1, iterations=1)
    print(f"\n100k build: {result.seconds:.1f} s, {result.size_bytes / 1e6:.2f} MB, {result.contexts} contexts")


def test_style_bridge_acceptance(tmp_path, tok):
    """What each bridge buys: maps from written transcripts, replayed on Whisper-style text."""
    from tokenmap import load_maps
    from tokenmap.build.builder import BuildOptions, build_map, self_test
    from tokenmap.build.style import StyleOptions
    from tokenmap.decode.cost import DEFAULT
    corpus = write_corpus(tmp_path / "written.txt", 20_000, seed=3, transform=written_style)
    held_out = [tok.encode(s) for s in sentences(500, seed=4)]
    rows = []
    variants = [("none", StyleOptions(False, False, False)), ("capitalize", StyleOptions(True, False, False)),
                ("+period", StyleOptions(True, True, False)), ("+digits (all)", StyleOptions(True, True, True))]
    for name, style in variants:
        out = tmp_path / f"{name.strip('+() ')}.tmap"
        build_map([corpus], out, tokenizer=tok, options=BuildOptions(style=style, jobs=1))
        sim = self_test(load_maps(out)[0], held_out, DEFAULT)
        rows.append((name, sim["acceptance"], sim["tokens_per_pass"]))
    print("\nbridge           acceptance  tokens/pass")
    for name, acc, tpp in rows:
        print(f"{name:16s} {acc:10.1%} {tpp:11.2f}")
    assert rows[-1][2] >= rows[0][2]


def main(argv=None) -> int:
    """Build a map from N generated sentences; print time, size and peak RSS (self + workers)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=1_000_000)
    parser.add_argument("--workdir", default="/tmp/tokenmap-bench")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    from tokenmap.build.builder import BuildOptions, build_map
    from tokenmap.textok import TextTokenizer
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / f"train-{args.sentences}.txt"
    if not corpus.exists():
        write_corpus(corpus, args.sentences, seed=5)
    tok = TextTokenizer.from_file(MODEL / "tokenizer.json")
    t0 = time.perf_counter()
    result = build_map([corpus], work / "bench.tmap", tokenizer=tok, force=True,
                       options=BuildOptions(jobs=args.jobs))
    wall = time.perf_counter() - t0
    rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
              resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    print(f"{args.sentences} sentences, {result.tokens} tokens: built in {wall:.1f} s, "
          f"peak RSS {rss / 1024:.0f} MiB (largest process), {result.size_bytes / 1e6:.2f} MB, "
          f"{result.contexts} contexts, {result.with_continuation} with a continuation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
