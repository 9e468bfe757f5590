"""Map sets (several ``--map``): each member drafts as a single map's drafter would.

A member of a :class:`tokenmap.decode.drafters.MapSetDrafter` gets the calibrated cost
curve, the window's audio length and a running tally of its verified drafts that lives
as long as the thread's controllers, like the drafter of a single map.
"""

from types import SimpleNamespace

import numpy as np

from tokenmap.decode.cost import DEFAULT, CostModel
from tokenmap.decode.drafters import Heard, default_drafter
from tokenmap.decode.gate import WindowGate
from tokenmap.decode.speculative import replay_window
from tokenmap.maps.suffixmap import TokenMap

BOS, SEP = 9, 10
TS0, EOT = 100, 99
TOY = SimpleNamespace(eot=EOT, timestamp_begin=TS0, inner_marks=frozenset())  # a toy vocabulary's specials
LONG = list(range(20, 42))  # a 22-token utterance
OTHER = list(range(50, 60))


def _map(utterance, times=3):
    return TokenMap.from_stream(np.array([BOS, *utterance, SEP] * times, dtype=np.uint32), bos=BOS, sep=SEP,
                                 depth=32)


def _pair(cost, utterance=LONG, **kw):
    """The drafter of the single map of ``utterance``, and that of the set (it, OTHER), sharing nothing."""
    single = default_drafter(_map(utterance), TOY, prompt_lookup=False, controllers=WindowGate(cost), **kw)
    both = default_drafter([_map(utterance), _map(OTHER)], TOY, prompt_lookup=False, controllers=WindowGate(cost),
                           **kw)
    return single, both


def test_map_set_members_cut_drafts_on_the_calibrated_curve():
    flat = CostModel(10.0, (10.0,) * 32)  # verifying more tokens costs nothing: a draft runs to the utterance's end
    single, both = _pair(flat)
    both.draft(LONG[:0], 24)  # the set scores its maps on what the model emits next
    assert single.draft(LONG[:1], 24) == both.draft(LONG[:1], 24) == LONG[1:]


def test_map_set_members_guess_the_closing_timestamp_from_the_audio_length():
    short = LONG[:4]
    single, both = _pair(DEFAULT, short, heard=Heard(seconds=0.9))
    both.draft([TS0], 24)
    assert single.draft([TS0, short[0]], 24) == short[1:] + [TS0 + 100]  # <|2.00|>: the guess for 0.9 s of audio
    assert both.draft([TS0, short[0]], 24) == short[1:] + [TS0 + 100]


def test_map_set_members_learn_from_verified_drafts_across_windows():
    """A map whose drafts the model keeps only in part drafts less, window after window."""
    controllers = WindowGate(DEFAULT)
    truth = LONG[:3] + [60 + i for i in range(19)]  # the model leaves the map's text after 3 tokens
    drafted = []
    for _ in range(12):
        drafter = default_drafter([_map(LONG), _map(OTHER)], TOY, prompt_lookup=False, controllers=controllers)
        stats = replay_window(drafter, truth, EOT, with_timestamps=False, timestamp_begin=TS0)
        drafted.append(stats.drafted)
    assert drafted[0] > 0 and drafted[-1] < drafted[0]
