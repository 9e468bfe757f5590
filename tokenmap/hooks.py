"""The steps tokenmap replaces that faster-whisper reaches only through a module function, for tokenmap's calls.

A subclass cannot override these, and copying the functions that call them (``transcribe``,
``generate_with_fallback``, the batched ``forward``) would be worse. :func:`install` puts a dispatcher in front
of each, once per process. Within :func:`within`, which sets a ``contextvars.ContextVar`` to a tokenmap call's
:class:`tokenmap.windows.Session`, it answers with tokenmap's step; elsewhere (a stock
``faster_whisper.WhisperModel`` in the same process and thread, say) with faster-whisper's own:

* ``faster_whisper.vad.get_vad_model``: :class:`tokenmap.vad.PiecewiseVad` (one batch of rows at a time);
* ``faster_whisper.transcribe.collect_chunks``: :func:`tokenmap.vad.collect_chunks` (the chunks as views);
* ``faster_whisper.transcribe.get_compression_ratio``: for a decode the loop stop cut (:mod:`tokenmap.decode.loops`),
  the ratio the loop would have reached, from the session's ``ratios``, so faster-whisper's fallback runs as on it.

Example::

    >>> import faster_whisper.transcribe as fw
    >>> from tokenmap.windows import Session
    >>> install()
    >>> with within(Session(ratios={"Thank you.": 38.4})):
    ...     fw.get_compression_ratio(" Thank you.")
    38.4
    >>> fw.get_compression_ratio("Thank you.") < 2.4   # outside a tokenmap call: faster-whisper's own
    True
"""

from __future__ import annotations

import contextvars
import functools
from contextlib import contextmanager, nullcontext

import faster_whisper.transcribe as fw_transcribe
import faster_whisper.vad as fw_vad

from tokenmap import vad

_CALL: contextvars.ContextVar = contextvars.ContextVar("tokenmap_call", default=None)  # the call's session
STOCK: dict = {}  # faster-whisper's own functions, by name, once installed


def get_vad_model():
    """faster-whisper's VAD model; within a tokenmap call, run one batch of rows at a time."""
    return _piecewise_vad() if _CALL.get() is not None else STOCK["get_vad_model"]()


@functools.lru_cache
def _piecewise_vad() -> vad.PiecewiseVad:
    return vad.PiecewiseVad(STOCK["get_vad_model"]())


def collect_chunks(*args, **kwargs):
    """faster-whisper's ``collect_chunks``; within a tokenmap call, :func:`tokenmap.vad.collect_chunks`."""
    return (vad.collect_chunks if _CALL.get() is not None else STOCK["collect_chunks"])(*args, **kwargs)


def get_compression_ratio(text: str) -> float:
    """faster-whisper's compression ratio of ``text``; within a tokenmap call, at least the projected ratio of
    the stopped decode that wrote it (answered once)."""
    ratio, call = STOCK["get_compression_ratio"](text), _CALL.get()
    projected = call.ratios.pop(text.strip(), None) if call is not None else None
    return ratio if projected is None else max(projected, ratio)


def install() -> None:
    """Put each dispatcher in front of faster-whisper's function (once per process)."""
    for module, hook in ((fw_vad, get_vad_model), (fw_transcribe, collect_chunks),
                         (fw_transcribe, get_compression_ratio)):
        if getattr(module, hook.__name__) is not hook:
            STOCK.setdefault(hook.__name__, getattr(module, hook.__name__))
            setattr(module, hook.__name__, hook)


@contextmanager
def within(session):
    """Run the block as a tokenmap call on ``session`` (a :class:`tokenmap.windows.Session`)."""
    install()
    token = _CALL.set(session)
    try:
        yield
    finally:
        _CALL.reset(token)


def each_within(session, items, around=nullcontext):
    """``items`` (an iterator, e.g. faster-whisper's lazy segments), each produced within :func:`within` and
    ``around()``."""
    items, end = iter(items), object()
    while (item := _next_within(session, items, around, end)) is not end:
        yield item


def _next_within(session, items, around, end):
    with around(), within(session):
        return next(items, end)
