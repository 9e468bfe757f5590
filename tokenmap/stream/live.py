"""Live transcription of a growing audio buffer with self-speculative (biased) decoding.

Every update re-decodes the whole buffer (at most 30 s) on its audio plus a margin (``auto`` by default), and again
on :meth:`tokenmap.windows.EncodedWindow.full` when the :class:`tokenmap.decode.guarding.Guard` rejects that decode.
The previous update's hypothesis is the draft (Algorithm 1 of the self-speculative biased decoding paper), realigned
after each mismatch (:mod:`tokenmap.stream.previous_hypothesis`); beyond it the token map (or prompt lookup)
drafts, under a :class:`tokenmap.decode.gate.WindowGate` kept across updates.

Commit policy (LocalAgreement-2 over whole segments, :func:`agreed_segments`): a leading segment closed by a
timestamp (``<|t0|> text <|t1|>``; a trailing ``<|t0|> text`` is open) whose text is identical in the last
``agreement`` hypotheses is committed for good and the buffer cut at its end (the prompt holds no committed text).
A buffer that would exceed 30 s commits every closed segment (or the whole hypothesis); silence (high no-speech
probability, low log-probability) cuts it to its last second. Without a ``language``, every update detects it and
nothing commits until two in a row agree with at least :data:`tokenmap.windows.CONFIDENT` probability (a few
seconds of speech can sound like a neighbouring language at 0.5), or until the buffer fills.

Biased verification (paper eq. 5): where the previous hypothesis drafts ``d`` and greedy chooses ``c``, ``d`` is kept
when ``(1-beta) P(d) + beta >= (1-beta) P(c)``; beta = 0 (default) is exact greedy decoding.

Example::

    >>> eng = StreamModel.load("base", compute_type="int8")                    # doctest: +SKIP
    >>> st = StreamTranscriber(eng, StreamOptions(update_seconds=1.0))        # doctest: +SKIP
    >>> for update in st.run(FileSource(audio).chunks(1.0)):                  # doctest: +SKIP
    ...     print(update.committed_text, "|", update.tentative_text)
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from typing import Iterable, Iterator, Sequence

import numpy as np
from faster_whisper.feature_extractor import FeatureExtractor

from tokenmap.assembly import ModelOptions, open_model
from tokenmap.audio import SAMPLE_RATE
from tokenmap.context import WINDOW_FRAMES, as_audio_context
from tokenmap.decode.ct2math import softmax
from tokenmap.decode.drafters import default_drafter, lcp
from tokenmap.decode.gate import WindowGate
from tokenmap.decode.guarding import Guard, guarded_generate
from tokenmap.decode.loops import window_as_result
from tokenmap.decode.rules import DISABLED, GREEDY_KW, greedy_decode
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import DecodeStats, decode_window
from tokenmap.encoders import Output
from tokenmap.stream.metrics import StreamMetrics, UpdateRecord, mask_display
from tokenmap.stream.previous_hypothesis import PreviousHypothesisDrafter
from tokenmap.windows import CONFIDENT, EncodedWindow, Session

logger = logging.getLogger("tokenmap")

TS_SECONDS = 0.02  # one Whisper timestamp step


@dataclass(frozen=True)
class TokenSegment:
    """A parsed piece of a hypothesis: token range [begin, end), times in s (end None if open)."""

    begin: int
    end: int
    start: float
    stop: float | None
    text: tuple


def parse_segments(tokens: Sequence[int], ts0: int) -> list[TokenSegment]:
    """Split decoder output into segments: ``<|t0|> text <|t1|>`` (closed) or a trailing open one."""
    segments, i, n = [], 0, len(tokens)
    while i < n:
        begin, start = i, 0.0
        if tokens[i] >= ts0:
            start = (tokens[i] - ts0) * TS_SECONDS
            i += 1
        j = i
        while j < n and tokens[j] < ts0:
            j += 1
        text = tuple(tokens[i:j])
        if j < n:  # closing timestamp
            segments.append(TokenSegment(begin, j + 1, start, (tokens[j] - ts0) * TS_SECONDS, text))
            i = j + 1
        else:
            segments.append(TokenSegment(begin, j, start, None, text))
            i = j
    return [s for s in segments if s.text]


def agreed_segments(current: Sequence[TokenSegment], previous: Sequence[Sequence[TokenSegment]]) -> int:
    """How many leading closed segments of ``current`` have the same text in every earlier hypothesis."""
    count = 0
    for i, seg in enumerate(current):
        if seg.stop is None:
            break
        if not all(i < len(p) and p[i].stop is not None and p[i].text == seg.text for p in previous):
            break
        count += 1
    return count


def shift_timestamps(tokens: Sequence[int], ts0: int, ts_end: int, steps: int) -> list[int]:
    """``tokens`` with every timestamp moved ``steps`` positions earlier (clamped to the range)."""
    return [min(ts_end, max(ts0, t - steps)) if t >= ts0 else t for t in tokens]


@dataclass(frozen=True)
class StreamOptions:
    """``update_seconds``: audio per update; ``beta``: verification bias (0 = exact greedy); ``mask_k``:
    display-only mask of the last k tentative tokens; ``agreement``: hypotheses that must agree before a
    segment commits; ``scratch``: also decode every update from scratch (``"generate"`` or ``"reference"``)
    to time and check it."""

    update_seconds: float = 1.0
    beta: float = 0.0
    mask_k: int = 0
    language: str | None = "en"
    task: str = "transcribe"
    max_buffer_seconds: float = 30.0
    agreement: int = 2
    no_speech_threshold: float = 0.6
    logprob_threshold: float = -1.0
    scratch: str | None = None


@dataclass(frozen=True)
class StreamUpdate:
    """What the display needs after one update (times in seconds of audio)."""

    index: int
    audio_end: float
    committed_text: str
    new_committed_text: str
    tentative_text: str
    final: bool
    record: UpdateRecord


class StreamModel:
    """A :class:`tokenmap.assembly.Model` with what streaming needs: features, tokenizer, special ids, map, and
    the audio ``context`` a buffer is encoded with (``"auto"``, ``"full"`` or an :class:`AudioContext`)."""

    def __init__(self, model, special: SpecialTokens, tokenizer, token_map=None, cost=None, context="auto",
                 guard: Guard = Guard()):
        self.model, self.special, self.tokenizer, self.token_map = model, special, tokenizer, token_map
        self.cost = cost  # verify-pass cost curve: throttles the fallback drafter (None: no throttle)
        self.features = FeatureExtractor(feature_size=model.n_mels)
        self.context = as_audio_context(context)
        self.guard = guard

    @classmethod
    def load(cls, model: str = "base", compute_type: str = "int8", threads: int | None = None,
             token_map=None, decoder_compute_type: str = "auto", encoder: str = "auto",
             exact: bool = False, audio_context="auto") -> "StreamModel":
        """Load ``model`` (the options as in :func:`tokenmap.assembly.compose_model`); returns once the stock worker
        has loaded its model, so that the first update costs what the others do."""
        opened = open_model(model, ModelOptions(compute_type, threads or 0, decoder_compute_type, encoder,
                                                exact=exact, token_map=token_map), device="cpu")
        opened.wait_ready()
        return cls(opened, opened.special, opened.tokenizer, opened.token_map, opened.cost, audio_context)

    def token_id(self, token: str) -> int:
        found = self.tokenizer.token_to_id(token)
        if found is None:
            raise ValueError(f"the model has no token {token}")
        return found

    def encode(self, audio: np.ndarray) -> EncodedWindow:
        """``audio`` (<= 30 s) encoded by the model's window encoder on the stream's audio context: its features
        zero-padded to 3000 frames as faster-whisper does (:meth:`EncodedWindow.full` encodes them all)."""
        feats = self.features(audio)[:, :WINDOW_FRAMES]
        feats = np.pad(feats, ((0, 0), (0, WINDOW_FRAMES - feats.shape[1])))
        return self.model.windows.encode(feats, Session(self.context), seconds=len(audio) / SAMPLE_RATE)

    def text(self, tokens: Sequence[int]) -> str:
        return self.tokenizer.decode([t for t in tokens if t < self.special.eot])


def biased_accept(beta: float, drafter: PreviousHypothesisDrafter):
    """The ``accept`` predicate of :func:`decode_window` for paper eq. 5 (None when beta = 0); a token the rules
    disabled is never kept."""
    if beta <= 0:
        return None

    def accept(row: np.ndarray, tokens, draft: int, chosen: int) -> bool:
        if row[draft] <= DISABLED or not drafter.on_previous(tokens, draft):
            return False
        p = softmax(row)
        return bool((1 - beta) * p[draft] + beta >= (1 - beta) * p[chosen])

    return accept


@dataclass
class Decoded:
    """One decode of an update, a ``generate`` result to the guards (``decoded``: :mod:`tokenmap.decode.loops`')."""

    tokens: list
    seconds: float
    no_speech: float
    score: float
    drafted: int = 0
    accepted: int = 0
    decoded: list | None = None

    sequences_ids = property(lambda self: [self.tokens])
    scores = property(lambda self: [self.score])
    no_speech_prob = property(lambda self: self.no_speech)


class StreamTranscriber:
    """Transcribes audio pushed in chunks; one :meth:`update` per chunk (see the module doc)."""

    def __init__(self, engine: StreamModel, options: StreamOptions = StreamOptions()):
        self.engine, self.options = engine, options
        sp = engine.special
        self.ts0, self.ts_end = sp.timestamp_begin, sp.timestamp_end
        self.language = options.language
        if self.language is None and not getattr(engine.model, "is_multilingual", True):
            self.language = "en"  # faster-whisper's answer for an English-only model
        self.detecting = self.language is None  # the language may still change (module docstring)
        self._detected: str | None = None  # the last update's language, when it was likely enough
        self.buffer = np.zeros(0, np.float32)
        self.offset = 0.0  # absolute time of the buffer's first sample
        self.committed: list[int] = []
        self.previous: list[int] = []  # last hypothesis, relative to the buffer
        self.history: list[list[TokenSegment]] = []  # earlier hypotheses' segments, same buffer start
        self.metrics = StreamMetrics()
        self.finished = False
        cost = getattr(engine, "cost", None)
        self._controllers = WindowGate(cost) if cost is not None else None  # the fallback's, across updates

    @property
    def audio_end(self) -> float:
        return self.offset + len(self.buffer) / SAMPLE_RATE

    @property
    def committed_text(self) -> str:
        return self.engine.text(self.committed).strip()

    def push(self, samples: np.ndarray) -> None:
        self.buffer = np.concatenate([self.buffer, np.asarray(samples, np.float32).reshape(-1)])

    def run(self, chunks: Iterable[np.ndarray]) -> Iterator[StreamUpdate]:
        """Push every chunk and update after each; a last update commits everything."""
        for chunk in chunks:
            self.push(chunk)
            yield self.update()
        yield self.update(final=True)

    def prompt(self) -> list[int]:
        e = self.engine
        return [e.special.sot, e.token_id(f"<|{self.language}|>"), e.token_id(f"<|{self.options.task}|>")]

    def update(self, final: bool = False) -> StreamUpdate:
        """Decode the buffer, commit what agreed, trim; ``final`` commits everything."""
        started = time.perf_counter()
        audio_end, buffer_seconds = self.audio_end, len(self.buffer) / SAMPLE_RATE
        tokens, enc_s, dec, scratch = [], 0.0, Decoded([], 0.0, 1.0, 0.0), (None, None, None)
        short = guarded = False
        draft = self.previous[:]  # the previous update's hypothesis
        if len(self.buffer) >= SAMPLE_RATE // 10:  # less than 0.1 s: nothing to hear yet
            t = time.perf_counter()
            window = self.engine.encode(self.buffer)
            enc_s = full_s = time.perf_counter() - t  # full_s: the 30 s encode's time
            if self.detecting:
                self._detect(window)
            prompt, short = self.prompt(), window.short
            dec, guarded, seconds = self._guarded(window, prompt, draft)
            if guarded:  # the guard encoded the window as 30 s: what the decodes did not take
                full_s = seconds - dec.seconds
                enc_s += full_s
            if self.options.scratch:  # as whisper_streaming-style tools do: the buffer as 30 s, plain decoding
                if short and not guarded:  # time the 30 s encode
                    t = time.perf_counter()
                    window.full()
                    full_s = time.perf_counter() - t
                scratch = (*self._scratch(window.full(), prompt, dec.tokens), full_s)
            silent = dec.no_speech > self.options.no_speech_threshold and dec.score < self.options.logprob_threshold
            tokens = [] if silent else dec.tokens
        segments = parse_segments(tokens, self.ts0)
        commit = len(segments) if final else self._commit_count(segments, buffer_seconds)
        if commit or final:
            self.detecting = False
        new_text, latencies = self._commit(segments[:commit], audio_end + time.perf_counter() - started)
        self._trim(tokens, segments, commit, final)
        tentative = [t for s in segments[commit:] for t in s.text]
        record = UpdateRecord(
            index=len(self.metrics.updates), audio_end=audio_end, buffer_seconds=buffer_seconds,
            encode_seconds=enc_s, decode_seconds=dec.seconds, draft=len(draft),
            accepted=lcp(draft, dec.tokens) if draft else 0, output=len(dec.tokens),
            committed=tuple(self.committed), tentative=tuple(tentative), engine_drafted=dec.drafted,
            engine_accepted=dec.accepted, scratch_decode=scratch[0], scratch_same=scratch[1],
            scratch_encode=scratch[2], short=short, guarded=guarded, commit_latencies=tuple(latencies))
        self.metrics.updates.append(record)
        self.finished = final
        shown = mask_display([], tentative, 0 if final else self.options.mask_k)
        return StreamUpdate(record.index, audio_end, self.committed_text, new_text,
                            self.engine.text(shown).strip(), final, record)

    def _detect(self, window: EncodedWindow) -> None:
        """Detect the buffer's language; settle it when the last update named it too, both likely enough."""
        result = self.engine.model.detect_language(window)[0]
        language, probability = result[0][0].strip("<|>"), result[0][1]
        self.language = language
        likely = probability >= CONFIDENT
        self.detecting = not (likely and language == self._detected)
        self._detected = language if likely else None
        logger.info("detected language %s (p=%.2f)%s", language, probability, "" if self.detecting else ", settled")

    def _guarded(self, window: EncodedWindow, prompt: list[int], draft: list[int]) -> tuple[Decoded, bool, float]:
        """``(decoded, sent back to 30 s, seconds)``: the window decoded through ``WhisperModel``'s guards
        (:func:`tokenmap.decode.guarding.guarded_generate`); ``decoded`` counts every decode."""
        decodes, stats, started = [], DecodeStats(), time.perf_counter()

        def decode(output: Output, prompts, kwargs):
            decodes.append(self.decode(output.view, prompts[0], draft, **kwargs))
            return decodes[-1:]

        _, (dec,) = guarded_generate(decode, window, [prompt], GREEDY_KW, stats, self.engine,
                                     getattr(getattr(self.engine, "model", None), "verify_copy", None))
        dec = replace(dec, seconds=sum(d.seconds for d in decodes), drafted=sum(d.drafted for d in decodes),
                      accepted=sum(d.accepted for d in decodes))
        return dec, stats.guarded > 0, time.perf_counter() - started

    def decode(self, enc, prompt: list[int], draft: list[int], **kwargs) -> Decoded:
        """One decoding of the buffer (``kwargs``: CTranslate2's ``generate`` options): ``draft`` verified, the
        rest drafted by the map (or prompt lookup)."""
        e = self.engine
        t = time.perf_counter()
        fallback = default_drafter(e.token_map, e.special, controllers=self._controllers, cost=getattr(e, "cost", None))
        drafter = PreviousHypothesisDrafter(draft, self.ts0, fallback)
        r = decode_window(e.model.decoder, enc, prompt, e.special, drafter, biased_accept(self.options.beta, drafter),
                          loop=getattr(e.model, "loop", None), **kwargs)  # the loop stop's rule, None when off
        return Decoded(list(r.tokens), time.perf_counter() - t, r.no_speech_prob or 0.0, r.score,
                       r.stats.drafted, r.stats.accepted, window_as_result(r).decoded)

    def _scratch(self, output: Output, prompt: list[int], tokens: list[int]) -> tuple[float, bool]:
        """``(decode seconds, same tokens)`` of the update decoded from scratch on ``output``."""
        t = time.perf_counter()
        if self.options.scratch == "reference":
            out = greedy_decode(self.engine.model.decoder, output.view, prompt, self.engine.special, **GREEDY_KW).tokens
        else:
            plain = self.engine.model.plain.on(output.held)
            out = plain.generate(output.view, [prompt], **GREEDY_KW)[0].sequences_ids[0]
        return time.perf_counter() - t, list(out) == list(tokens)

    def _commit_count(self, segments: list[TokenSegment], buffer_seconds: float) -> int:
        need = self.options.agreement - 1
        agreed = len(self.history) >= need and not self.detecting  # nothing commits before the language settles
        count = agreed_segments(segments, self.history[-need:]) if agreed else 0
        closed = sum(1 for s in segments if s.stop is not None)
        cut = segments[count - 1].stop if count else 0.0
        if buffer_seconds - cut + self.options.update_seconds > self.options.max_buffer_seconds:
            count = closed if closed > count else len(segments)  # forced: keep the buffer under the cap
        return count

    def _commit(self, segments: list[TokenSegment], now: float) -> tuple[str, list[float]]:
        text_tokens = [t for s in segments for t in s.text]
        self.committed.extend(text_tokens)
        latencies = []
        for s in segments:
            stop = self.offset + (s.stop if s.stop is not None else len(self.buffer) / SAMPLE_RATE)
            latencies.append(max(0.0, now - stop))
        return self.engine.text(text_tokens).strip(), latencies

    def _trim(self, tokens: list[int], segments: list[TokenSegment], commit: int, final: bool) -> None:
        """Cut the buffer after the committed segments and rebase the draft and the agreement history."""
        buffer_seconds = len(self.buffer) / SAMPLE_RATE
        if final or (commit and segments[commit - 1].stop is None):
            cut = buffer_seconds  # everything committed
        elif commit:
            cut = min(segments[commit - 1].stop, buffer_seconds)
        elif not segments and not self.previous and buffer_seconds > 1.0:
            cut = buffer_seconds - 1.0  # silence twice: keep the last second, speech may be starting
        else:
            cut = 0.0
        rest = tokens[segments[commit - 1].end:] if commit else list(tokens)
        if cut > 0:
            samples = int(round(cut * SAMPLE_RATE))
            self.buffer = self.buffer[samples:]
            self.offset += samples / SAMPLE_RATE
            steps = int(round(cut / TS_SECONDS))
            rest = shift_timestamps(rest, self.ts0, self.ts_end, steps)
        self.previous = rest if len(self.buffer) else []
        current = parse_segments(rest, self.ts0)
        self.history = [h[commit:] for h in self.history] + [current]
        self.history = self.history[-max(1, self.options.agreement - 1):]
