"""Launch :mod:`tokenmap.bench.stock_runner` in the stock virtual environment.

The stock environment (``.venv-stock``: faster-whisper 1.2.1 on stock
CTranslate2 4.8.5) is created by ``make bench-stock``. When it is missing
the ``stock`` system is skipped with a warning naming that command.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

from tokenmap.bench.systems import GENERATE_KW

log = logging.getLogger("tokenmap")

RUNNER = Path(__file__).with_name("stock_runner.py")
STOCK_HINT = ("no stock environment at {path}: run `make bench-stock` (python3 -m venv .venv-stock && "
              ".venv-stock/bin/pip install faster-whisper==1.2.1 ctranslate2==4.8.5)")


def stock_python(path: str) -> Path | None:
    exe = Path(path)
    return exe if exe.is_file() else None


def run_stock(utterances, options, state, greedy_tokens: dict) -> dict:
    """Rows for ``stock`` and ``stock-e2e`` (same fields as the main harness); empty when unavailable."""
    exe = stock_python(options.stock_python)
    if exe is None:
        log.warning(STOCK_HINT.format(path=options.stock_python))
        return {"rows": [], "skipped": STOCK_HINT.format(path=options.stock_python)}
    from tokenmap.models import resolve_model

    by_id = {u.id: u for u in utterances}
    e2e_reps = options.e2e_reps if "e2e" in options.systems else 0
    job = {"model_dir": str(resolve_model(options.model)), "compute_type": options.compute_type,
           "threads": options.threads, "reps": options.reps, "e2e_reps": e2e_reps,
           "timestamps": options.timestamps, "generate_kw": GENERATE_KW,
           "utterances": [{"id": u.id, "audio": u.audio, "lang": u.lang,
                           "prompt": state.eng.prompt(u.lang, options.timestamps)} for u in utterances]}
    with tempfile.TemporaryDirectory(prefix="tokenmap-stock-") as tmp:
        job_path, out_path = Path(tmp) / "job.json", Path(tmp) / "out.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        proc = subprocess.run([str(exe), str(RUNNER), str(job_path), str(out_path)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0 or not out_path.is_file():
            tail = (proc.stderr or "").strip().splitlines()[-1:] or ["no output"]
            log.warning("stock runner failed (exit %s): %s", proc.returncode, tail[0])
            return {"rows": [], "skipped": f"stock runner failed: {tail[0]}"}
        out = json.loads(out_path.read_text(encoding="utf-8"))
    for row in out["rows"]:
        utt = by_id[row["id"]]
        row.update(kind="e2e" if row["system"].endswith("-e2e") else "decoder", domain=utt.domain,
                   lang=utt.lang, voice=utt.voice, set=utt.set, task=utt.task, ref=utt.text,
                   audio_s=utt.duration or 0.0)
        if row["system"] == "stock":
            ids = row.pop("token_ids")
            row.update(text=state.text(ids), tokens=len(ids), identical=ids == greedy_tokens.get(row["id"]))
    return out


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run through `tokenmap bench --systems stock`")
