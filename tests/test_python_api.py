"""The Python API drafts what users call: the README example, greedy by default, bypasses logged once."""

import logging
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from tokenmap_cli.main import cli

ROOT = Path(__file__).resolve().parents[1]


def _readme_example() -> tuple[list[str], str]:
    """The `tokenmap build` command and the Python code of the README's "In Python" section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### In Python", 1)[1].split("\n### ", 1)[0]
    shell = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    build = next(line for line in shell.splitlines() if line.startswith("tokenmap build"))
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return shlex.split(build)[1:], code


@pytest.fixture()
def repo_like(tmp_path, monkeypatch):
    """A scratch directory that sees the repository's corpora and test audio, as the README's reader does."""
    for name in ("corpora", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.model
def test_readme_python_example_drafts(repo_like, capsys, caplog):
    build_args, code = _readme_example()
    result = CliRunner().invoke(cli, build_args)
    assert result.exit_code == 0, result.output
    caplog.set_level(logging.WARNING, logger="tokenmap")
    namespace = {}
    exec(compile(code, "README.md (In Python)", "exec"), namespace)
    stats = namespace["model"].last_stats()
    assert stats["drafted"] > 0 and stats["accepted"] > 0
    assert stats["fallbacks"] == 0 and stats["windows"] >= 1
    printed = capsys.readouterr().out
    assert "password" in printed.lower()
    assert f"drafted {stats['drafted']}," in printed and "0 fallbacks" in printed
    assert not [r for r in caplog.records if "without the token map" in r.getMessage()]


def _text(segments) -> str:
    return "".join(s.text for s in segments).strip()


@pytest.mark.model
def test_default_is_greedy_and_positional_beam_size_is_kept(base_model_dir, telephony_map, data_dir):
    """With a map and no ``beam_size``, the drafting loop runs (greedy) and gives plain greedy decoding's text.
    Exact (a float32 decoder) on the fork's encoder in both models: the text is then the same by design on every
    CPU (at int8 a near tie may go the other way, README "What each mode promises")."""
    from tokenmap import WhisperModel

    kw = dict(compute_type="int8", cpu_threads=2, encoder="fork", exact=True)
    model = WhisperModel(str(base_model_dir), token_map=str(telephony_map), **kw)
    audio = str(data_dir / "en-conf-getpin.flac")
    segments, _ = model.transcribe(audio, language="en")
    text = _text(segments)
    greedy, _ = WhisperModel(str(base_model_dir), **kw).transcribe(audio, language="en", beam_size=1)
    assert text == _text(greedy) and "conference" in text.lower()
    assert model.last_stats()["windows"] == 1 and model.last_stats()["fallbacks"] == 0
    segments, _ = model.transcribe(audio, "en", "transcribe", False, 2)  # beam_size given by position
    assert _text(segments)
    assert model.last_stats()["fallbacks"] == 1 and model.last_stats()["windows"] == 0


@pytest.mark.model
@pytest.mark.parametrize("with_map", [True, False])
def test_a_load_resolves_the_model_once_and_sets_up_one_model_object(monkeypatch, base_model_dir, telephony_map,
                                                                     with_map):
    import tokenmap.assembly
    import tokenmap.models
    import tokenmap.transcriber
    import tokenmap.whisper
    from tokenmap.assembly import Model
    from tokenmap.encoders import Encoder

    resolved = []

    def counting(*args, **kwargs):
        resolved.append(args)
        return tokenmap.models.resolve_model(*args, **kwargs)

    for module in (tokenmap.assembly, tokenmap.whisper):
        monkeypatch.setattr(module, "resolve_model", counting)
    model = tokenmap.transcriber.load_model(str(base_model_dir), "int8", 2, encoder="fork",
                                            token_map=str(telephony_map) if with_map else None)
    assert len(resolved) == 1
    # one model object, with a map or without: an encoder, the decoder, drafters (a map only when given)
    assert isinstance(model, tokenmap.whisper.WhisperModel) and isinstance(model.model, Model)
    assert isinstance(model.model.encoder, Encoder) and not isinstance(model.model.decoder, Model)
    assert (model.token_map is not None) == with_map


@pytest.mark.model
def test_the_drafter_knows_how_much_audio_the_window_holds(base_model_dir, telephony_map, data_dir):
    from faster_whisper.audio import decode_audio

    from tokenmap import WhisperModel

    model = WhisperModel(str(base_model_dir), token_map=str(telephony_map), compute_type="int8", cpu_threads=2)
    seen = []
    make = model.model.drafting.make_drafter
    model.model.drafting.make_drafter = (lambda controllers, seconds, **kw:
                                seen.append(seconds) or make(controllers, seconds, **kw))
    audio = str(data_dir / "en-conf-getpin.flac")
    list(model.transcribe(audio, language="en")[0])
    assert len(seen) == 1 and seen[0] == pytest.approx(len(decode_audio(audio)) / 16000, abs=0.02)


@pytest.mark.model
def test_beam_search_logs_the_bypass_once_and_transcribes(base_model_dir, telephony_map, fw_model, data_dir, caplog):
    from tokenmap import WhisperModel

    caplog.set_level(logging.WARNING, logger="tokenmap")
    # the fork encodes and decodes, as in fw_model: the bypass is then faster-whisper's beam search on the same
    # engine (auto may encode with OpenVINO, and stock CTranslate2 decodes plain windows, other numbers)
    model = WhisperModel(str(base_model_dir), token_map=str(telephony_map), compute_type="int8", cpu_threads=2,
                         encoder="fork")
    for name in ("en-agent-pass.flac", "en-conf-getpin.flac"):
        audio = str(data_dir / name)
        segments, _ = model.transcribe(audio, language="en", beam_size=5)
        expected, _ = fw_model.transcribe(audio, language="en", beam_size=5)
        assert _text(segments) == _text(expected)
        assert model.last_stats()["fallbacks"] >= 1 and model.last_stats()["drafted"] == 0
    bypass = [r for r in caplog.records if "without the token map" in r.getMessage()]
    assert len(bypass) == 1
    assert bypass[0].levelno == logging.WARNING
    assert "beam_size=5" in bypass[0].getMessage() and "beam_size=1" in bypass[0].getMessage()


# What faster-whisper 1.x passes to generate() besides the prompt (see its generate_with_fallback).
COMMON = dict(length_penalty=1, repetition_penalty=1, no_repeat_ngram_size=0, max_length=448, return_scores=True,
              return_no_speech_prob=True, suppress_blank=True, suppress_tokens=[-1], max_initial_timestamp_index=50)
BEAM = dict(COMMON, beam_size=5, patience=1)
SAMPLING = dict(COMMON, beam_size=1, num_hypotheses=5, sampling_topk=0, sampling_temperature=0.2)


@pytest.fixture(scope="module")
def special(base_model_dir):
    from tokenmap.decode.special import SpecialTokens

    return SpecialTokens.from_model_dir(str(base_model_dir))


def _prompt(special, *prefix):
    """SOT, a language and a task token (ids between SOT and <|notimestamps|>), then ``prefix``."""
    return [special.sot, special.sot + 1, special.no_timestamps - 4, *prefix]


@pytest.mark.model
@pytest.mark.parametrize("batch, kwargs, kind, advice", [
    (1, BEAM, "beam_size", "beam_size=1"),
    (1, SAMPLING, "sampling", "temperature=0.0"),
    (1, dict(COMMON, beam_size=1, patience=1, repetition_penalty=1.2), "repetition_penalty", "repetition_penalty"),
    (1, dict(COMMON, beam_size=1, patience=1, no_repeat_ngram_size=3), "no_repeat_ngram_size", "no_repeat_ngram_size"),
    (2, dict(COMMON, beam_size=1, patience=1), "batch", "WhisperModel.transcribe"),
])
def test_bypass_reason_names_the_option(special, batch, kwargs, kind, advice):
    from tokenmap.decode.model_drafting import bypass_reason
    from tokenmap.decode.rules import supports_fast_path

    prompt = _prompt(special)
    if batch == 1:
        assert not supports_fast_path(prompt=prompt, special=special, **kwargs)
    got_kind, message = bypass_reason(batch, kwargs)
    assert got_kind == kind
    assert advice in message


@pytest.mark.model
def test_bypass_reason_names_a_decoding_prefix(special):
    from tokenmap.decode.model_drafting import bypass_reason
    from tokenmap.decode.rules import supports_fast_path

    greedy = dict(COMMON, beam_size=1, patience=1)
    prompt = _prompt(special, 400, 401)
    assert supports_fast_path(**greedy) and not supports_fast_path(prompt=prompt, special=special, **greedy)
    assert bypass_reason(1, greedy)[0] == "prefix"


class _PlainEngine:
    """Stands in for ``ctranslate2.models.Whisper``: counts generate calls."""

    def __init__(self):
        self.calls = 0

    def generate(self, features, prompts, **kwargs):
        self.calls += 1
        return ["plain"]


def _drafting(special, cost=None, token_map=None):
    from tokenmap.decode.model_drafting import Drafting

    return Drafting(special, cost, token_map=token_map)


@pytest.mark.model
def test_each_kind_of_bypass_is_logged_once_per_model(special, caplog):
    from tokenmap.decode.speculative import DecodeStats

    caplog.set_level(logging.WARNING, logger="tokenmap")
    plain = _PlainEngine()
    spec, stats = _drafting(special), DecodeStats()
    prompt = _prompt(special)
    for kwargs in (SAMPLING, SAMPLING, BEAM, SAMPLING, BEAM):
        assert spec.generate(plain, plain, None, [prompt], stats, **kwargs) == ["plain"]
    assert plain.calls == 5 and stats.fallbacks == 5
    messages = [r.getMessage() for r in caplog.records if "without the token map" in r.getMessage()]
    assert len(messages) == 2
    assert "temperature fallback" in messages[0] and "temperature 0.2" in messages[0]
    assert "beam_size=5" in messages[1]
    caplog.clear()
    other = _drafting(special)  # another model says it again
    other.generate(plain, plain, None, [prompt], stats, **BEAM)
    assert len([r for r in caplog.records if "without the token map" in r.getMessage()]) == 1


def test_draft_controllers_are_kept_per_map():
    """What one map's windows taught the window gate says nothing of another map's windows."""
    from tokenmap.decode.cost import DEFAULT

    spec = _drafting(None, cost=DEFAULT, token_map="maintenance map")
    first = spec.controllers()
    assert first is spec.controllers()
    spec.token_map = "telephony map"
    second = spec.controllers()
    assert second is not first
    spec.token_map = "maintenance map"
    assert spec.controllers() is first
    assert _drafting(None).controllers() is None  # not adaptive


@pytest.mark.model
def test_a_window_sent_to_plain_generate_is_replayed_into_the_gate(base_model_dir, telephony_map, data_dir):
    """The gate learns from the windows it sends to plain ``generate`` too: their tokens are replayed through
    the window's drafter, whose map learns from them as from verified drafts, and the account takes them in."""
    from tokenmap import WhisperModel
    from tokenmap.decode.speculative import DecodeStats

    model = WhisperModel(str(base_model_dir), token_map=str(telephony_map), compute_type="int8", cpu_threads=2)
    controllers = model.model.drafting.controllers()
    for _ in range(3):  # three windows that lost against generate close the gate
        controllers.record_window(DecodeStats(tokens=20, passes=20, drafts=3, drafted=3))
    assert controllers.window_saving_ms < 0
    segments, _ = model.transcribe(str(data_dir / "en-conf-getpin.flac"), language="en")
    text = " ".join(s.text for s in segments)
    stats = model.last_stats()
    assert stats["plain_windows"] == 1 and stats["passes"] == 0 and "conference" in text.lower()
    tally = controllers.tally(0)
    assert controllers.replayed == 1 and tally.drafts > 0  # the prompt list's map drafted on the replay
    assert tally.saving_ms > 0 and controllers.window_saving_ms > -50.0  # a telephony prompt: the map pays


@pytest.mark.model
def test_a_map_drafts_only_windows_in_the_languages_of_its_text(base_model_dir, telephony_map, data_dir, caplog):
    """The telephony map was built from English text: a French window goes to plain ``generate`` (one warning
    naming both languages), an English one through the drafting loop."""
    from tokenmap import WhisperModel

    model = WhisperModel(str(base_model_dir), token_map=str(telephony_map), compute_type="int8", cpu_threads=2)
    assert model.model.token_map.languages == {"en"}
    with caplog.at_level("WARNING", logger="tokenmap"):
        for _ in range(2):
            segments, _ = model.transcribe(str(data_dir / "fr-conf-getpin.flac"), language="fr")
            list(segments)
            stats = model.last_stats()
            assert stats["plain_windows"] == 1 and stats["passes"] == 0
    assert [r.getMessage() for r in caplog.records if "not fr" in r.getMessage()] == [
        "decoding without the token map: it was built from en text, not fr"]
    segments, _ = model.transcribe(str(data_dir / "en-conf-getpin.flac"), language="en")
    list(segments)
    assert model.last_stats()["passes"] > 0
