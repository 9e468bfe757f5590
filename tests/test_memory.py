"""How the engine's buffers are allocated: one heap kept for reuse, never over the user's choice."""

import json
import os
import subprocess
import sys

import pytest

from tokenmap.runtime import memory, threads
from tokenmap.runtime.memory import ENVIRONMENT, SETTINGS, apply_malloc_policy


class FakeLibc:
    def __init__(self, answer: int = 1):
        self.calls, self.answer = [], answer

    def mallopt(self, param, value):
        self.calls.append((param, value))
        return self.answer


def test_applied_on_a_clean_environment():
    libc = FakeLibc()
    assert apply_malloc_policy({"PATH": "/bin"}, libc) == "applied"
    assert libc.calls == [(param, value) for _, param, value, _ in SETTINGS]


def test_a_users_setting_is_kept():
    for env in ({"MALLOC_ARENA_MAX": "4"}, {"MALLOC_TRIM_THRESHOLD_": "0"},
                {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}):
        libc = FakeLibc()
        assert apply_malloc_policy(env, libc) == "user"
        assert libc.calls == []


def test_opt_out_refusal_and_other_c_libraries(monkeypatch):
    libc = FakeLibc()
    assert apply_malloc_policy({memory.OPT_OUT: "default"}, libc) == "off" and libc.calls == []
    assert apply_malloc_policy({}, FakeLibc(answer=0)) == "failed"
    monkeypatch.setattr(memory, "_glibc", lambda: None)
    assert apply_malloc_policy({}) == "unavailable"


def test_the_environment_form_of_the_policy():
    # the environment form says what the mallopt form does (glibc's names for the variables)
    assert ENVIRONMENT == {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_MAX_": "0",
                           "MALLOC_TRIM_THRESHOLD_": str(512 * 2 ** 20), "MALLOC_TOP_PAD_": str(64 * 2 ** 20)}


ENCODE_TWICE = """
import json, resource, numpy as np, tokenmap, tokenmap.runtime.memory as m, ctranslate2
m.install()  # what the tokenmap command and WhisperModel(malloc_policy=True) do
from tokenmap.models import resolve_model
model = ctranslate2.models.Whisper(str(resolve_model("tiny.en")), device="cpu", compute_type="int8", intra_threads=1)
mel = ctranslate2.StorageView.from_array(np.zeros((1, 80, 3000), np.float32))
model.encode(mel)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
model.encode(mel)
print(json.dumps({"status": m.status, "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before}))
"""


def _encode_twice(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != memory.OPT_OUT}
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", ENCODE_TWICE], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.model
@pytest.mark.skipif(memory._glibc() is None, reason="glibc only")
def test_a_second_encode_reuses_the_first_ones_buffers():
    """tiny.en's encoder allocates 54 MB of attention scores a layer: with the
    policy a second encode finds them in the heap; without it, it faults in
    fresh pages for each of them (130,000 faults where measured)."""
    applied = _encode_twice({})
    default = _encode_twice({memory.OPT_OUT: "default"})
    assert applied["status"] == "applied" and default["status"] == "off"
    assert applied["faults"] < 1000 < 12000 < default["faults"], (applied, default)


IMPORT_ONLY = "import tokenmap, tokenmap.runtime.memory as m; print(m.status)"


def _status_after_import(extra: dict) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != memory.OPT_OUT}
    env.update(extra)
    return subprocess.run([sys.executable, "-c", IMPORT_ONLY], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.skipif(memory._glibc() is None, reason="glibc only")
def test_a_library_import_leaves_malloc_alone_unless_asked():
    """The policy keeps a host's freed memory resident: importing tokenmap does not apply it, unless
    ``TOKENMAP_MALLOC=tokenmap`` asks."""
    assert _status_after_import({}) == "None"
    assert _status_after_import({memory.OPT_OUT: "tokenmap"}) == "applied"


def test_the_encoder_worker_gets_the_policy_unless_the_user_decided():
    waits = dict(threads.POLICY)
    assert memory.worker_environment({"PATH": "/bin"}) == {"PATH": "/bin", **ENVIRONMENT, **waits}
    assert memory.worker_environment({memory.OPT_OUT: "default"}) == {memory.OPT_OUT: "default", **waits}
    assert memory.worker_environment({"MALLOC_ARENA_MAX": "4"}) == {"MALLOC_ARENA_MAX": "4", **waits}


def test_the_worker_spins_even_when_this_process_imported_ctranslate2_first():
    """A program that imports faster_whisper before tokenmap keeps libgomp's defaults in its own process,
    but the worker is a new process: its plain windows still get the thread wait policy."""
    script = ("import faster_whisper, tokenmap; from tokenmap.runtime import memory, threads; "
              "env = memory.worker_environment(); print(threads.status, env.get('OMP_WAIT_POLICY'))")
    env = {k: v for k, v in os.environ.items() if k not in threads.POLICY and k != threads.OPT_OUT}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["late", "ACTIVE"]
    own = memory.worker_environment({"OMP_WAIT_POLICY": "PASSIVE", threads.OPT_OUT: "default"})
    assert own["OMP_WAIT_POLICY"] == "PASSIVE" and "GOMP_SPINCOUNT" not in own


@pytest.mark.skipif(memory._glibc() is None, reason="glibc only")
def test_the_tokenmap_command_applies_it():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != memory.OPT_OUT}
    script = ("from click.testing import CliRunner; from tokenmap_cli.main import cli; "
              "import tokenmap.runtime.memory as m; CliRunner().invoke(cli, ['models', '--help']); print(m.status)")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "applied"


DECODE_LOOP = """
import gc, sys
from tokenmap.audio import _resampler_cycles, decode_pcm
if _resampler_cycles():
    print("cycles")
    sys.exit()
gc.disable()
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
for _ in range(30):
    decode_pcm(sys.argv[1])
before = rss()
for _ in range(300):
    decode_pcm(sys.argv[1])
print(rss() - before)
"""


def test_decoding_files_without_a_garbage_collection_keeps_memory_flat():
    """``decode_pcm`` skips faster-whisper's per-file ``gc.collect()`` on PyAV releases without resampler
    cycles: 300 decodes with the collector off must then hold no more memory."""
    path = os.path.join(os.path.dirname(__file__), "data", "en-basic-pbx-ivr-main.flac")
    out = subprocess.run([sys.executable, "-c", DECODE_LOOP, path], capture_output=True, text=True, check=True)
    if out.stdout.strip() == "cycles":
        pytest.skip("this PyAV needs the collection; decode_pcm runs it")
    assert int(out.stdout) < 4 * 2**20


TRIM = """
import numpy as np
import sys
from tokenmap.runtime import memory
if memory.install() != "applied":
    print("not applied")
    sys.exit()
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
blocks = [np.ones(1 << 20) for _ in range(25)]  # 200 MB in 8 MB blocks, from the heap (no mmap)
del blocks
kept = rss()
assert memory.release_free_memory()
print(kept - rss())
"""


def test_freed_memory_kept_by_the_policy_is_released_on_request():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    env.pop("TOKENMAP_MALLOC", None)
    out = subprocess.run([sys.executable, "-c", TRIM], capture_output=True, text=True, env=env, check=True)
    if out.stdout.strip() == "not applied":
        pytest.skip("the malloc policy cannot be applied here (not glibc)")
    assert int(out.stdout) > 150 * 2**20


def test_transcribe_file_lets_the_decoded_file_go_once_its_speech_is_joined(fw_model, data_dir, monkeypatch):
    """With VAD on, faster-whisper decodes a copy of the speech alone: while segments come, nothing of
    tokenmap's still holds the decoded file (an hour of audio is 230 MB)."""
    import weakref

    from tokenmap import transcriber

    refs = []
    real = transcriber.load_audio

    def loading(path):
        audio = real(path)
        refs.append(weakref.ref(audio))
        return audio

    monkeypatch.setattr(transcriber, "load_audio", loading)
    alive = []
    options = transcriber.TranscribeOptions(language="en", vad=True)
    transcriber.transcribe_file(fw_model, data_dir / "en-basic-pbx-ivr-main.flac", options,
                                on_segment=lambda segment: alive.append(refs[0]() is not None))
    assert alive and not any(alive)
