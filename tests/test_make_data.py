"""Pure parts of benchmarks/make_data.py: no TTS, asterisk or sox needed."""
import collections
import dataclasses
import importlib.util
import struct
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "make_data.py"
_spec = importlib.util.spec_from_file_location("tokenmap_bench_make_data", _PATH)
md = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = md
_spec.loader.exec_module(md)


def _jobs(texts, lang="en", voices=("flite-slt",), set_="synthetic", domain="maintenance", share=0.2):
    return md.tts_jobs(set_, domain, lang, list(enumerate(texts)), list(voices), "0", 1, share)


def _job(i=0, text="Pump 3 OK."):
    return _jobs([text])[0]


def test_ids_deterministic_and_text_sensitive():
    a = md.make_id("synthetic", "incar", "en", "piper-joe", 7, "Call Mom.")
    assert a == md.make_id("synthetic", "incar", "en", "piper-joe", 7, "Call Mom.")
    assert a.startswith("synthetic/incar/en/piper-joe/007-")
    assert a != md.make_id("synthetic", "incar", "en", "piper-joe", 7, "Call Dad.")
    assert md.stable_hash("x", 1) == md.stable_hash("x", 1) != md.stable_hash("x", 2)


def test_tts_jobs_params_deterministic_and_in_range():
    texts = [f"Valve {i} checked." for i in range(300)]
    jobs = _jobs(texts, voices=("flite-slt", "flite-awb", "piper-joe"))
    assert jobs == _jobs(texts, voices=("flite-slt", "flite-awb", "piper-joe"))
    assert sorted(j.text for j in jobs) == sorted(texts)
    assert all(0.85 <= j.rate <= 1.15 and j.pitch == 50 for j in jobs)   # flite/piper: no pitch
    for v in ("flite-slt", "flite-awb", "piper-joe"):                     # exactly 20 % per voice
        assert sum(j.snr_db is not None for j in jobs if j.voice == v) == 20
    assert all(md.SNR_DB[0] <= j.snr_db <= md.SNR_DB[1] for j in jobs if j.snr_db is not None)
    es = _jobs(["Hola."], lang="es", voices=("espeak-es",), share=0.0)[0]
    assert es.snr_db is None and 0.8 <= es.rate <= 1.0 and 35 <= es.pitch <= 65
    assert es.source == "espeak-ng" and es.audio == es.id + ".flac"
    two = md.tts_jobs("synthetic", "incar", "en", [(0, "Hi.")], ["flite-slt", "piper-joe"], "0", 2, 0.0)
    assert {j.voice for j in two} == {"flite-slt", "piper-joe"} and len({j.id for j in two}) == 2


def test_pick_noisy_exact_share():
    ids = [f"id{i}" for i in range(56)]
    assert len(md.pick_noisy(ids, 0.2, 0)) == 11
    assert md.pick_noisy(ids, 0.2, 0) == md.pick_noisy(list(reversed(ids)), 0.2, 0)
    assert md.pick_noisy(ids, 0.0, 0) == set()


def test_voices_cover_languages():
    for lang, n in (("en", 7), ("es", 4), ("fr", 4)):
        assert sum(l == lang for _, _, l in md.VOICES.values()) == n
    assert set(md.DICTATION_VOICES) <= set(md.VOICES)


def test_assign_voices_balanced_and_distinct():
    texts = [f"t{i}" for i in range(200)]
    voices = ["a", "b", "c", "d", "e", "f", "g"]
    one = md.assign_voices(texts, voices, 1, "s")
    counts = collections.Counter(v for vs in one for v in vs)
    assert set(counts) == set(voices) and max(counts.values()) - min(counts.values()) <= 1
    assert one == md.assign_voices(texts, voices, 1, "s")
    two = md.assign_voices(texts, voices, 2, "s")
    assert all(len(set(vs)) == 2 for vs in two)
    assert all(len(vs) == 3 for vs in md.assign_voices(texts, voices[:3], 5, "s"))


def test_dictation_windows_join_consecutive():
    sents = [f"Sentence number {i} is here." for i in range(40)]   # ~2.2 s each
    wins = md.dictation_windows(sents, max_seconds=10.0)
    assert wins[0][0] == 0
    for (s0, e0, _), (s1, _, _) in zip(wins, wins[1:]):
        assert e0 == s1                                      # consecutive, no gap or overlap
    for s, e, text in wins:
        assert text == " ".join(sents[s:e])
        assert e - s == 1 or md.estimate_seconds(text) <= 10.0
    assert wins == md.dictation_windows(sents, max_seconds=10.0)


def test_dictation_windows_long_sentence_short_tail_and_empty():
    long = " ".join(["word"] * 200)
    short = "Short two."
    assert md.dictation_windows(["Short one.", long, short], 5.0) == [(0, 1, "Short one."), (1, 2, long)]
    tail = " ".join([short] * 5)                                            # 3.8 s >= 5.0 / 2: kept
    assert md.dictation_windows(["Short one.", long, tail], 5.0)[-1] == (2, 3, tail)
    assert md.dictation_windows([short], 30.0) == [(0, 1, short)]          # a lone window is kept
    assert md.dictation_windows([]) == []


def test_calls_windows_keep_order_and_cap_with_pauses():
    prompts = [(f"p{i}", f"Prompt {i}.", secs) for i, secs in enumerate([4.0, 9.0, 11.0, 30.0, 2.0, 3.0])]
    windows = md.calls_windows(prompts, max_seconds=27.0, pause=1.0)
    assert [p for w in windows for p in w] == prompts           # every prompt once, in order
    assert [[n for n, _, _ in w] for w in windows] == [["p0", "p1", "p2"], ["p3"], ["p4", "p5"]]
    for w in windows:                                            # within the cap unless one prompt is longer
        assert len(w) == 1 or sum(s + 1.0 for _, _, s in w) <= 27.0
    assert md.calls_windows([]) == []


def test_tts_text_spells_symbols():
    assert md.tts_text("Oil 74 °C, level 93 %.", "en") == "Oil 74 degrees Celsius, level 93 percent."
    assert md.tts_text("Aceite 74 °C.", "es") == "Aceite 74 grados Celsius."
    assert md.tts_text("Huile  50 °C.", "fr") == "Huile 50 degrés Celsius."


def test_manifest_record_schema():
    j = _job()
    rec = md.manifest_record(j, 2.5)
    assert list(rec)[:len(md.FIELDS)] == list(md.FIELDS)
    assert rec["audio"] == j.id + ".flac" and rec["duration"] == 2.5 and "snr_db" in rec
    md.validate_record(rec)
    real = md.Job("telephony/telephony/en/asterisk-allison/000-deadbeef", "Goodbye.", "telephony",
                  "telephony", "en", "asterisk-allison", "asterisk-core-sounds-en-g722", "g722", "/x.g722")
    assert "snr_db" not in md.manifest_record(real, 1.0)


@pytest.mark.parametrize("change", [{"duration": 0.0}, {"duration": 3}, {"text": ""},
                                    {"set": "other"}, {"audio": "/abs/path.flac"}])
def test_validate_record_rejects(change):
    rec = md.manifest_record(_job(), 2.0)
    rec.update(change)
    with pytest.raises(ValueError):
        md.validate_record(rec)
    rec = md.manifest_record(_job(), 2.0)
    del rec["voice"]
    with pytest.raises(ValueError):
        md.validate_record(rec)


def _records():
    recs = []
    for lang, voices in (("en", ["flite-slt", "piper-joe"]), ("es", ["espeak-es"])):
        for v in voices:
            for i in range(20):
                recs.append(dataclasses.asdict(_jobs([f"{lang} {i}"], lang=lang, voices=(v,))[0]))
    for i in range(30):
        recs.append({"id": f"telephony/telephony/fr/asterisk-june/{i:03d}", "set": "telephony",
                     "domain": "telephony", "lang": "fr", "voice": "asterisk-june"})
    return recs


def test_select_quick_covers_every_group_with_quota():
    recs = _records()
    quick = md.select_quick(recs, {"synthetic": 2, "telephony": 4})
    groups = collections.Counter((r["set"], r["domain"], r["lang"], r["voice"]) for r in quick)
    assert len(groups) == 4 and len(quick) == 3 * 2 + 4
    assert groups[("telephony", "telephony", "fr", "asterisk-june")] == 4
    assert [r["id"] for r in quick] == sorted(r["id"] for r in quick)


def test_select_quick_deterministic_and_stable_when_records_added():
    recs = _records()
    quick = md.select_quick(recs, {"synthetic": 2, "telephony": 4})
    assert quick == md.select_quick(list(reversed(recs)), {"synthetic": 2, "telephony": 4})
    more = recs + [{"id": "telephony/telephony/fr/asterisk-june/zzz", "set": "telephony",
                    "domain": "telephony", "lang": "fr", "voice": "asterisk-june"}]
    kept = {r["id"] for r in md.select_quick(more, {"synthetic": 2, "telephony": 4})}
    assert len(kept ^ {r["id"] for r in quick}) <= 2          # at most one swapped in and out
    assert md.select_quick(recs, {"synthetic": 2, "telephony": 4}, seed=1) != quick


def test_quick_quota_is_real_speech_with_30_utterances_a_task():
    assert md.QUICK_QUOTA["synthetic"] == md.QUICK_QUOTA["dictation"] == 0
    assert md.QUICK_QUOTA["telephony"] >= 30 and md.QUICK_QUOTA["calls"] >= 30
    assert set(md.ASTERISK) == {"en", "es", "fr", "it", "ru"}
    assert md.FULL_QUOTA["telephony"] >= 100 and md.FULL_QUOTA["calls"] >= 100


def test_flac_duration_reads_streaminfo(tmp_path):
    rate, total = 16000, 40000
    info = (rate << 44) | (0 << 41) | (15 << 36) | total      # mono, 16 bit
    block = struct.pack(">HH", 4096, 4096) + b"\0" * 6 + info.to_bytes(8, "big") + b"\0" * 16
    p = tmp_path / "x.flac"
    p.write_bytes(b"fLaC" + bytes([0x80]) + len(block).to_bytes(3, "big") + block)
    assert md.flac_duration(p) == pytest.approx(2.5)
    (tmp_path / "bad.flac").write_bytes(b"RIFF" + b"\0" * 60)
    with pytest.raises(ValueError):
        md.flac_duration(tmp_path / "bad.flac")


def test_summary_table():
    recs = [md.manifest_record(_job(i, text=f"Pump {i}."), 1800.0) for i in range(2)]
    table = md.summary(recs)
    assert "synthetic" in table and table.splitlines()[-1].split()[-1] == "1.000"
