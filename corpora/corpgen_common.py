"""Shared helpers of the corpus generator (``generate.py``): numbers and capitals as Whisper writes them.

A sibling module of ``generate.py``, imported by it (``corpora/`` is not a package).
"""
from __future__ import annotations


def num(lang: str, x: float, dec: int) -> str:
    """Digits as Whisper writes them: '142.5' (en) / '142,5' (es, fr)."""
    if dec <= 0:
        v = int(round(x))
        if lang == "en" and abs(v) >= 1000:
            return f"{v:,}"
        return str(v)
    s = f"{x:.{dec}f}"
    return s.replace(".", ",") if lang != "en" else s


def cap(s: str) -> str:
    return s[:1].upper() + s[1:] if s else s
