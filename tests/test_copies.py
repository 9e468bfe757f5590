"""The prompt-copy probe (tokenmap.decode.copies): speech that really repeats keeps its text after a short
probe; a real copy is decoded again without the previous text."""

from types import SimpleNamespace

from tokenmap.decode.copies import copy_start, probe_copy, says_again
from tokenmap.decode.guarding import Guard
from tokenmap.decode.loops import Result, steps_of

EOT, TS = 50257, 50364
PREVIOUS = list(range(1000, 1020))  # the previous window's text
TASK = [50258, 50259, 50359]


def text(ids):
    return " ".join(f"w{t}" for t in ids if t < EOT)


def judge(text):
    """What the probe reads from the model: ``text``, the special tokens and the guard's probe options."""
    return SimpleNamespace(text=text, special=SimpleNamespace(eot=EOT, language_of=lambda p: None), guard=Guard())


class Decoder:
    """Answers a prompt (as a tuple) with scripted tokens, cut at the steps ``max_length`` allows."""

    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def __call__(self, output, prompts, kwargs):
        max_length = kwargs.get("max_length", 448)
        self.calls.append(max_length)
        return [Result([self.answers[tuple(p)][: steps_of(max_length, len(p))]], [-0.2], 0.01) for p in prompts]


def test_speech_that_really_repeats_keeps_its_text_after_a_short_probe():
    said_again = [TS] + PREVIOUS + [TS + 50, TS + 50] + list(range(2000, 2100)) + [TS + 900]  # a long window
    decode = Decoder({tuple(TASK): said_again})
    results = [Result([said_again], [-0.2], 0.01)]
    assert probe_copy(decode, None, TASK, results, PREVIOUS, {"max_length": 448}, judge(text)) is None
    assert len(decode.calls) == 1 and steps_of(decode.calls[0], len(TASK)) < 40  # a probe, not a decode


def test_a_real_copy_is_decoded_without_the_previous_text_once_when_the_probe_ends():
    copied = [TS] + PREVIOUS[3:17] + [TS + 50]
    heard = [TS, 7, 8, 9, TS + 50]
    decode = Decoder({tuple(TASK): heard})
    again = probe_copy(decode, None, TASK, [Result([copied], [-0.1], 0.01)], PREVIOUS, {}, judge(text))
    assert again[0].sequences_ids == [heard] and len(decode.calls) == 1


def test_a_real_copy_whose_probe_does_not_end_is_decoded_in_full():
    copied = [TS] + PREVIOUS + [TS + 50]
    heard = [TS] + list(range(3000, 3100)) + [TS + 900]
    decode = Decoder({tuple(TASK): heard})
    again = probe_copy(decode, None, TASK, [Result([copied], [-0.1], 0.01)], PREVIOUS, {"max_length": 448},
                       judge(text))
    assert again[0].sequences_ids == [heard] and decode.calls[-1] == 448 and len(decode.calls) == 2


def test_the_passage_start_and_its_words():
    assert copy_start([TS, 5, 6, TS + 1], PREVIOUS, 3) is None
    assert copy_start([TS, 5] + PREVIOUS[4:9], PREVIOUS, 3) == 2
    assert not says_again("Press one for sales", "press two for sales", 4)
    assert says_again("Press one, for sales.", "Welcome. Press one for sales and", 4)
    assert says_again(" d'Hell, Answer et Hangup", " Dahl, Answer et Hangup pour", 4)  # a name spelt otherwise
    assert says_again(" And Mr. John Dashwood had", " Mr. John Dashwood had then", 4)  # its first word left out
    assert not says_again(" And press one for sales", " Press two for sales now", 4)
    assert not says_again(" And Mr. John Dashwood", " Mr. John Dashwood had", 4)  # three words are not four
    # a number in words or in digits, as the prompt makes Whisper write it; but not another number
    assert says_again(" four or six to decrease", " The conference, 3 to eject, 4 or 6 to decrease", 4, language="en")
    assert not says_again(" four or six to decrease", " 4 or 6 to decrease", 4)  # no language: digits stay
    assert not says_again(" press one for sales", " Press 2 for sales.", 4, language="en")
    assert says_again(" appuyez sur quatre pour", " Appuyez sur 4 pour", 4, language="fr")
    assert says_again(" your touch tone keypad use", " Using your touchtone keypad, use the 7 key", 4)
    assert says_again(" the touchtone keypad", " the touch tone keypad", 3)


def test_the_guard_keeps_speech_that_repeats_and_still_decodes_a_copy_again():
    """Through the guard (tokenmap.decode.guarding.guarded_generate): a window whose previous text is said again
    keeps its text after one short probe; a copy is decoded without the previous text, counted."""
    from types import SimpleNamespace

    from tokenmap.decode.guarding import Guard, guarded_generate
    from tokenmap.decode.speculative import DecodeStats
    from tokenmap.windows import EncodedWindow

    prev = 50361
    special = SimpleNamespace(sot=TASK[0], eot=EOT, timestamp_begin=TS, sot_index=lambda p: list(p).index(TASK[0]),
                              language_of=lambda p: None)
    said_again = [TS] + PREVIOUS + [TS + 50]
    heard = [TS, 7, 8, 9, TS + 50]
    for without_prompt, copy in ((said_again, False), (heard, True)):
        decode = Decoder({tuple([prev] + PREVIOUS + TASK): said_again, tuple(TASK): without_prompt})
        stats = DecodeStats()
        _, results = guarded_generate(lambda output, prompts, kwargs: decode(output, prompts, kwargs),
                                      EncodedWindow("features"), [[prev] + PREVIOUS + TASK], {}, stats,
                                      SimpleNamespace(guard=Guard(), special=special, text=text))
        assert results[0].sequences_ids[0] == (heard if copy else said_again)
        assert stats.prompt_copies == copy and stats.copies_kept == (not copy) and len(decode.calls) == 2
        assert steps_of(decode.calls[1], len(TASK)) < 40  # the second call is the probe


def test_a_drafted_probe_decides_and_only_a_copy_is_decoded():
    """With ``verify`` (a greedy decode drafted from the window's tokens), the probe is that decode, greedy also in
    a sampled window: speech that repeats costs no ``generate`` call; a copy is decoded in full by ``decode``
    (sampled as the window was), once."""
    said_again = [TS] + PREVIOUS + [TS + 50]
    heard = [TS, 7, 8, 9, TS + 50]
    for probe, copy in ((said_again, False), (heard, True)):
        decode, asked = Decoder({tuple(TASK): heard}), []

        def verify(output, prompt, kwargs, expected, probe=probe):
            asked.append((list(expected), kwargs["max_length"], kwargs))
            return probe[: steps_of(kwargs["max_length"], len(prompt))]

        sampled = {"max_length": 448, "sampling_topk": 0, "sampling_temperature": 0.2, "num_hypotheses": 5}
        again = probe_copy(decode, None, TASK, [Result([said_again], [-0.2], 0.01)], PREVIOUS, sampled,
                           judge(text), verify=verify)
        assert asked[0][0] == said_again and steps_of(asked[0][1], len(TASK)) < 40  # drafted from the window, short
        assert (again is None) == (not copy)
        assert decode.calls == ([448] if copy else [])
        assert not asked[0][2].keys() & {"sampling_topk", "sampling_temperature", "num_hypotheses"}  # greedy


def test_without_a_drafted_probe_the_generate_probe_runs():
    said_again = [TS] + PREVIOUS + [TS + 50]
    decode = Decoder({tuple(TASK): said_again})
    assert probe_copy(decode, None, TASK, [Result([said_again], [-0.2], 0.01)], PREVIOUS, {"max_length": 448},
                      judge(text), verify=lambda *args: None) is None
    assert len(decode.calls) == 1


def test_a_window_whose_prompt_holds_its_own_words_is_kept_after_a_drafted_probe(base_model_dir, data_dir,
                                                                               monkeypatch):
    """The real model: a 25 s IVR menu whose previous text is the menu's own transcript (a menu played again).
    The guard finds the copy, the probe is drafted on the fork (no second ``generate``), and the window keeps the
    text a decode without the guard gives."""
    from tokenmap import WhisperModel
    from tokenmap.audio import load_audio
    from tokenmap.decode.guarding import Guard
    from tokenmap.decode.plain import PlainDecoder

    audio = load_audio(str(data_dir / "en-basic-pbx-ivr-main.flac"))
    model = WhisperModel(str(base_model_dir), compute_type="int8", cpu_threads=2, encoder="ctranslate2",
                         session_cache=False)
    options = dict(language="en", vad_filter=False, temperature=0.0, without_timestamps=True)
    menu = " ".join(s.text.strip() for s in model.transcribe(audio, **options)[0])
    calls = []
    generate = PlainDecoder.generate
    monkeypatch.setattr(PlainDecoder, "generate", lambda self, *a, **k: calls.append(1) or generate(self, *a, **k))
    guarded = " ".join(s.text.strip() for s in model.transcribe(audio, initial_prompt=menu, **options)[0])
    stats = model.last_stats()
    assert stats["copies_kept"] == 1 and stats["prompt_copies"] == 0 and len(calls) == 1
    model.model.guard = Guard(copies=False)
    assert guarded == " ".join(s.text.strip() for s in model.transcribe(audio, initial_prompt=menu, **options)[0])


def test_a_probe_that_writes_more_tokens_before_the_passage_goes_on_until_it_reaches_it():
    """The window writes ten words without punctuation, then speech that repeats its previous text; the probe
    (without the previous text) punctuates them, so its first steps end before the passage: it goes on."""
    comma = 3000

    def punctuated(ids):
        return " ".join("," if t == comma else f"w{t}" for t in ids if t < EOT)

    before = list(range(2001, 2011))
    window = [TS] + before + PREVIOUS[:12] + [TS + 50]
    heard = [TS] + [t for w in before for t in (w, comma)] + PREVIOUS[:12] + [TS + 50]
    decode = Decoder({tuple(TASK): heard})
    assert probe_copy(decode, None, TASK, [Result([window], [-0.2], 0.01)], PREVIOUS, {"max_length": 448},
                      judge(punctuated)) is None
    assert len(decode.calls) == 2 and decode.calls[1] > decode.calls[0]
