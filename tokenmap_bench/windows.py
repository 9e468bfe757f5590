"""How the benchmark's long test sets are cut: dictation sentences and call prompts joined into windows.

``benchmarks/make_data.py`` builds the dictation and calls sets with these; a window is what
faster-whisper decodes at once (at most 30 s), so the caps stay under it with room for pauses.
"""

from __future__ import annotations

DICTATION_MAX_S = 24.0  # estimated length cap of a dictation window (real: 20-30 s)
CALLS_MAX_S = 26.0  # length cap of a calls window, pauses included
CALLS_PAUSE_S = 0.7  # silence between two prompts of a calls window


def estimate_seconds(text: str) -> float:
    """Rough spoken length: ~0.38 s a word, plus ~0.28 s a digit (numbers expand)."""
    words = text.split()
    digits = sum(ch.isdigit() for ch in text)
    return 0.38 * len(words) + 0.28 * digits


def dictation_windows(sentences: list[str], max_seconds: float = DICTATION_MAX_S) -> list[tuple[int, int, str]]:
    """Greedily join consecutive sentences into windows of estimated length <= max_seconds.

    Returns (start, end, text), text = sentences[start:end] joined by a space. A sentence
    longer than the cap forms a window alone; a last window under half the cap is dropped.
    """
    out, start, cur = [], 0, 0.0
    for i, s in enumerate(sentences):
        est = estimate_seconds(s)
        if i > start and cur + est > max_seconds:
            out.append((start, i, " ".join(sentences[start:i])))
            start, cur = i, 0.0
        cur += est
    if start < len(sentences) and (cur >= max_seconds / 2 or not out):
        out.append((start, len(sentences), " ".join(sentences[start:])))
    return out


def calls_windows(prompts: list[tuple[str, str, float]], max_seconds: float = CALLS_MAX_S,
                  pause: float = CALLS_PAUSE_S) -> list[list[tuple[str, str, float]]]:
    """Greedily group (name, text, seconds) prompts, in order, into windows whose length with a
    ``pause`` after each prompt stays within ``max_seconds`` (a longer prompt forms a window alone).

    >>> [[n for n, _, _ in w] for w in calls_windows([("a", "A.", 10.0), ("b", "B.", 12.0), ("c", "C.", 5.0)], 25)]
    [['a', 'b'], ['c']]
    """
    out: list[list[tuple[str, str, float]]] = []
    cur, length = [], 0.0
    for prompt in prompts:
        if cur and length + prompt[2] + pause > max_seconds:
            out.append(cur)
            cur, length = [], 0.0
        cur.append(prompt)
        length += prompt[2] + pause
    return out + ([cur] if cur else [])
