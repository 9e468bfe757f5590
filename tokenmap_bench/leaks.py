"""The leak guard: nothing a system learns from may hold audio this run measures.

``--learn`` and ``--teacher`` transcripts and ``--recall`` indexes are checked against the measured
recordings by utterance id, by the studio take a line names (the same recording in any codec), and, for
an index, by the sound of each measured file's start (:func:`nearest_recorded`).

Example::

    >>> check_disjoint([], learn="")   # nothing to check: no error
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenmap_bench.data import ASTERISK_VOICES, SAME_AUDIO_COSINE, BenchDataError, Recording, features
from tokenmap_bench.metrics import normalize_text, word_errors


def check_disjoint(utterances, learn: str = "", teacher=(), recall: str = "", text_of=None) -> None:
    """Raise :class:`BenchDataError` when what a system learns from holds audio this run measures.

    ``learn`` and ``teacher`` (JSON lines) are checked by utterance ``id`` and by the
    recordings their lines name (``recording``, or ``prompt`` with ``lang``), the same
    studio take in any codec; ``recall`` (an index) by the recordings its header lists
    and by audio content: the mel fingerprint of each measured file's start against
    the index's (:data:`SAME_AUDIO_COSINE`), with the matched segment's text (``text_of``:
    token ids to text) the start of the measured reference.
    """
    for option, path in [("--learn", learn)] + [("--teacher", t) for t in teacher]:
        if path and str(path).endswith(".jsonl"):
            _check_lines(option, Path(path), utterances)
    if recall:
        _check_index(Path(recall), utterances, text_of)


def _line_recordings(line: dict) -> set:
    keys = {line["recording"]} if line.get("recording") else set()
    if line.get("prompt") and line.get("lang") in ASTERISK_VOICES:
        keys.add(f"{ASTERISK_VOICES[line['lang']]}/{line['prompt']}")
    return keys


def _refuse(path: Path, option: str, what: str, count: int, example: str) -> BenchDataError:
    return BenchDataError(f"{path} ({option}) holds {what} of {count} utterances this run measures (e.g. {example}): "
                          "learn from other recordings (the train split); an index of the whole inventory goes to "
                          "--recall-inventory, whose figure is labelled as such")


def _measured_keys(utterances) -> dict:
    """``{recording key: ids of the measured utterances that play it}``."""
    keys: dict = {}
    for u in utterances:
        for k in u.recordings:
            keys.setdefault(k, set()).add(u.id)
    return keys


def _check_lines(option: str, path: Path, utterances) -> None:
    ids = {u.id for u in utterances}
    keys = _measured_keys(utterances)
    seen_ids, seen_keys = set(), set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                obj = json.loads(line)
                seen_ids.add(obj.get("id"))
                seen_keys |= _line_recordings(obj)
    hits = (seen_ids & ids).union(*(keys[k] for k in seen_keys & set(keys)))
    if hits:
        raise _refuse(path, option, "transcripts of the recordings", len(hits), sorted(hits)[0])


def _check_index(path: Path, utterances, text_of=None) -> None:
    from tokenmap.maps.recallindex import RecallIndex

    index = RecallIndex.load(path)
    keys = _measured_keys(utterances)
    hits = set().union(*(keys[k] for k in set(index.header.get("recordings") or ()) & set(keys)))
    if hits:
        raise _refuse(path, "--recall", "the recordings", len(hits), sorted(hits)[0])
    same = [u.id for u in utterances if _same_take(index, u, text_of)]
    if same:
        raise _refuse(path, "--recall", "audio that sounds like the start", len(same), same[0])


def _same_take(index, utt: Recording, text_of=None) -> bool:
    """Whether ``index`` holds a segment that sounds like the start of ``utt`` and, given ``text_of``
    and a reference, says what the reference starts with (at most half its words wrong)."""
    cosine, tokens = nearest_recorded(index, utt)
    if cosine < SAME_AUDIO_COSINE:
        return False
    if text_of is None or not utt.text:
        return True
    said = normalize_text(text_of(tokens)).split()
    start = " ".join(normalize_text(utt.text).split()[:max(len(said), 1)])
    errors, words = word_errors(start, " ".join(said))
    return errors <= 0.5 * max(words, 1)


def nearest_recorded(index, utt: Recording) -> tuple[float, list[int]]:
    """``(cosine, tokens)``: the segment of ``index`` whose mel fingerprint is closest to the start of
    ``utt``'s audio."""
    import numpy as np

    from tokenmap.maps.audio_fingerprints import mel_candidates

    mel = np.asarray(features(utt)[0])[0]
    return index.nearest_mel(mel_candidates(mel, 0))
