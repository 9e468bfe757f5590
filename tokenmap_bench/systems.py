"""The decoding systems compared by ``tokenmap bench``, on one encoded window each.

Every system is a callable ``run() -> Output`` built for one utterance; the
harness times the call. All share the same encoder output (encoded once by
the main model) and the generate options :data:`GREEDY_KW`, the ones
faster-whisper passes for greedy decoding:

* ``greedy``       ``engine.generate(beam_size=1)`` on the fork (the paper's baseline)
* ``tokenmap``     :func:`tokenmap.decode.speculative.decode_window` with the task's map
  (``default_drafter``: map, then prompt lookup) and the calibrated controller
* ``tokenmap-mismatch``  the same with the maintenance map (open-domain audio only)
* ``oracle``       ``decode_window`` drafting the greedy output itself (the ceiling)
* ``greedy-nots``  greedy without timestamps: the baseline of ``distil-spec``
* ``distil-spec``  the fork's ``generate_speculative``, tiny.en drafting for the main
  model (English only; no timestamp rules, so always ``<|notimestamps|>``);
  its draft encoder (``tiny.encode``) is inside the timed call
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from tokenmap.assembly import ModelOptions, open_model
from tokenmap.decode.control import AcceptanceController
from tokenmap.decode.drafters import FixedDrafter, Heard, default_drafter
from tokenmap.decode.gate import WindowGate
from tokenmap.decode.rules import GREEDY_KW
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import DecodeStats, decode_window

log = logging.getLogger("tokenmap")



class RecordingController(AcceptanceController):
    """An acceptance controller that also keeps ``(drafted, accepted)`` of every verified draft in ``log``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log: list[tuple[int, int]] = []

    def update(self, drafted: int, accepted: int) -> None:
        if drafted:
            self.log.append((drafted, accepted))
        super().update(drafted, accepted)


class RecordingWindowGate(WindowGate):
    """Per-source controllers that record their drafts (:class:`RecordingController`)."""

    controller = RecordingController


@dataclass
class Output:
    """What one system run produced: tokens (no prompt, no EOT) and draft counters."""

    tokens: list
    stats: dict = field(default_factory=dict)
    drafts_log: list = field(default_factory=list)  # (drafted, accepted) per verified draft


def vocabulary(model_dir: Path) -> list[str]:
    return (Path(model_dir) / "vocabulary.txt").read_text(encoding="utf-8").splitlines()


def vocab_maps(main_vocab: list[str], draft_vocab: list[str]) -> tuple[list[int], list[int]]:
    """``(d2m, m2d)`` id tables matched by token string, -1 where a token has no twin."""
    main_ids = {tok: i for i, tok in enumerate(main_vocab)}
    draft_ids = {tok: i for i, tok in enumerate(draft_vocab)}
    return [main_ids.get(t, -1) for t in draft_vocab], [draft_ids.get(t, -1) for t in main_vocab]


@dataclass
class BenchModels:
    """Loaded models and what the systems need besides the audio."""

    main: object
    special: SpecialTokens
    vocab: list
    cost: object
    draft: object = None
    d2m: list = field(default_factory=list)
    m2d: list = field(default_factory=list)
    spec_tokens: int = 4
    controllers: dict = field(default_factory=dict)  # task -> its WindowGate

    def prompt(self, lang: str, timestamps: bool) -> list[int]:
        ids = {t: i for i, t in enumerate(self.vocab[self.special.eot:], self.special.eot)}
        prompt = [self.special.sot]
        if f"<|{lang}|>" in ids and self.main.is_multilingual:
            prompt += [ids[f"<|{lang}|>"], ids["<|transcribe|>"]]
        return prompt + ([] if timestamps else [self.special.no_timestamps])


def load_models(model_dir: Path, compute_type: str, threads: int, draft_dir: Path | None,
                 spec_tokens: int = 4, encoder: str = "auto") -> BenchModels:
    """The models the systems decode with: the main Whisper model, and the distil-spec draft model from
    ``draft_dir`` when given. ``encoder`` chooses the engine that encodes each window once for all the
    systems (:mod:`tokenmap.encoders.choice`); CTranslate2 encodes in process (the fork), not in a worker."""
    import ctranslate2

    from tokenmap.encoders.choice import choose

    # the main model decodes at its own precision; the encoder output is shared by every system
    engines = choose(encoder, model_dir, compute_type, threads).engines()
    opened = open_model(model_dir, ModelOptions(compute_type, threads, decoder_compute_type="same",
                                                encoder=encoder if engines == {"openvino"} else "fork"))
    vocab = vocabulary(model_dir)
    eng = BenchModels(opened, opened.special, vocab, opened.cost, spec_tokens=spec_tokens)
    if draft_dir is not None:
        eng.draft = ctranslate2.models.Whisper(str(draft_dir), device="cpu", compute_type=compute_type,
                                               intra_threads=threads)
        eng.d2m, eng.m2d = vocab_maps(vocab, vocabulary(draft_dir))
        log.info("distil-spec: %d of %d draft tokens map to the main vocabulary",
                 sum(i >= 0 for i in eng.d2m), len(eng.d2m))
    return eng


def greedy(eng: BenchModels, enc, prompt):
    """Plain greedy decoding of one window (the baseline): a callable that decodes once and returns its Output."""
    def run() -> Output:
        result = eng.main.plain.generate(enc, [prompt], **GREEDY_KW)[0]
        return Output(list(result.sequences_ids[0]))
    return run


def speculative(eng: BenchModels, enc, prompt, token_map, task: str = "", seconds: float | None = None,
                recall=None, mel=None):
    """The product's path: one set of per-source controllers per ``task`` (as
    one user's ``tokenmap.WhisperModel`` keeps them across windows), which
    may send a whole window to plain ``generate`` while drafting does not pay.
    ``seconds``: the audio in the window (what ``tokenmap.WhisperModel`` reads off its features);
    ``recall``: a :class:`tokenmap.maps.recallindex.RecallIndex` drafting segments heard before (``mel``: the
    window's features, by which it finds them inside the window too)."""
    controllers = eng.controllers.setdefault(task, RecordingWindowGate(eng.cost))

    def run() -> Output:
        start = [len(m.log) for m in controllers.members]
        if not controllers.use_speculation():
            result = eng.main.plain.generate(enc, [prompt], **GREEDY_KW)[0]
            return Output(list(result.sequences_ids[0]), DecodeStats(windows=1, plain_windows=1).as_dict())
        drafter = default_drafter(token_map, eng.special, controllers=controllers, cost=eng.cost, recall=recall,
                                  heard=Heard(seconds, enc, mel))
        own = [d for d in drafter.drafters if hasattr(d, "log")]  # drafters that set their own length
        for d in own:
            d.log = []
        result = decode_window(eng.main.decoder, enc, prompt, eng.special, drafter, **GREEDY_KW)
        controllers.record_window(result.stats)
        log = [entry for m, n in zip(controllers.members, start + [0] * len(controllers.members))
               for entry in m.log[n:]] + [entry for d in own for entry in d.log]
        return Output(result.tokens, result.stats.as_dict(), log)
    return run


def oracle(eng: BenchModels, enc, prompt, greedy_tokens):
    """Drafts that are the greedy output itself (the upper bound of drafting): a callable that decodes once."""
    sequence = list(greedy_tokens) + [eng.special.eot]

    def run() -> Output:
        result = decode_window(eng.main.decoder, enc, prompt, eng.special, FixedDrafter(sequence), **GREEDY_KW)
        return Output(result.tokens, result.stats.as_dict())
    return run


def distil_spec(eng: BenchModels, features, enc, prompt):
    """tiny.en drafting: ``features`` (mel StorageView) are encoded by the draft inside the call.

    The fork's loop may run up to K tokens past ``max_length`` and then fails
    ("no position encodings ... >= 448") on a window that decodes to the
    limit (a repetition loop), so its ``max_length`` leaves room for one draft.
    """
    suppress = list(eng.special.suppress_ids)
    max_length = GREEDY_KW["max_length"] - len(prompt) - eng.spec_tokens - 1

    def run() -> Output:
        draft_enc = eng.draft.encode(features)
        tokens = eng.main.decoder.generate_speculative(
            eng.draft, enc, draft_enc, prompt=list(prompt), num_speculative_tokens=eng.spec_tokens,
            max_length=max_length, eot_id=eng.special.eot, suppress_tokens=suppress,
            d2m=eng.d2m, m2d=eng.m2d)
        tokens = list(tokens)
        if tokens and tokens[-1] == eng.special.eot:
            tokens.pop()
        return Output(tokens)
    return run
