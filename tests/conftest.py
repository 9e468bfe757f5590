"""Shared fixtures. No test touches the network: the model hub is switched off."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENMAP_TEST", "1")
# Cost curves calibrated on this machine change drafting decisions (and so the budgets of
# `--balance`): tests see none, and use the built-in curves.
os.environ["TOKENMAP_CALIBRATION_DIR"] = tempfile.mkdtemp(prefix="tokenmap-test-calibration-")

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parent.parent

# Real speech fixtures (asterisk prompts, CC-BY-SA-3.0; see tests/data/README.md)
# with their reference transcripts.
SPEECH = {
    "en-agent-pass.flac": "Please enter your password followed by the pound key.",
    "en-conf-getpin.flac": "Please enter the conference pin number.",
    "en-tt-weasels.flac": "Weasels have eaten our phone system",
    "en-basic-pbx-ivr-main.flac": None,  # long (25 s) IVR menu
    "es-conf-getpin.flac": "Por favor ingrese la clave de entrada para la conferencia.",
    "fr-conf-getpin.flac": "Veuillez composer le code d'accès de la conférence.",
}


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def base_model_dir() -> Path:
    """The packaged Whisper base model (assembled by `make`)."""
    from tokenmap.models import resolve_model

    return resolve_model("base", download=False)


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    from tokenmap.models import resolve_model

    return resolve_model("tiny.en", download=False)


@pytest.fixture(scope="session")
def encode():
    """``encode(engine, path)``: the encoder output of an audio file's first 30 s window."""
    import ctranslate2
    import numpy as np
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor

    def run(engine, path):
        feats = FeatureExtractor()(decode_audio(str(path)))[:, :3000]
        feats = np.pad(feats, ((0, 0), (0, 3000 - feats.shape[1])))[None]
        return engine.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(feats)))
    return run


@pytest.fixture(scope="session")
def fw_model(base_model_dir):
    """faster-whisper's own WhisperModel on the packaged base model (int8, 2 threads)."""
    from faster_whisper import WhisperModel

    return WhisperModel(str(base_model_dir), device="cpu", compute_type="int8", cpu_threads=2)


@pytest.fixture(scope="session")
def sox():
    """Run sox; the tools target of the Makefile installs it."""
    exe = shutil.which("sox")
    assert exe, "sox is missing: run `make tools`"

    def run(*args):
        subprocess.run([exe, *map(str, args)], check=True, capture_output=True)

    return run


@pytest.fixture(scope="session")
def tok(base_model_dir):
    """The base model's :class:`tokenmap.textok.TextTokenizer` (BPE merges repaired)."""
    from tokenmap.textok import TextTokenizer

    return TextTokenizer.from_file(base_model_dir / "tokenizer.json")


@pytest.fixture(scope="session")
def telephony_map(tmp_path_factory):
    """A suffix map of the English telephony train prompts, built through the CLI."""
    from click.testing import CliRunner

    from tokenmap_cli.main import cli

    out = tmp_path_factory.mktemp("maps") / "telephony.tmap"
    result = CliRunner().invoke(cli, ["build", str(DATA.parent.parent / "corpora/telephony/en/train.txt"),
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def make_corpus(tmp_path_factory):
    """``make_corpus(n, seed)``: a file of ``n`` generated maintenance lines (one per call)."""
    from tokenmap_bench.synthetic import synthetic_corpus

    def make(n: int, seed: int) -> Path:
        path = tmp_path_factory.mktemp("corpus") / "maint.txt"
        path.write_text("\n".join(synthetic_corpus(n, seed=seed)) + "\n", encoding="utf-8")
        return path

    return make


class ForkStandIn:
    """What the stock encoder's fallback is asked for: ``encode(features, to_cpu=...)``; counts the calls."""

    def __init__(self):
        self.calls = 0

    def encode(self, features, to_cpu=False):
        self.calls += 1
        return ("fork", np.asarray(features).shape)


@pytest.fixture
def fork_stand_in():
    """The class :class:`ForkStandIn`: a stand-in for the fork's model as a fallback encoder."""
    return ForkStandIn


def model_shapes():
    """benchmarks/model_shapes.py as a module (random-weight models written by CTranslate2's own spec)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("model_shapes", ROOT / "benchmarks" / "model_shapes.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("model_shapes", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def tiny_v3(base_model_dir, tmp_path_factory):
    """A tiny random CTranslate2 model of large-v3's kind: 128 mel bins, 51866 tokens with <|yue|>."""
    shapes = model_shapes()
    shape = shapes.Shape(d_model=64, encoder_layers=2, decoder_layers=2, heads=4, n_mels=128, large_v3_vocab=True)
    return shapes.build("tiny-v3", shape, tmp_path_factory.mktemp("shapes") / "tiny-v3", source=base_model_dir)


# Windows crafted to loop: a previous text that repeats one short phrase, then audio with no speech (noise or
# silence). Whether one of them loops depends on the CPU's kernels (the same int8 model gives other numbers on AVX2,
# VNNI and AMX), so a test that needs a real loop takes the first that loops here (``first_looping``) and fails
# if none does.
LOOP_PROMPTS = (" Thank you. Thank you. Thank you.", " Bye. Bye. Bye.", " Okay. Okay. Okay.")
#: (level of white noise, seconds, seed)
LOOP_SOUNDS = ((0.01, 10, 2), (0.01, 6, 2), (0.03, 6, 5), (0.03, 10, 2), (0.01, 10, 5), (0.0, 2, 0), (0.003, 4, 1),
               (0.003, 12, 0))


def crafted_windows():
    """``(description, previous text, samples)`` of every crafted window, in the order they are tried."""
    for level, seconds, seed in LOOP_SOUNDS:
        samples = (level * np.random.default_rng(seed).standard_normal(16000 * seconds)).astype(np.float32)
        sound = f"{seconds} s of noise at {level} (seed {seed})" if level else f"{seconds} s of silence"
        for prompt in LOOP_PROMPTS:
            yield f"{prompt.strip()!r} then {sound}", prompt, samples


@pytest.fixture(scope="session")
def first_looping():
    """``first_looping(loops)``: the first crafted window ``(description, previous text, samples)`` for which
    ``loops(previous text, samples)`` is true on this machine; the test fails, naming what was tried, if none is."""

    def find(loops):
        tried = []
        for description, prompt, samples in crafted_windows():
            if loops(prompt, samples):
                return description, prompt, samples
            tried.append(description)
        pytest.fail(f"none of the {len(tried)} crafted windows loops on this CPU with the loop stop off "
                    f"({'; '.join(tried)}): add a candidate to LOOP_PROMPTS or LOOP_SOUNDS in tests/conftest.py")

    return find
