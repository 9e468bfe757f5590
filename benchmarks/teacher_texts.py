"""Teacher transcripts: a bench run's greedy output as a corpus for ``build --balance --teacher``.

The map analogue of s-CDF learns from the verifier's own output on each task
(:mod:`tokenmap.balance.divergence`). This turns the greedy rows of a ``tokenmap bench``
run over audio the benchmark never measures (``bench-data/dev.jsonl``) into
that corpus::

    tokenmap bench --manifest bench-data/dev.jsonl --systems greedy --reps 1 --out results/dev
    python benchmarks/teacher_texts.py results/dev/<run>/results.json -o bench-data/teacher.jsonl
    tokenmap bench --map-mode per-task,inferred,balanced --teacher bench-data/teacher.jsonl ...

One JSON line per segment (the model's text between timestamps, as the map
drafts), with the utterance's ``id``, ``domain`` and ``lang``. An utterance
that shares a reference sentence with an ``--exclude`` manifest (default: the
measured ``full.jsonl`` and ``quick.jsonl``) is dropped: a dev dictation window
can hold a sentence that the full run speaks alone. ``--half 0`` or ``1`` keeps
one half of the utterances (by a hash of the id), to choose settings on one
half and score them on the other.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench-data"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> set[str]:
    """The lower-cased sentences of a reference text."""
    return {s.strip().lower() for s in _SENTENCE_END.split(text) if s.strip()}


def half_of(utt_id: str) -> int:
    """0 or 1, from a stable hash of the utterance id."""
    return hashlib.sha256(utt_id.encode("utf-8")).digest()[0] & 1


def segments(token_ids: list[int], timestamp_begin: int) -> list[list[int]]:
    """Text token runs between timestamp tokens (special tokens below ``timestamp_begin`` dropped
    only where they are Whisper's specials, ids >= ``timestamp_begin - 107``)."""
    specials = timestamp_begin - 107  # <|endoftext|> of the multilingual vocabulary: 50257
    out, cur = [], []
    for t in [*token_ids, timestamp_begin]:
        if t >= timestamp_begin:
            if cur:
                out.append(cur)
            cur = []
        elif t < specials:
            cur.append(t)
    return out


def teacher_lines(rows: list[dict], decode, exclude: set[str], half: int | None, timestamp_begin: int):
    """``(lines, dropped)``: a dict per segment of every greedy decoder row kept."""
    lines, dropped = [], 0
    for r in rows:
        if r["system"] != "greedy" or r["kind"] != "decoder":
            continue
        if half is not None and half_of(r["id"]) != half:
            continue
        if sentences(r.get("ref") or "") & exclude:
            dropped += 1
            continue
        for seg in segments(r["token_ids"], timestamp_begin):
            text = decode(seg).strip()
            if text:
                lines.append({"id": r["id"], "domain": r["domain"], "lang": r["lang"], "text": text})
    return lines, dropped


def main(argv=None) -> int:
    from tokenmap import resolve_model
    from tokenmap.textok import TextTokenizer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="results.json of a tokenmap bench run (its greedy rows)")
    ap.add_argument("-o", "--out", type=Path, required=True, help="teacher corpus to write (.jsonl)")
    ap.add_argument("--exclude", type=Path, nargs="*", default=[DATA / "full.jsonl", DATA / "quick.jsonl"],
                    help="manifests whose reference sentences must not be taught [full.jsonl quick.jsonl]")
    ap.add_argument("--half", type=int, choices=(0, 1), default=None, help="keep one half of the utterances")
    ap.add_argument("--model", default="base", help="tokenizer of the run's model [base]")
    ap.add_argument("--timestamp-begin", type=int, default=50364, help="<|0.00|> of the model (base: 50364)")
    args = ap.parse_args(argv)
    run = json.loads(args.results.read_text(encoding="utf-8"))
    exclude = {s for path in args.exclude if path.is_file()
               for line in path.open(encoding="utf-8") for s in sentences(json.loads(line)["text"])}
    tok = TextTokenizer.from_file(resolve_model(args.model, download=False) / "tokenizer.json")
    lines, dropped = teacher_lines(run["rows"], tok.decode, exclude, args.half, args.timestamp_begin)
    args.out.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    utts = len({x["id"] for x in lines})
    print(f"wrote {args.out}: {len(lines)} segments of {utts} utterances; {dropped} utterances dropped "
          "(a reference sentence in an excluded manifest)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
