"""The guard around generate: prompt copies decoded again without the previous text, batches row by row."""

from types import SimpleNamespace

import numpy as np

from tokenmap.decode.guarding import Guard, copied_run, guarded_generate
from tokenmap.decode.speculative import DecodeStats
from tokenmap.runtime.engine import GenerationResult
from tokenmap.windows import EncodedWindow

SOT, EOT, PREV, TS = 50258, 50257, 50361, 50364
TASK = [SOT, 50259, 50359]
PREVIOUS = list(range(1000, 1020))  # the previous window's text


class Stand:
    """A decoder that answers from a table: prompt (as a tuple) -> tokens; ``generate`` guarded."""

    def __init__(self, answers, guard=Guard()):
        self.answers = answers
        self.guard = guard
        self.special = SimpleNamespace(sot=SOT, eot=EOT, timestamp_begin=TS,
                                       sot_index=lambda prompt: list(prompt).index(SOT), language_of=lambda p: None)
        self.text = lambda ids: " ".join(str(t) for t in ids if t < EOT)  # text tokens as words
        self.stats = DecodeStats()
        self.calls = []

    def generate(self, features, prompts, **kwargs):
        window = features if isinstance(features, EncodedWindow) else EncodedWindow(features)
        return guarded_generate(self._generate, window, prompts, kwargs, self.stats, self)[1]

    def _generate(self, features, prompts, kwargs):
        self.calls.append([list(p) for p in prompts])
        return [GenerationResult([self.answers[tuple(p)]], [-0.2], 0.01) for p in prompts]


def test_a_window_that_copies_its_previous_text_is_decoded_without_it():
    copied = [TS] + PREVIOUS[3:17] + [TS + 50]
    heard = [TS, 7, 8, 9, TS + 50]
    model = Stand({tuple([PREV] + PREVIOUS + TASK): copied, tuple(TASK): heard})
    result = model.generate("features", [[PREV] + PREVIOUS + TASK])
    assert result[0].sequences_ids == [heard]
    assert model.calls[-1] == [TASK] and model.stats.prompt_copies == 1


def test_with_the_copy_guard_off_a_copy_keeps_its_text():
    copied = [TS] + PREVIOUS[3:17] + [TS + 50]
    model = Stand({tuple([PREV] + PREVIOUS + TASK): copied}, guard=Guard(copies=False))
    assert model.generate("features", [[PREV] + PREVIOUS + TASK])[0].sequences_ids == [copied]
    assert len(model.calls) == 1 and model.stats.prompt_copies == 0 and model.stats.copies_kept == 0


def test_a_short_echo_of_the_previous_text_is_kept():
    echo = [TS] + PREVIOUS[:5] + [42, TS + 50]  # five tokens again: a phrase said twice, not a copy
    model = Stand({tuple([PREV] + PREVIOUS + TASK): echo})
    assert model.generate("features", [[PREV] + PREVIOUS + TASK])[0].sequences_ids == [echo]
    assert len(model.calls) == 1 and model.stats.prompt_copies == 0


def test_a_window_of_phrases_of_the_previous_text_stitched_together_is_decoded_without_it():
    stitched = [TS] + PREVIOUS[2:6] + [TS + 20, TS + 20] + PREVIOUS[11:17] + [TS + 50]  # 4 and 6 words
    heard = [TS, 7, 8, 9, TS + 50]
    model = Stand({tuple([PREV] + PREVIOUS + TASK): stitched, tuple(TASK): heard})
    assert copied_run(stitched, PREVIOUS, Guard().copy_tokens) == 0  # no run of 12 tokens of the previous text
    assert model.generate("features", [[PREV] + PREVIOUS + TASK])[0].sequences_ids == [heard]
    assert model.stats.prompt_copies == 1


def test_a_window_that_shares_a_phrase_with_the_previous_text_is_kept():
    shared = [TS] + PREVIOUS[4:8] + [41, 42, 43, 44, 45, 46] + [TS + 50]  # 4 of 10 words
    model = Stand({tuple([PREV] + PREVIOUS + TASK): shared})
    assert model.generate("features", [[PREV] + PREVIOUS + TASK])[0].sequences_ids == [shared]
    assert len(model.calls) == 1 and model.stats.prompt_copies == 0


def test_a_prompt_without_previous_text_is_never_redecoded():
    model = Stand({tuple(TASK): [TS] + PREVIOUS + [TS + 50]})
    model.generate("features", [TASK])
    assert len(model.calls) == 1 and model.stats.prompt_copies == 0


def test_a_batch_on_a_short_context_sends_back_only_the_rows_the_guard_rejects():
    good, looping = [TS, 5, 6, TS + 40], [TS] + [9, 9, 9, 9, 9, 9] + [TS + 40]
    short_out, full_out = "short", "full"

    class Encoder:
        def encode_held(self, features):
            self.encoded = np.asarray(features)
            return full_out

    class Batched(Stand):
        def _generate(self, features, prompts, kwargs):
            self.calls.append((features, len(prompts)))
            if features == short_out:
                return [GenerationResult([good], [-0.2], 0.0), GenerationResult([looping], [-0.2], 0.0)]
            return [GenerationResult([good[:2] + [TS + 40]], [-0.2], 0.0)] * len(prompts)

    model, encoder = Batched({}), Encoder()
    mel = np.stack([np.full((80, 3000), i, np.float32) for i in range(2)])
    results = model.generate(EncodedWindow(short_out, 4.0, mel, short=True, encoder=encoder), [TASK, TASK])
    assert encoder.encoded.shape == (1, 80, 3000) and encoder.encoded[0, 0, 0] == 1  # the second row only
    assert [r.sequences_ids[0] for r in results] == [good, good[:2] + [TS + 40]]
    assert model.calls == [(short_out, 2), (full_out, 1)]
    assert model.stats.short_windows == 2 and model.stats.guarded == 1
