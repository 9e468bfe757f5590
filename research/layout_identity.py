"""Did a change of the code's layout change what it produces? Compares two output folders.

Each folder holds what one checkout produced from the same inputs: token maps
(``*.tmap``, from ``tokenmap build``), transcripts (``*.json``, from
``tokenmap transcribe -f json``) and benchmark runs (``results.json``, from
``tokenmap bench``), in the same relative places.  Maps must be identical apart
from their creation time: the same header (without ``created`` and the data
offset that follows from the header's length) and the same bytes in every
array.  Transcripts must have the same segments and drafting counters (wall
times aside), benchmark runs the same tokens per utterance and system.  A map
records the absolute paths of its corpus files: when the two checkouts lie in
different folders, ``--roots OLD NEW`` reads OLD as NEW in the first folder's headers.

    python research/layout_identity.py /tmp/layout-before /tmp/layout-after --roots /src/old /src/new

Showed (c1f5210, the package rearrangement into decode/, maps/, build/,
balance/, stream/): 9 maps (plain, taught, balanced sections and merged, the
bench's per-task maps) identical apart from their creation time, 18
transcripts with the same segments and drafting counters, and the 12 rows of a
6-utterance bench run (greedy and tokenmap) with the same tokens.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

PREFIX = struct.Struct("<8sII")  # magic, format version, header length
IGNORED_HEADER = {"created", "data_start"}
TIMING = {"wall_seconds", "rtf", "decoder_seconds", "tokens_per_second", "seconds", "encode_seconds"}


def map_parts(path: Path, roots: tuple[str, str] = ("", "")) -> tuple[dict, dict[str, bytes], int]:
    """``(header without the ignored fields, {array name: bytes}, format version)`` of a map file;
    ``roots``: a folder name to read as another in the header."""
    data = path.read_bytes()
    _, version, length = PREFIX.unpack_from(data, 0)
    text = data[PREFIX.size:PREFIX.size + length].decode("utf-8")
    header = json.loads(text.replace(roots[0], roots[1]) if roots[0] else text)
    start = header["data_start"]
    arrays = {}
    for spec in header["arrays"]:
        count = 1
        for n in spec["shape"]:
            count *= n
        size = count * int(spec["dtype"][-1])
        arrays[spec["name"]] = data[start + spec["offset"]: start + spec["offset"] + size]
    return {k: v for k, v in header.items() if k not in IGNORED_HEADER}, arrays, version


def transcript_parts(path: Path) -> dict:
    """A transcript without its wall-clock figures."""
    t = json.loads(path.read_text(encoding="utf-8"))
    t["stats"] = {k: v for k, v in t.get("stats", {}).items() if k not in TIMING and "seconds" not in k}
    return t


def bench_parts(path: Path) -> dict:
    """``{(utterance, system, kind): (token ids, text)}`` of a bench run."""
    rows = json.loads(path.read_text(encoding="utf-8"))["rows"]
    return {(r["id"], r["system"], r["kind"]): (r.get("token_ids"), r.get("text")) for r in rows}


def compare(before: Path, after: Path, roots: tuple[str, str] = ("", "")) -> list[str]:
    """One line per file compared: ``same`` or what differs."""
    lines = []
    for old in sorted(before.rglob("*")):
        rel = old.relative_to(before)
        new = after / rel
        if old.suffix == ".tmap":
            same = new.is_file() and map_parts(old, roots) == map_parts(new)
        elif old.suffix == ".json" and old.name != "results.json" and old.parent.name != "maps":
            same = new.is_file() and transcript_parts(old) == transcript_parts(new)
        elif old.name == "results.json":  # a bench run: its folder is named by its start time
            runs = sorted(after.glob(str(rel.parent.parent / "*" / "results.json")))
            same = bool(runs) and bench_parts(old) == bench_parts(runs[-1])
            rel = rel.parent.parent / "<run>" / rel.name
        else:
            continue
        lines.append(f"{'same     ' if same else 'DIFFERENT'} {rel}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path, help="the first checkout's outputs")
    ap.add_argument("after", type=Path, help="the second checkout's outputs")
    ap.add_argument("--roots", nargs=2, default=("", ""), metavar=("OLD", "NEW"),
                    help="read OLD as NEW in the first folder's map headers (checkouts in different folders)")
    args = ap.parse_args(argv)
    roots = tuple(args.roots)
    lines = compare(args.before, args.after, roots)
    print("\n".join(lines))
    differ = sum(line.startswith("DIFFERENT") for line in lines)
    print(f"{len(lines)} files compared, {differ} different")
    return 1 if differ or not lines else 0


if __name__ == "__main__":
    sys.exit(main())
