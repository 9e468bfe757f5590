"""The stock runner's --serve protocol (run here on the fork's faster-whisper, same API)."""

import io
import json
from pathlib import Path

import pytest

from tokenmap.decode.rules import GREEDY_KW
from tokenmap_bench import stock_runner
from tokenmap_bench.harness import BenchOptions
from tokenmap_bench.stock import start_server

DATA = Path(__file__).parent / "data"


def test_missing_stock_environment_is_skipped_with_the_fix(tmp_path):
    server, reason = start_server(BenchOptions(stock_python=str(tmp_path / "nope" / "python")), "base")
    assert server is None and "make bench-stock" in reason


@pytest.mark.model
def test_serve_answers_each_request_on_its_own_line(base_model_dir):
    audio = sorted(DATA.glob("*.flac"))[0]
    prompt = [50258, 50259, 50359]  # <|startoftranscript|><|en|><|transcribe|>
    requests = [
        {"op": "load", "model_dir": str(base_model_dir), "compute_type": "int8", "threads": 2,
         "timestamps": True, "generate_kw": GREEDY_KW},
        {"op": "prepare", "utt": {"id": "u", "audio": str(audio), "lang": "en", "prompt": prompt}},
        {"op": "stock"}, {"op": "stock-e2e"}, {"op": "nonsense"}, {"op": "done"},
        {"op": "stock"},  # after "done": never read
    ]
    out = io.StringIO()
    stock_runner.serve(io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(answers) == 6
    load, prepare, stock, e2e, bad, done = answers
    assert load == {"ok": True} and prepare["encode_s"] > 0
    assert stock["seconds"] > 0 and stock["token_ids"] and all(isinstance(t, int) for t in stock["token_ids"])
    assert e2e["seconds"] > 0 and e2e["text"].strip()
    assert "unknown op" in bad["error"]
    assert done["peak_rss_mb"] > 0 and set(done["versions"]) == {"ctranslate2", "faster_whisper"}


@pytest.mark.model
def test_bench_features_are_the_window_transcribe_encodes(fw_model):
    """The bench decodes what a user's ``transcribe()`` decodes: the same first window, frame for frame."""
    from types import SimpleNamespace

    import numpy as np

    from tokenmap_bench import features

    audio = DATA / "en-agent-pass.flac"
    seen = []
    engine = fw_model.model

    class Spy:
        def encode(self, mel, *args, **kwargs):
            seen.append(np.asarray(mel).copy())
            return engine.encode(mel, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(engine, name)

    fw_model.model = Spy()
    try:
        segments, _ = fw_model.transcribe(str(audio), language="en", beam_size=1, vad_filter=False)
        list(segments)
    finally:
        fw_model.model = engine
    bench = np.asarray(features(SimpleNamespace(audio=str(audio)))[0])
    assert np.array_equal(bench, seen[0].reshape(bench.shape))
    ours = stock_runner._features(str(audio), 80)
    assert np.array_equal(np.asarray(ours), bench)
