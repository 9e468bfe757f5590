"""The guard around every ``generate`` of :class:`tokenmap.whisper.SpeculativeModel`.

Two failures of Whisper are caught here and decoded again, each as faster-whisper itself would
decode the window without the cause:

* **A short audio context that broke the window** (:class:`tokenmap.context.Guard`): the window
  was encoded as its audio plus a margin, and its output repeats itself, runs past the audio, never
  ends or has a low log-probability. The window is encoded again as 30 s and decoded on that (kept
  for the window's later calls, e.g. the temperature fallback). In a batch, only the rows the
  guard rejects are encoded and decoded again.
* **A copied prompt** (:meth:`tokenmap.context.Guard.copied`): faster-whisper conditions a window on
  the previous window's text, and Whisper sometimes writes that text again instead of what it hears,
  at any audio context: whole, or as phrases of it stitched together. A window whose text repeats a
  run of :attr:`Guard.copy_tokens` tokens of its prompt's previous text, or whose words lie mostly in
  word n-grams of it, is decoded again without that text, which is faster-whisper's
  ``condition_on_previous_text=False`` for that window alone (the encoder output is reused). Speech
  that really repeats is decoded again too: a false alarm costs a decode, and the window's text is
  then the one faster-whisper writes without the previous text.

Every decision is counted in the thread's :class:`tokenmap.decode.speculative.DecodeStats`
(``short_windows``, ``guarded``, ``prompt_copies``), which ``WhisperModel.last_stats()`` returns.
"""

from __future__ import annotations

import logging

import numpy as np

from tokenmap.context import WINDOW_FRAMES

logger = logging.getLogger("tokenmap")


class GuardedGeneration:
    """``generate`` with both guards, for a class that provides ``_generate`` (the decode itself),
    ``encode``, ``guard``, ``special``, ``text``, ``_local`` (``seconds``, ``mel``, ``short``, ``full``
    of the window this thread encoded last), ``_thread_stats`` and ``recorder``."""

    def generate(self, features, prompts, **kwargs):
        short = getattr(self._local, "short", None)
        if short is not None and features is short:
            features, results = self._guarded(features, prompts, kwargs)
        else:
            results = self._generate(features, prompts, **kwargs)
        if len(prompts) != 1:
            return results
        results = self._unless_copied(features, prompts, kwargs, results)
        if self.recorder is not None:
            frames = np.asarray(features)
            self.recorder.add_window(frames[0] if frames.ndim == 3 else frames, results[0].sequences_ids[0],
                                     self.special.timestamp_begin, mel=getattr(self._local, "mel", None))
        return results

    def _guarded(self, short, prompts, kwargs):
        """``(encoder output, results)`` of a window (or batch) encoded on a short context: the short decode
        where the guard accepts it, else the full context's."""
        if self._local.full is not None:  # an earlier call on this window was sent back already
            return self._local.full, self._generate(self._local.full, prompts, **kwargs)
        results = list(self._generate(short, prompts, **kwargs))
        rejected = []
        for row, (result, prompt) in enumerate(zip(results, prompts)):
            why = self._rejected(result, prompt, kwargs)
            if why is not None:
                logger.debug("short audio context rejected (%s): decoding the window with 30 s", why)
                rejected.append(row)
        stats = self._thread_stats()
        stats.short_windows += len(results)
        stats.guarded += len(rejected)
        if not rejected:
            return short, results
        import ctranslate2

        mel = np.asarray(self._local.mel, dtype=np.float32)
        mel = mel.reshape(-1, mel.shape[-2], WINDOW_FRAMES)
        full = self.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(mel[rejected])))
        if len(results) == 1:
            self._local.full = full
            return full, self._generate(full, prompts, **kwargs)
        for row, result in zip(rejected, self._generate(full, [prompts[i] for i in rejected], **kwargs)):
            results[row] = result
        return short, results

    def _rejected(self, result, prompt, kwargs) -> str | None:
        """Why the guard rejects one short-context result (None: it is kept)."""
        tokens = list(result.sequences_ids[0])
        score = result.scores[0] if result.scores else 0.0
        finished = len(prompt) + len(tokens) < kwargs.get("max_length", 448) - 1
        return self.guard.reason(tokens, seconds=getattr(self._local, "seconds", None) or 30.0, score=score,
                                 no_speech_prob=getattr(result, "no_speech_prob", 0.0), finished=finished,
                                 timestamp_begin=self.special.timestamp_begin, text=self.text(tokens))

    def _unless_copied(self, features, prompts, kwargs, results):
        """``results``, or the window decoded again without its previous text when it copied that text."""
        prompt = list(prompts[0])
        if not prompt or prompt[0] == self.special.sot:  # no previous text in the prompt
            return results
        start = self.special.sot_index(prompt)
        eot = self.special.eot
        history = [t for t in prompt[1:start] if t < eot]
        tokens = [t for t in results[0].sequences_ids[0] if t < eot]
        why = self.guard.copied(tokens, history, self.text(tokens), self.text(history))
        if why is None:
            return results
        logger.debug("the window copied its prompt (%s): decoding it without the previous text", why)
        self._thread_stats().prompt_copies += 1
        return self._generate(features, [prompt[start:]], **kwargs)
