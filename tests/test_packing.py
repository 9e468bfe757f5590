"""Packed GEMM for the fork's decoder: when it is turned on, and that it changes no token."""

import json
import os
import subprocess
import sys

import pytest

from tokenmap.runtime import packing

CHILD = """
import json, sys
import tokenmap
from tokenmap.runtime import packing
import numpy as np, ctranslate2
from faster_whisper.audio import decode_audio
from faster_whisper.feature_extractor import FeatureExtractor
m = ctranslate2.models.Whisper(sys.argv[1], compute_type="int8", intra_threads=2)
f = FeatureExtractor()(decode_audio(sys.argv[2]))[:, :3000]
f = np.ascontiguousarray(np.pad(f, ((0, 0), (0, 3000 - f.shape[1])))[None], dtype=np.float32)
r = m.generate(m.encode(ctranslate2.StorageView.from_array(f)), [[50258, 50259, 50359]], beam_size=1)
print(json.dumps({"status": packing.status, "tokens": r[0].sequences_ids[0]}))
"""


def test_decide_names_each_reason(tmp_path):
    assert packing.decide(modules={}, environ={"TOKENMAP_PACKED_GEMM": "off"}) == "off"
    assert packing.decide(modules={"ctranslate2": object()}, environ={}) == "too late"
    if packing._engine_version() == packing.FORK_VERSION:
        assert packing.decide(modules={}, environ={}, library=tmp_path / "none.so") == "not built"


def test_children_do_not_inherit_the_switch():
    env = {packing.SWITCH: "1", "PATH": "/bin"}
    assert packing.child_environment(env, state="on") == {"PATH": "/bin"}
    assert packing.child_environment(env, state="not built") == env


@pytest.mark.model
def test_packed_decoder_gives_the_unpacked_tokens(base_model_dir, data_dir):
    if packing.decide(modules={}, environ={}) != "load":
        pytest.skip(f"packing unavailable here: {packing.decide(modules={}, environ={})}")
    runs = {}
    for name, extra in (("packed", {}), ("unpacked", {"TOKENMAP_PACKED_GEMM": "0"})):
        env = dict(os.environ, **extra)
        env.pop(packing.SWITCH, None)
        out = subprocess.run([sys.executable, "-c", CHILD, str(base_model_dir),
                              str(data_dir / "en-basic-pbx-ivr-main.flac")], env=env, capture_output=True,
                             text=True, check=True)
        runs[name] = json.loads(out.stdout.strip().splitlines()[-1])
    assert runs["packed"]["status"] == "on" and runs["unpacked"]["status"] == "off"
    assert runs["packed"]["tokens"] == runs["unpacked"]["tokens"]
