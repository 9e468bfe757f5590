"""The prompt-copy probe (tokenmap.decode.copies): speech that really repeats keeps its text after a short
probe; a real copy is decoded again without the previous text."""

from tokenmap.decode.copies import CopyProbe, copy_start, probe_copy, says_again
from tokenmap.decode.loops import Result, steps_of

EOT, TS = 50257, 50364
PREVIOUS = list(range(1000, 1020))  # the previous window's text
TASK = [50258, 50259, 50359]


def text(ids):
    return " ".join(f"w{t}" for t in ids if t < EOT)


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
    assert probe_copy(decode, None, TASK, results, PREVIOUS, {"max_length": 448}, text, EOT) is None
    assert len(decode.calls) == 1 and steps_of(decode.calls[0], len(TASK)) < 40  # a probe, not a decode


def test_a_real_copy_is_decoded_without_the_previous_text_once_when_the_probe_ends():
    copied = [TS] + PREVIOUS[3:17] + [TS + 50]
    heard = [TS, 7, 8, 9, TS + 50]
    decode = Decoder({tuple(TASK): heard})
    again = probe_copy(decode, None, TASK, [Result([copied], [-0.1], 0.01)], PREVIOUS, {}, text, EOT)
    assert again[0].sequences_ids == [heard] and len(decode.calls) == 1


def test_a_real_copy_whose_probe_does_not_end_is_decoded_in_full():
    copied = [TS] + PREVIOUS + [TS + 50]
    heard = [TS] + list(range(3000, 3100)) + [TS + 900]
    decode = Decoder({tuple(TASK): heard})
    again = probe_copy(decode, None, TASK, [Result([copied], [-0.1], 0.01)], PREVIOUS, {"max_length": 448}, text,
                       EOT, CopyProbe())
    assert again[0].sequences_ids == [heard] and decode.calls[-1] == 448 and len(decode.calls) == 2


def test_the_passage_start_and_its_words():
    assert copy_start([TS, 5, 6, TS + 1], PREVIOUS, 3) is None
    assert copy_start([TS, 5] + PREVIOUS[4:9], PREVIOUS, 3) == 2
    assert not says_again("Press one for sales", "press two for sales", 4)
    assert says_again("Press one, for sales.", "Welcome. Press one for sales and", 4)
    assert says_again(" d'Hell, Answer et Hangup", " Dahl, Answer et Hangup pour", 4)  # a name spelt otherwise


def test_the_guard_keeps_speech_that_repeats_and_still_decodes_a_copy_again():
    """Through the guard (tokenmap.decode.guarding.guarded_generate): a window whose previous text is said again
    keeps its text after one short probe; a copy is decoded without the previous text, counted."""
    from types import SimpleNamespace

    from tokenmap.decode.guarding import Guard, guarded_generate
    from tokenmap.decode.speculative import DecodeStats
    from tokenmap.windows import EncodedWindow

    prev = 50361
    special = SimpleNamespace(sot=TASK[0], eot=EOT, timestamp_begin=TS, sot_index=lambda p: list(p).index(TASK[0]))
    said_again = [TS] + PREVIOUS + [TS + 50]
    heard = [TS, 7, 8, 9, TS + 50]
    for without_prompt, copy in ((said_again, False), (heard, True)):
        decode = Decoder({tuple([prev] + PREVIOUS + TASK): said_again, tuple(TASK): without_prompt})
        stats = DecodeStats()
        _, results = guarded_generate(lambda output, prompts, kwargs: decode(output, prompts, kwargs),
                                      EncodedWindow("features"), [[prev] + PREVIOUS + TASK], {}, stats, Guard(),
                                      special, text)
        assert results[0].sequences_ids[0] == (heard if copy else said_again)
        assert stats.prompt_copies == copy and stats.copies_kept == (not copy) and len(decode.calls) == 2
        assert steps_of(decode.calls[1], len(TASK)) < 40  # the second call is the probe
