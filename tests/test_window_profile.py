"""benchmarks/window_profile.py's classifier of rejected drafts, on a toy vocabulary and map."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tokenmap.maps.suffixmap import TokenMap

_spec = importlib.util.spec_from_file_location(
    "tokenmap_window_profile", Path(__file__).resolve().parent.parent / "benchmarks" / "window_profile.py")
wp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wp)

EOT, TS = 50, 51  # ids above EOT are timestamps
WORDS = {1: " please", 2: " enter", 3: " your", 4: " pin", 5: " can", 6: " cancel", 7: ",", 8: " the", 9: " code",
         10: "cel"}
BOS, SEP = 40, 41


def losses():
    return wp.Losses(SimpleNamespace(eot=EOT), lambda ids: "".join(WORDS.get(t, "") for t in ids if t < EOT))


def toy_map():
    # "please enter your pin" and "please enter the code"
    stream = np.array([BOS, 1, 2, 3, 4, SEP, BOS, 1, 2, 8, 9, SEP], dtype=np.uint32)
    return TokenMap.from_stream(stream, bos=BOS, sep=SEP, depth=8)


def test_each_class_of_first_wrong_token():
    lo, tm = losses(), toy_map()
    kind = lambda context, drafted, model: lo.kind(context, drafted, model, tm)  # noqa: E731
    assert kind([TS, 1, 2], [TS + 40], [TS + 60]) == "another time"
    assert kind([TS, 1, 2], [TS + 40], [3, 4]) == "segment went on"
    assert kind([TS, 1, 2], [3, 4], [EOT]) == "segment ended"
    assert kind([TS, 1], [2, 3], [8, 9]) == "first words"
    assert kind([TS, 1, 2, 3], [6], [5, 10]) == "tokenization"  # " can" "cel" where the draft has " cancel"
    assert kind([TS, 1, 2, 3], [6], [5, 1]) != "tokenization"  # " can" and another word
    assert kind([TS, 1, 2, 3], [4], [7, 4]) == "punctuation"
    assert kind([TS, 1, 2], [3, 4], [8, 9]) == "map branch"  # "enter the" is in the map too
    assert kind([TS, 1, 2], [3, 4], [9]) == "unseen"


def test_rejected_drafts_are_counted_once_per_pass_with_the_tokens_they_lost():
    lo = losses()
    # a window: [TS] + draft [1, 2, 3, 4] kept up to 3 (model wrote " the"), then " code" and the end
    lo.passes += [([], [TS, 1, 2, 3, 4], 3, 8), ([TS, 1, 2, 8], [9], 1, EOT)]
    lo.classify(toy_map())
    assert lo.counts["map branch"] == 1 and lo.lost["map branch"] == 2
    assert sum(lo.counts.values()) == 1 and not lo.passes
