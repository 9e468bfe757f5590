"""Bad input as a new user gives it: one-line errors, no tracebacks, nothing destroyed.

Covers `stream`'s errors (the same as `transcribe`'s), the single ``Error:``
prefix, build outputs that would overwrite an input, corpora without a usable
n-gram, Ctrl-C during a build, reproducible builds, and audio arrays
faster-whisper would misread.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tokenmap.build.builder import BuildError, BuildOptions, build_map
from tokenmap.maps.mapfile import load_maps, write_map
from tokenmap.models import resolve_model
from tokenmap_bench.synthetic import synthetic_corpus
from tokenmap_cli.main import cli

MODEL = str(resolve_model("base", download=False))  # assembled by `make`


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def corpus(make_corpus):
    return make_corpus(600, 7)


# -- stream's errors are transcribe's -----------------------------------------------------------
@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory, corpus):
    """``{case: extra arguments}``: missing, empty, corrupt and foreign maps, and an unknown model."""
    tmp = tmp_path_factory.mktemp("bad")
    (tmp / "empty.tmap").write_bytes(b"")
    assert run("build", corpus, "--model", MODEL, "-o", tmp / "good.tmap", "--jobs", 1).exit_code == 0
    raw = bytearray((tmp / "good.tmap").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (tmp / "corrupt.tmap").write_bytes(bytes(raw))
    assert run("build", corpus, "--model", "tiny.en", "-o", tmp / "tiny.tmap", "--jobs", 1).exit_code == 0
    return {"missing map": ["--map", tmp / "missing.tmap"], "empty map": ["--map", tmp / "empty.tmap"],
            "corrupt map": ["--map", tmp / "corrupt.tmap"], "another tokenizer's map": ["--map", tmp / "tiny.tmap"],
            "unknown model": ["--model", "no-such-model"]}


@pytest.mark.model
@pytest.mark.parametrize("case", ["missing map", "empty map", "corrupt map", "another tokenizer's map",
                                  "unknown model"])
def test_stream_errors_are_transcribes(bad_inputs, data_dir, case):
    audio = data_dir / "en-agent-pass.flac"
    transcribe, stream = (run(cmd, "-l", "en", "--threads", 2, *bad_inputs[case], audio) for cmd in ("transcribe",
                                                                                                     "stream"))
    assert (stream.exit_code, stream.stderr) == (transcribe.exit_code, transcribe.stderr), stream.exception
    assert stream.exit_code == 2 and len(stream.stderr.splitlines()) == 1 and stream.stderr.startswith("Error: ")


# -- one error prefix ----------------------------------------------------------------------------
@pytest.mark.model
def test_every_command_reports_errors_the_same_way(tmp_path, corpus, data_dir):
    (tmp_path / "junk.tmap").write_bytes(b"not a map")
    failures = {
        "build": run("build", tmp_path / "missing.txt", "-o", tmp_path / "m.tmap"),
        "build --model": run("build", corpus, "--model", tmp_path / "nomodel", "-o", tmp_path / "m.tmap"),
        "inspect": run("inspect", tmp_path / "junk.tmap"),
        "transcribe": run("transcribe", "--threads", 2, tmp_path / "missing.wav"),
        "stream": run("stream", "--threads", 2, tmp_path / "missing.wav"),
        "calibrate": run("calibrate", "--model", tmp_path / "nomodel"),
        "models prepare": run("models", "prepare", "no-such-model"),
        "bench": run("bench", "--manifest", tmp_path / "none.jsonl", "--out", tmp_path),
        "usage error (click)": run("build", corpus, "--max-order", 99, "-o", tmp_path / "m.tmap"),
    }
    for name, res in failures.items():
        assert res.exit_code != 0, name
        errors = [line for line in res.stderr.splitlines() if not line.startswith(("Usage:", "Try "))]
        assert errors and all(line.startswith("Error: ") for line in errors if line), (name, res.stderr)
        assert "Traceback" not in res.output


# -- build: outputs that would destroy an input, maps without keys --------------------------------
def test_build_refuses_to_overwrite_its_input(tmp_path, corpus):
    text = tmp_path / "corpus.txt"
    text.write_bytes(corpus.read_bytes())
    (tmp_path / "link.txt").symlink_to(text)
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "more.txt").write_bytes(corpus.read_bytes())
    cases = [((text,), text, "is one of the inputs"), ((tmp_path / "link.txt",), text, "is one of the inputs"),
             ((text,), tmp_path / "link.txt", "is one of the inputs"),
             ((tmp_path / "dir",), tmp_path / "dir" / "more.txt", "inside the input directory"),
             ((text, tmp_path / "dir"), tmp_path / "dir" / "sub" / "m.tmap", "inside the input directory")]
    for inputs, output, message in cases:
        res = run("build", *inputs, "-o", output, "--force", "--model", MODEL, "--jobs", 1)
        assert res.exit_code == 1 and message in res.stderr and len(res.stderr.splitlines()) == 1, res.output
    assert text.read_bytes() == corpus.read_bytes()
    assert (tmp_path / "dir" / "more.txt").read_bytes() == corpus.read_bytes()
    assert not (tmp_path / "dir" / "sub").exists()
    teacher = run("build", text, "--balance", "--teacher", tmp_path / "dir" / "more.txt",
                  "-o", tmp_path / "dir" / "more.txt", "--force", "--model", MODEL, "--jobs", 1)
    assert teacher.exit_code == 1 and "is one of the inputs" in teacher.stderr


def test_a_corpus_without_usable_text_is_an_error(tmp_path):
    """200 kB of random bytes without NUL: almost every line is skipped, so no map (as for an empty corpus)."""
    noise = tmp_path / "noise.txt"
    noise.write_bytes(np.random.default_rng(1).integers(1, 256, 200_000, dtype=np.uint8).tobytes())
    for extra in ((), ("--balance",)):
        res = run("build", noise, *extra, "-o", tmp_path / "m.tmap", "--model", MODEL, "--jobs", 1)
        assert res.exit_code == 1, res.output
        assert [line for line in res.stderr.splitlines() if line.startswith("Error: ")] == [
            "Error: the corpus is mostly not text: 789 of 791 lines skipped (789 not UTF-8); check the input files"]
        assert not (tmp_path / "m.tmap").exists()


# -- reproducible builds -------------------------------------------------------------------------
def test_builds_are_reproducible_without_source_date_epoch(tmp_path, corpus, tok, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    hours = iter(range(1, 1000))
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 3600 * next(hours))  # each build an hour later
    opts = BuildOptions(jobs=1)
    a = build_map([corpus], tmp_path / "a.tmap", tokenizer=tok, model=MODEL, options=opts)
    b = build_map([corpus], tmp_path / "b.tmap", tokenizer=tok, model=MODEL, options=opts)
    assert Path(a.path).read_bytes() == Path(b.path).read_bytes()
    assert "created" not in load_maps(a.path)[0].header
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    c = build_map([corpus], tmp_path / "c.tmap", tokenizer=tok, model=MODEL, options=opts)
    assert load_maps(c.path)[0].header["created"] == "2023-11-14T22:13:20Z"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(BuildError, match="SOURCE_DATE_EPOCH='yesterday' is not a number of seconds"):
        build_map([corpus], tmp_path / "d.tmap", tokenizer=tok, model=MODEL, options=opts)


# -- Ctrl-C during a build -----------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def test_ctrl_c_during_a_build_is_quiet(tmp_path):
    lines = list(synthetic_corpus(20_000, seed=1))
    corpus = tmp_path / "big.txt"
    corpus.write_text("".join(f"{i % 97} {line}\n" for i in range(8) for line in lines), encoding="utf-8")
    out = tmp_path / "out" / "m.tmap"
    out.parent.mkdir()
    out.write_bytes(b"the old map")
    proc = subprocess.Popen([sys.executable, "-m", "tokenmap_cli", "build", str(corpus), "-o", str(out), "--force",
                             "--model", MODEL, "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(_children(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # wait for the tokenizing workers
    assert proc.poll() is None, proc.communicate()
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole process group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in err and err.split() == ["Aborted!"], err
    assert out.read_bytes() == b"the old map" and os.listdir(out.parent) == ["m.tmap"]


def test_an_interrupted_write_leaves_no_partial_file(tmp_path, monkeypatch):
    import hashlib

    from tokenmap.maps import mapfile

    class Interrupted:
        def __init__(self):
            self.calls = 0

        def update(self, data):
            self.calls += 1
            if self.calls == 2:
                raise KeyboardInterrupt

    path = tmp_path / "m.tmap"
    path.write_bytes(b"the old map")
    monkeypatch.setattr(mapfile.hashlib, "sha256", Interrupted)
    arrays = {"edge_key": np.arange(10, dtype=np.uint64)}
    with pytest.raises(KeyboardInterrupt):
        write_map(path, {"order": 1}, arrays)
    monkeypatch.setattr(mapfile.hashlib, "sha256", hashlib.sha256)
    assert path.read_bytes() == b"the old map" and os.listdir(tmp_path) == ["m.tmap"]


# -- audio arrays faster-whisper would misread ---------------------------------------------------
@pytest.fixture(scope="module")
def speech(data_dir):
    from faster_whisper.audio import decode_audio

    return decode_audio(str(data_dir / "en-agent-pass.flac"))


@pytest.fixture(scope="module")
def spec_model(base_model_dir):
    from tokenmap import WhisperModel

    return WhisperModel(str(base_model_dir), device="cpu", compute_type="int8", cpu_threads=2)


def _text(model, audio):
    segments, _ = model.transcribe(audio, language="en", beam_size=1, temperature=0.0)
    return "".join(s.text for s in segments).strip()


@pytest.mark.model
def test_whisper_model_rejects_stereo_and_reads_int16(spec_model, speech):
    from tokenmap.audio import AudioError

    with pytest.raises(AudioError, match=r"shape \(2, \d+\).*mono"):
        spec_model.transcribe(np.stack([speech, speech]), language="en")
    with pytest.raises(AudioError, match="samples of type int64"):
        spec_model.transcribe(np.zeros(16000, dtype=np.int64), language="en")
    # int16 is read as faster-whisper reads a WAV file's samples, scaled by 1/32768: the same samples as float32,
    # so the same text (not the text of ``speech`` itself: rounded to 16 bits, the features move by up to 1e-4,
    # which an int8 encoder may turn into another word on some CPU)
    pcm = np.round(speech * 32767).astype(np.int16)
    text = _text(spec_model, pcm)
    assert text == _text(spec_model, pcm.astype(np.float32) / 32768) and "password" in text.lower()


@pytest.mark.model
def test_whisper_model_checks_arrays_with_drafting_off(spec_model, speech, monkeypatch):
    """Without the engine fork (stock CTranslate2) transcribe is faster-whisper's own: arrays are checked too."""
    from tokenmap.audio import AudioError

    monkeypatch.setattr(spec_model.model, "drafting", None)
    with pytest.raises(AudioError, match=r"shape \(2, \d+\).*mono"):
        spec_model.transcribe(np.stack([speech, speech]), language="en")


@pytest.mark.model
def test_cli_transcriber_rejects_stereo_and_reads_int16(fw_model, speech):
    from tokenmap.audio import AudioError
    from tokenmap.transcriber import TranscribeOptions, transcribe_audio

    options = TranscribeOptions(language="en", vad=False)
    with pytest.raises(AudioError, match=r"clip: an array of shape \(\d+, 2\)"):
        transcribe_audio(fw_model, np.stack([speech, speech], axis=1), "clip", options)
    pcm = np.round(speech * 32767).astype(np.int16)  # read as the same samples scaled by 1/32768: the same text
    text = transcribe_audio(fw_model, pcm, "clip", options).text
    assert text == transcribe_audio(fw_model, pcm.astype(np.float32) / 32768, "clip", options).text
    assert "password" in text.lower()
