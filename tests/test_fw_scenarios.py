"""faster-whisper 1.2.1's own transcription scenarios (its tests/test_transcribe.py), run on tokenmap's model.

Each scenario runs on Whisper base (int8, 2 threads) with ``tokenmap.WhisperModel`` under
``audio_context="full"`` and ``"auto"``, and compares with plain ``faster_whisper.WhisperModel`` on the
same model directory in the same process, both greedy (``beam_size=1`` passed explicitly).

How transcripts are compared:

- ``full``: the normalised transcript (lower case, punctuation dropped, "one" written "1" as Whisper's own
  English normaliser does) must equal faster-whisper's.
  Not the raw text: tokenmap decodes int8 by verifying drafted tokens in a batched pass, and where two
  candidates nearly tie (``" one."`` / ``" one"``, ``"accounting,"`` / ``"accounting"``) it may pick the
  other one (README, "What each mode promises"); on this audio that only ever moved punctuation and case.
- ``auto``: the short audio context may legitimately change a word (README: "``--audio-context auto`` may
  change a transcript by a word against 30 s"), so it is held to a word error tolerance against
  faster-whisper's transcript: at most one word, or 10 % (rounded up) of the words of a longer text.

Audio: the committed Asterisk prompts (CC-BY-SA-3.0, tests/data/README.md); stereo and multilingual
inputs are built from them at test time.
"""

import inspect
import math
import re

import jiwer
import numpy as np
import pytest
from faster_whisper import BatchedInferencePipeline, decode_audio

from tokenmap.runtime.threads import blas_single_thread

pytestmark = pytest.mark.model

SR = 16_000
CONTEXTS = ["auto", "full"]
PBX = "en-basic-pbx-ivr-main.flac"  # 25.4 s IVR menu, eight sentences
#: auto: word errors allowed against faster-whisper, as (fraction of the reference's words, at least)
AUTO_WER, AUTO_MIN_ERRORS = 0.10, 1
#: word timings (s) against faster-whisper's when the words are the same: one Whisper time step on the
#: full context (same encoder, same alignment); on the short one the cross-attention moves them a little, and
#: a segment boundary placed elsewhere moves the next word's start to it (the menu's "To establish": 0.3 s)
WORD_TIME_TOLERANCE = {"full": 0.02, "auto": 0.5}
#: where tokenmap's transcribe signature deliberately differs from faster-whisper's: it decodes greedily
#: unless told otherwise (README "In Python", tokenmap.whisper.WhisperModel.transcribe)
TOKENMAP_DEFAULTS = {"beam_size": 1}


# ---------------------------------------------------------------------------------------------- helpers


NUMBERS = {word: str(i) for i, word in enumerate("zero one two three four five six seven eight nine ten".split())}


def norm(text: str) -> str:
    """Lower case, punctuation dropped (apostrophes inside words kept), small numbers as digits, single spaces
    (the IVR menu's "press two" comes out as "press 2" or "press two" from one decode to the next)."""
    text = re.sub(r"[^\w\s']|(?<!\w)'|'(?!\w)", " ", text.lower())
    return " ".join(NUMBERS.get(word, word) for word in text.split())


def joined(segments) -> str:
    return "".join(s.text for s in segments).strip()


def assert_same_text(context: str, got: str, expected: str, auto_wer: float = AUTO_WER) -> None:
    """``got`` (tokenmap) against ``expected`` (faster-whisper): equal when normalised on the full context,
    within ``auto_wer`` of the reference's words on the short one (see the module's docstring)."""
    ref, hyp = norm(expected), norm(got)
    if context == "full" or not ref:
        assert hyp == ref, f"tokenmap ({context}): {got!r}\nfaster-whisper: {expected!r}"
        return
    out = jiwer.process_words(ref, hyp)
    errors = out.substitutions + out.deletions + out.insertions
    allowed = max(AUTO_MIN_ERRORS, math.ceil(auto_wer * len(ref.split())))
    assert errors <= allowed, (f"tokenmap (auto) {errors} word errors > {allowed}: {got!r}\n"
                               f"faster-whisper: {expected!r}")


def assert_monotonic(segments, duration: float) -> None:
    """faster-whisper's monotonic-timestamps checks: segments in order, words inside their segment."""
    assert segments
    for i, segment in enumerate(segments):
        assert segment.start <= segment.end, segment
        if i + 1 < len(segments):
            assert segment.end <= segments[i + 1].start, (segment, segments[i + 1])
        for word in segment.words:
            assert word.start <= word.end, word
            assert segment.start <= word.start and word.end <= segment.end, (word, segment)
    assert segments[-1].end <= duration


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * SR)), dtype=np.float32)


# --------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module", params=CONTEXTS)
def context(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def tm(base_model_dir, context):
    """tokenmap's model with this audio context (one per context, shared by the module's tests). The fork
    encodes and decodes its plain windows, as in faster-whisper's model here (fw_model), so that transcripts
    can be held to faster-whisper's on every CPU (stock CTranslate2's worker decodes some windows differently
    on the AMD EPYC); tests/test_openvino_encoder.py runs the same paths on OpenVINO's encoder."""
    from tokenmap import WhisperModel

    return WhisperModel(str(base_model_dir), compute_type="int8", cpu_threads=2, audio_context=context,
                        encoder="fork")


@pytest.fixture(scope="module")
def once():
    """``once(key, run)``: ``run()``'s result, computed on the first call with ``key`` (faster-whisper's
    references are shared by both contexts; a run two tests check is decoded once)."""
    cache = {}

    def get(key, run):
        if key not in cache:
            cache[key] = run()
        return cache[key]

    return get


@pytest.fixture(scope="module")
def audio(data_dir):
    """``audio(name)``: a committed recording as mono float32 at 16 kHz."""
    loaded = {}

    def get(name: str) -> np.ndarray:
        if name not in loaded:
            loaded[name] = decode_audio(str(data_dir / name))
        return loaded[name]

    return get


def transcribe(model, audio, **kw):
    """``(segments as a list, info)`` of a greedy ``transcribe``, with numpy's BLAS on one thread as tokenmap
    holds it: the features then agree to the bit (with two threads they differ by about 1e-7, and an int8
    encoder can turn that into another word or language probability)."""
    with blas_single_thread():
        segments, info = model.transcribe(audio, beam_size=1, **kw)
        return list(segments), info


def transcribe_batched(model, audio, **kw):
    """The same through faster-whisper's ``BatchedInferencePipeline`` around ``model``."""
    with blas_single_thread():
        segments, info = BatchedInferencePipeline(model=model).transcribe(audio, beam_size=1, **kw)
        return list(segments), info


# ------------------------------------------------------------------------------------------------ tests


def test_transcribe_signature_is_faster_whispers_plus_audio_context():
    """Every parameter of faster-whisper's ``transcribe``, in its order, kind and default, then ``audio_context``
    (keyword-only, default None: the model's context); ``beam_size`` defaults to greedy (TOKENMAP_DEFAULTS)."""
    import faster_whisper

    import tokenmap

    theirs = list(inspect.signature(faster_whisper.WhisperModel.transcribe).parameters.values())
    ours = list(inspect.signature(tokenmap.WhisperModel.transcribe).parameters.values())
    extra = [p for p in ours if p.name == "audio_context"]
    assert len(extra) == 1, [str(p) for p in ours]
    assert extra[0].kind is inspect.Parameter.KEYWORD_ONLY and extra[0].default is None, str(extra[0])
    expected = [(p.name, p.kind, TOKENMAP_DEFAULTS.get(p.name, p.default)) for p in theirs]
    assert [(p.name, p.kind, p.default) for p in ours if p.name != "audio_context"] == expected
    # what BatchedInferencePipeline.transcribe accepts is a subset (faster-whisper's own signature test)
    pipeline = set(inspect.signature(BatchedInferencePipeline.transcribe).parameters) - {"batch_size"}
    assert pipeline <= {p.name for p in ours}


def test_transcribe_binds_positional_arguments_and_defaults_to_greedy(tm, audio):
    """``transcribe(audio, "en")`` binds ``language`` as faster-whisper's does; no ``beam_size``: greedy."""
    segments, info = tm.transcribe(audio("en-conf-getpin.flac"), "en")
    assert info.language == "en" and info.language_probability == 1
    assert info.transcription_options.beam_size == 1
    assert "conference pin number" in norm(joined(segments))


def test_word_timestamps(tm, context, fw_model, once, audio):
    """The IVR menu, language detected, word timestamps (faster-whisper's test_transcribe)."""
    menu = audio(PBX)
    expected, fw_info = once("words", lambda: transcribe(fw_model, menu, word_timestamps=True))
    segments, info = once(("words", context), lambda: transcribe(tm, menu, word_timestamps=True))

    assert info.language == fw_info.language == "en" and info.language_probability > 0.9
    assert info.all_language_probs is not None
    top_language, top_probability = info.all_language_probs[0]
    assert (top_language, top_probability) == pytest.approx((info.language, info.language_probability), abs=1e-6)
    assert info.duration == pytest.approx(menu.size / SR)
    assert segments and all(s.words for s in segments)
    for segment in segments:
        assert segment.text == "".join(w.word for w in segment.words)
        assert segment.start == segment.words[0].start and segment.end == segment.words[-1].end
    assert_same_text(context, joined(segments), joined(expected))

    words = [w for s in segments for w in s.words]
    fw_words = [w for s in expected for w in s.words]
    if [norm(w.word) for w in words] == [norm(w.word) for w in fw_words]:
        tolerance = WORD_TIME_TOLERANCE[context]
        for word, fw_word in zip(words, fw_words):
            assert word.start == pytest.approx(fw_word.start, abs=tolerance), (word, fw_word)
            assert word.end == pytest.approx(fw_word.end, abs=tolerance), (word, fw_word)
    else:
        assert context == "auto", "the full context must give faster-whisper's words"


def test_batched_pipeline(tm, context, fw_model, once, audio):
    """BatchedInferencePipeline around tokenmap's model (faster-whisper's test_batched_transcribe): the IVR
    menu as one chunk with word timestamps; then VAD with ``chunk_length=15`` cuts it into two chunks, decoded
    as one batch of two."""
    menu = audio(PBX)
    kw = dict(language="en", without_timestamps=False, word_timestamps=True)
    expected, _ = once("batched-words", lambda: transcribe_batched(fw_model, menu, **kw))
    segments, _ = once(("batched-words", context), lambda: transcribe_batched(tm, menu, **kw))
    assert len(segments) > 2 and all(s.words for s in segments)
    assert_same_text(context, joined(segments), joined(expected))

    expected, _ = once("batched-2", lambda: transcribe_batched(fw_model, menu, language="en", chunk_length=15))
    segments, info = transcribe_batched(tm, menu, language="en", chunk_length=15)
    assert info.language == "en" and info.transcription_options.beam_size == 1
    assert len(segments) == len(expected) == 2
    for segment, fw_segment in zip(segments, expected):
        assert (segment.start, segment.end) == pytest.approx((fw_segment.start, fw_segment.end), abs=0.02)
        assert_same_text(context, segment.text, fw_segment.text)


def test_empty_audio(tm, context, fw_model):
    """No samples: no segments, sequential or batched; language detection still answers."""
    empty = np.asarray([], dtype=np.float32)
    segments, info = tm.transcribe(empty, beam_size=1)
    assert list(segments) == [] and info.duration == 0
    segments, _ = BatchedInferencePipeline(model=tm).transcribe(empty, beam_size=1)
    assert list(segments) == []
    language, probability, all_probs = tm.detect_language(empty)
    assert 0 <= probability <= 1 and language in tm.supported_languages and all_probs
    if context == "full":  # the same 30 s of padding through the same encoder: faster-whisper's answer
        assert language == fw_model.detect_language(empty)[0]


def test_prefix(tm, context, fw_model, once, audio):
    """A decoding prefix (faster-whisper's test_prefix_with_timestamps): the text starts with it."""
    clip = audio("en-agent-pass.flac")
    kw = dict(language="en", prefix="Please enter your")
    expected, _ = once("prefix", lambda: transcribe(fw_model, clip, **kw))
    segments, info = transcribe(tm, clip, **kw)
    assert info.transcription_options.prefix == "Please enter your"
    assert len(segments) == 1
    assert segments[0].text.startswith(" Please enter your password")
    assert segments[0].start == 0 and 2.5 < segments[0].end <= info.duration
    assert_same_text(context, joined(segments), joined(expected))


def test_vad_parameters(tm, context, fw_model, once, audio):
    """vad_filter with vad_parameters (faster-whisper's test_vad): silence cut, timestamps in the original audio."""
    speech = np.concatenate([silence(1.0), audio("en-agent-pass.flac"), silence(3.0), audio("en-conf-getpin.flac"),
                             silence(1.0)])
    kw = dict(language="en", vad_filter=True, vad_parameters=dict(min_silence_duration_ms=500, speech_pad_ms=200))
    expected, _ = once("vad", lambda: transcribe(fw_model, speech, **kw))
    segments, info = transcribe(tm, speech, **kw)
    assert info.vad_options.min_silence_duration_ms == 500 and info.vad_options.speech_pad_ms == 200
    assert info.duration_after_vad < info.duration - 3.0  # at least the 3 s pause is gone
    assert segments
    assert 0.5 < segments[0].start < 1.0  # speech from 1.0 s, padded by 0.2 s
    assert segments[-1].end <= info.duration
    assert_same_text(context, joined(segments), joined(expected))


def test_stereo_input(tm, context, fw_model, once, audio, data_dir, sox, tmp_path):
    """Two channels (faster-whisper's test_stereo_diarization): each channel of a stereo file transcribed
    alone (``decode_audio(split_stereo=True)``); and a stereo 48 kHz file by path (down-mixed, resampled)."""
    stereo = tmp_path / "two-prompts.wav"
    sox("-M", data_dir / "en-agent-pass.flac", data_dir / "en-conf-getpin.flac", stereo)
    left, right = decode_audio(str(stereo), split_stereo=True)
    for channel, samples, words, other in (("left", left, "password", "conference"),
                                           ("right", right, "conference", "password")):
        expected, _ = once(("stereo", channel), lambda: transcribe(fw_model, samples, language="en"))
        text = joined(transcribe(tm, samples, language="en")[0])
        assert words in norm(text) and other not in norm(text), (channel, text)
        assert_same_text(context, text, joined(expected))

    both = tmp_path / "stereo48k.wav"
    sox(data_dir / "en-agent-pass.flac", "-r", "48000", "-c", "2", both)
    expected, _ = once("stereo-path", lambda: transcribe(fw_model, str(both), language="en"))
    segments, info = transcribe(tm, str(both), language="en")
    assert info.duration == pytest.approx(audio("en-agent-pass.flac").size / SR, abs=0.01)
    assert "password followed by the pound key" in norm(joined(segments))
    assert_same_text(context, joined(segments), joined(expected))


@pytest.fixture(scope="module")
def en_then_es(audio):
    """An English prompt in the first 30 s window, a Spanish one in the second (34 s)."""
    en = audio("en-agent-pass.flac")
    return np.concatenate([en, silence(30.0 - en.size / SR), audio("es-conf-getpin.flac")])


def test_multilingual(tm, context, fw_model, once, en_then_es):
    """multilingual=True detects the language of every window (faster-whisper's test_multilingual_transcription)."""
    kw = dict(multilingual=True, without_timestamps=True, condition_on_previous_text=False)
    expected, _ = once("multilingual", lambda: transcribe(fw_model, en_then_es, **kw))
    segments, _ = transcribe(tm, en_then_es, **kw)
    assert len(segments) == len(expected) == 2
    assert "password" in norm(segments[0].text)
    assert "por favor" in norm(segments[1].text) and "conferencia" in norm(segments[1].text)
    for segment, fw_segment in zip(segments, expected):
        assert_same_text(context, segment.text, fw_segment.text)


def test_multilingual_batched(tm, context, fw_model, once, en_then_es):
    """The same through BatchedInferencePipeline, one chunk per prompt (one batch of two)."""
    clips = [{"start": 0.0, "end": 3.3}, {"start": 30.0, "end": en_then_es.size / SR}]
    expected, _ = once("multilingual-batched",
                       lambda: transcribe_batched(fw_model, en_then_es, multilingual=True, clip_timestamps=clips))
    segments, _ = transcribe_batched(tm, en_then_es, multilingual=True, clip_timestamps=clips)
    assert len(segments) == len(expected) == 2
    assert "password" in norm(segments[0].text) and "conferencia" in norm(segments[1].text)
    for segment, fw_segment in zip(segments, expected):
        assert_same_text(context, segment.text, fw_segment.text)


def test_hotwords(tm, context, fw_model, once, audio):
    """hotwords (faster-whisper's test_hotwords): base may hear "Veillez" in the French prompt; with the hotword
    "Veuillez" faster-whisper writes it on some CPUs, not on all (the int8 numbers decide), so the hotword is held
    to what faster-whisper does with it here: tokenmap writes it where faster-whisper does. Sequential, then
    batched."""
    clip = audio("fr-conf-getpin.flac")
    kw = dict(language="fr", hotwords="Veuillez")
    for name, run in (("sequential", transcribe), ("batched", transcribe_batched)):
        expected, _ = once(("hotwords", name), lambda: run(fw_model, clip, **kw))
        segments, info = run(tm, clip, **kw)
        assert info.transcription_options.hotwords == "Veuillez"
        assert "code" in norm(joined(expected)).split(), joined(expected)  # the prompt is heard
        if context == "full":
            assert ("Veuillez" in joined(segments)) == ("Veuillez" in joined(expected)), (name, joined(segments))
        # auto: the short context may change a word, the hotword too; held to the tolerance only
        assert_same_text(context, joined(segments), joined(expected))


def test_monotonic_timestamps(tm, context, once, audio):
    """Segment and word timestamps never go back (faster-whisper's test_monotonic_timestamps), sequential
    and batched, on the 25 s IVR menu (the decodes test_word_timestamps and test_batched_pipeline compare
    with faster-whisper's)."""
    menu = audio(PBX)
    segments, info = once(("words", context), lambda: transcribe(tm, menu, word_timestamps=True))
    assert len(segments) > 2
    assert_monotonic(segments, info.duration)

    kw = dict(language="en", without_timestamps=False, word_timestamps=True)
    segments, _ = once(("batched-words", context), lambda: transcribe_batched(tm, menu, **kw))
    assert_monotonic(segments, info.duration)


def test_clip_timestamps_batched(tm, context, fw_model, once, audio):
    """Two clips, one batch (faster-whisper's test_cliptimestamps_segments): one segment per clip, exactly
    on the clip's bounds. 11.0 s falls inside "To establish", so the second clip starts mid-word: there the
    short context may write another fragment ("Addablish") and, after it, run two words into one ("another"
    for "and other", seen with oneDNN capped to AVX-512 BF16): twice auto's usual tolerance."""
    clips = [{"start": 0.0, "end": 11.0}, {"start": 11.0, "end": 22.0}]
    menu = audio(PBX)
    expected, _ = once("clips-batched", lambda: transcribe_batched(fw_model, menu, language="en",
                                                                   clip_timestamps=clips))
    segments, _ = transcribe_batched(tm, menu, language="en", clip_timestamps=clips)
    assert len(segments) == 2
    for segment, clip, fw_segment in zip(segments, clips, expected):
        assert (segment.start, segment.end) == (clip["start"], clip["end"])
        assert_same_text(context, segment.text, fw_segment.text, auto_wer=2 * AUTO_WER)


def test_clip_timestamps_sequential(tm, context, fw_model, once, audio):
    """clip_timestamps on WhisperModel.transcribe: only the clips are decoded, timestamps in the whole file."""
    clips = [3.0, 10.4, 13.7, 19.8]  # "While those premier provider ... any time.", "To speak ... press three."
    menu = audio(PBX)
    expected, _ = once("clips", lambda: transcribe(fw_model, menu, language="en", clip_timestamps=clips))
    segments, _ = transcribe(tm, menu, language="en", clip_timestamps=clips)
    assert segments
    spans = list(zip(clips[::2], clips[1::2]))
    # faster-whisper pads a clip's last window and keeps the timestamp the model predicts there, so a segment may
    # end a little past its clip (by how much depends on the encoder's numbers): tokenmap's by at most what
    # faster-whisper's own segments do on these clips, or the context's timing tolerance
    overshoot = max([WORD_TIME_TOLERANCE[context]] + [s.end - end for s in expected for start, end in spans
                                                      if start <= s.start < end])
    for segment in segments:
        assert any(start <= segment.start < end and segment.end <= end + overshoot for start, end in spans), (
            segment, spans, overshoot)
    assert any(s.end <= 10.4 for s in segments) and any(s.start >= 13.7 for s in segments)
    assert_same_text(context, joined(segments), joined(expected))


@pytest.mark.parametrize("name, language", [("es-conf-getpin.flac", "es"), ("fr-conf-getpin.flac", "fr")])
def test_detect_language(tm, context, fw_model, once, audio, name, language):
    """WhisperModel.detect_language: faster-whisper's language; on the full context its probability too."""
    clip = audio(name)
    fw_language, fw_probability, _ = once(("detect", name), lambda: fw_model.detect_language(clip))
    detected, probability, all_probs = tm.detect_language(clip)
    assert detected == fw_language == language
    assert all_probs[0] == pytest.approx((detected, probability), abs=1e-6)
    if context == "full":
        assert probability == pytest.approx(fw_probability, abs=1e-3)
    else:  # the short context is another encoding of the same audio: a confident answer, not the same number
        assert probability > 0.5
