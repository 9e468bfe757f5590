"""The bench's leak guard: nothing a system learns from may hold a recording the run measures."""

import json
from pathlib import Path

import numpy as np
import pytest

from tokenmap_bench import BenchDataError, Recording, check_disjoint

TB = 50364


def _measured(data_dir: Path, name: str = "en-agent-pass") -> Recording:
    """A measured prompt as the manifest names it: its audio and the studio recording it plays."""
    return Recording(id=f"telephony/telephony/en/asterisk-allison/{name}", audio=str(data_dir / f"{name}.flac"),
                     text="", domain="telephony", lang="en", set="telephony",
                     recordings=(f"en_US_f_Allison/{name}",))


def _index(tmp_path: Path, audio: Path, recordings=()) -> Path:
    """A recall index of ``audio``'s first window (a stand-in encoder output; the real log-mel features)."""
    from types import SimpleNamespace

    from tokenmap.maps.recallindex import RecallIndex
    from tokenmap_bench import features

    mel = np.asarray(features(SimpleNamespace(audio=str(audio)))[0])[0]
    index = RecallIndex.empty({"fingerprint": "test", "vocab_size": TB + 1501, "encoder": "test", "model": "test"})
    assert index.add_window(np.random.default_rng(0).random((1500, 8), np.float32), [TB, 7, 8, TB + 100], TB,
                            mel=mel) == 1
    index.header["recordings"] = list(recordings)
    path = tmp_path / f"{audio.stem}.trec"
    index.save(path)
    return path


def test_teacher_lines_of_a_measured_prompt_in_another_codec_are_refused(tmp_path, data_dir):
    """The setup tokenmap-learned had: the model's transcripts of the measured prompts' 8 kHz files."""
    utt = _measured(data_dir)
    old = tmp_path / "teacher-telephone.jsonl"
    old.write_text(json.dumps({"text": "Please enter your password.", "domain": "telephony", "lang": "en",
                               "prompt": "en-agent-pass", "source": "asterisk-8khz-wav"}) + "\n")
    with pytest.raises(BenchDataError, match=r"--learn\) holds transcripts of the recordings of 1 utterances"):
        check_disjoint([utt], learn=str(old))
    with pytest.raises(BenchDataError, match="--teacher"):
        check_disjoint([utt], teacher=[str(old)])
    other = tmp_path / "teacher-train.jsonl"
    other.write_text(json.dumps({"text": "Goodbye.", "domain": "telephony", "lang": "en", "prompt": "vm-goodbye",
                                 "recording": "en_US_f_Allison/vm-goodbye"}) + "\n")
    check_disjoint([utt], learn=str(other))


def test_a_recall_index_holding_a_measured_recording_is_refused(tmp_path, data_dir):
    utt = _measured(data_dir)
    listed = _index(tmp_path, data_dir / "en-ss-noservice.flac", recordings=["en_US_f_Allison/en-agent-pass"])
    with pytest.raises(BenchDataError, match="holds the recordings of 1 utterances"):
        check_disjoint([utt], recall=str(listed))


def test_a_recall_index_is_refused_by_how_its_audio_sounds(tmp_path, data_dir):
    """No header needed: the index's fingerprint of the measured file's start gives it away."""
    utt = _measured(data_dir)
    same = _index(tmp_path, data_dir / "en-agent-pass.flac")
    with pytest.raises(BenchDataError, match="sounds like the start of 1 utterances"):
        check_disjoint([utt], recall=str(same))
    other = _index(tmp_path, data_dir / "en-conf-getpin.flac")  # the same voice, also "Please enter ..."
    check_disjoint([utt], recall=str(other))
