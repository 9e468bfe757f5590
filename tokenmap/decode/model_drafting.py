"""The drafters of a model: what drafts come from, what they learned, and the decision to draft a window.

:class:`Drafting` holds ``token_map`` (the active map, or a list of maps; assign another to switch),
``recall``, ``session_cache`` and ``prompt_lookup``, the ``cost`` curve and one
:class:`~tokenmap.decode.gate.WindowGate` per active map. :meth:`Drafting.generate` decodes one
``generate`` call in the loop of :func:`tokenmap.decode.speculative.decode_window` where the call is greedy,
drafts are worth trying and the window gate lets it through, else on the plain decoder with the loop stop
(:class:`tokenmap.decode.loops.StoppingDecoder`), whose tokens are then replayed into the gate.
"""

from __future__ import annotations

import logging
import threading
import time

from tokenmap.decode.drafters import Heard, SessionCache, default_drafter, map_languages
from tokenmap.decode.gate import WindowGate
from tokenmap.decode.loops import StoppingDecoder
from tokenmap.decode.rules import supports_fast_path
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import DecodeStats, decode_window, replay_generated

logger = logging.getLogger("tokenmap")


class Drafting:
    """The drafting state of one model (module docstring); ``adaptive``: let the cost curve and the running
    acceptance decide how far to draft, and the window gate which windows to draft at all."""

    def __init__(self, special: SpecialTokens, cost=None, adaptive: bool = True, *, token_map=None, recall=None,
                 session_cache: SessionCache | None = None, prompt_lookup: bool = True):
        self.special = special
        self.cost = cost
        self.adaptive = adaptive and cost is not None
        self.token_map = token_map
        self.recall = recall
        self.session_cache = session_cache
        self.prompt_lookup = prompt_lookup
        self._per_map: dict[int, tuple[object, WindowGate]] = {}
        self._bypass_logged: set[str] = set()
        self._bypass_lock = threading.Lock()

    def make_drafter(self, controllers=None, seconds: float | None = None, audio=None, mel=None):
        """The drafter of one window: ``seconds`` of audio, ``audio`` its encoder output, ``mel`` its features."""
        return default_drafter(self.token_map, self.special, self.prompt_lookup, self.session_cache, controllers,
                               recall=self.recall, heard=Heard(seconds, audio, mel))

    def drafts_worth_trying(self, prompt=()) -> bool:
        """Whether a window may be decoded speculatively at all: only with a recall index, or a map built
        from text in the language its ``prompt`` names (or whose languages are not recorded). Prompt lookup
        and the session cache alone seldom save a pass, and plain ``generate`` is faster without drafts."""
        if self.recall is not None:
            return True
        if self.token_map is None:
            return False
        language = self.special.language_of(prompt) if prompt else None
        languages = map_languages(self.token_map) if language else None
        if languages is None or language in languages:
            return True
        self._log_bypass(f"language {language}", f"it was built from {', '.join(sorted(languages))} text, "
                                                 f"not {language}")
        return False

    def controllers(self) -> WindowGate | None:
        """The controllers of the active map (None when not adaptive)."""
        if not self.adaptive:
            return None
        active_map = self.token_map
        entry = self._per_map.get(id(active_map))
        if entry is None or entry[0] is not active_map:  # the map is kept, so its id is not reused
            entry = self._per_map[id(active_map)] = (active_map, WindowGate(self.cost))
        return entry[1]

    def generate(self, decoder, plain: StoppingDecoder, output, prompts, stats: DecodeStats, seconds=None, mel=None,
                 **kwargs):
        """``generate`` of ``prompts`` on encoder ``output`` (``seconds`` of audio, ``mel`` its features):
        drafted on ``decoder`` (the fork's step API), stopped by ``plain``'s loop rule and finished by it, or
        decoded by ``plain``; counted in ``stats``."""
        if len(prompts) != 1 or not supports_fast_path(prompt=prompts[0], special=self.special, **kwargs):
            stats.fallbacks += 1
            self._log_bypass(*bypass_reason(len(prompts), kwargs))
            return plain.generate(output, prompts, **kwargs)
        controllers = self.controllers()
        worth_trying = self.drafts_worth_trying(prompts[0])
        prompt = list(prompts[0])
        history = list(prompt[1: self.special.sot_index(prompt)]) if prompt[0] != self.special.sot else []
        if not worth_trying or (controllers is not None and not controllers.use_speculation()):
            started = time.perf_counter()
            result = plain.generate(output, prompts, **kwargs)
            window = DecodeStats(windows=1, plain_windows=1, tokens=len(result[0].sequences_ids[0]) + 1,
                                 decoder_seconds=time.perf_counter() - started)
            if controllers is not None and worth_trying:  # what the gate weighs the loop against
                controllers.record_plain(window.decoder_seconds, window.tokens)
                drafter = self.make_drafter(controllers, seconds, audio=output, mel=mel)
                controllers.record_replay(replay_generated(drafter, prompt, result[0].sequences_ids[0], self.special,
                                                           history))
            stats.add(window)
            return result
        drafter = self.make_drafter(controllers, seconds, audio=output, mel=mel)
        result = decode_window(decoder, output, prompt, self.special, drafter, loop=plain.loop, **kwargs)
        if controllers is not None:
            controllers.record_window(result.stats)
        stats.add(result.stats)
        return [plain.finish(prompt, result, kwargs.get("max_length", 448))]

    def _log_bypass(self, kind: str, message: str) -> None:
        """Log ``message`` the first time this model bypasses the map for reason ``kind``."""
        with self._bypass_lock:
            if kind in self._bypass_logged:
                return
            self._bypass_logged.add(kind)
        logger.warning("decoding without the token map: %s", message)


def bypass_reason(batch: int, kwargs: dict) -> tuple[str, str]:
    """Why a ``generate`` call cannot be drafted: ``(kind, advice)``, naming the option that made
    :func:`tokenmap.decode.rules.supports_fast_path` refuse (each tried alone on top of greedy search)."""
    if batch != 1:
        return "batch", (f"batched decoding ({batch} windows per generate call) is not drafted; "
                         "use WhisperModel.transcribe, which decodes one window at a time")
    culprits = [key for key, value in kwargs.items() if not supports_fast_path(**{"beam_size": 1, key: value})]
    if "sampling_topk" in culprits:  # faster-whisper's temperature fallback (num_hypotheses = best_of)
        return "sampling", (f"faster-whisper's temperature fallback re-decoded a window by sampling "
                            f"(temperature {kwargs.get('sampling_temperature', 1)}), which is not drafted; "
                            "pass temperature=0.0 to keep every window greedy")
    if "beam_size" in culprits:
        return "beam_size", (f"beam search (beam_size={kwargs['beam_size']}) has no single draft path to "
                             "verify; pass beam_size=1 (greedy) to decode with the map")
    if culprits:
        key = culprits[0]
        return key, (f"{key}={kwargs[key]!r} is not reproduced by draft verification, which decodes "
                     f"greedily; leave {key} at its default to decode with the map")
    return "prefix", ("a decoding prefix (faster-whisper's prefix=) is not drafted; "
                      "transcribe without prefix to decode with the map")
