"""The model's own transcripts of recordings the bench does not measure, and the audio they come from.

:class:`GreedyBase` decodes one window greedily, as faster-whisper does (teacher transcripts,
recall indexes); :func:`segments` cuts its tokens at timestamps; :func:`decode_g722` reads the
Asterisk prompts' raw G.722 files. Example::

    >>> base = GreedyBase()                                               # doctest: +SKIP
    >>> enc, ids = base.decode(features(utterance)[0], "en")              # doctest: +SKIP
    >>> base.texts(ids)                                                   # doctest: +SKIP
    ['Please enter your password followed by the pound key.']
"""

from __future__ import annotations

SR = 16000


def segments(tokens, ts0: int) -> list[list[int]]:
    """The token lists between timestamps (ids at or above ``ts0``): ``segments([1, 9, 2, 3], 9) == [[1], [2, 3]]``."""
    out, cur = [], []
    for t in tokens:
        if t >= ts0:
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        out.append(cur)
    return out


def decode_g722(path: str):
    """A raw G.722 file (the Asterisk prompts) -> float32 mono 16 kHz samples."""
    import av
    import numpy as np

    with av.open(path, format="g722") as c:
        rs = av.AudioResampler(format="s16", layout="mono", rate=SR)
        chunks = [f.to_ndarray().reshape(-1) for fr in c.decode(audio=0) for f in rs.resample(fr)]
        chunks += [f.to_ndarray().reshape(-1) for f in rs.resample(None)]
    return np.concatenate(chunks).astype(np.float32) / 32768.0


class GreedyBase:
    """Plain greedy Whisper base (fork, int8, 2 threads, timestamps on), as faster-whisper decodes a window."""

    def __init__(self):
        import ctranslate2

        from tokenmap.decode.rules import GREEDY_KW
        from tokenmap.decode.special import SpecialTokens
        from tokenmap.models import resolve_model
        from tokenmap.textok import TextTokenizer

        self.model_dir = resolve_model("base", download=False)
        self.model = ctranslate2.models.Whisper(str(self.model_dir), device="cpu", compute_type="int8",
                                                intra_threads=2)
        self.special = SpecialTokens.from_model_dir(str(self.model_dir))
        self.tok = TextTokenizer.from_file(self.model_dir / "tokenizer.json")
        self.vocab = (self.model_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
        self.greedy_kw = GREEDY_KW

    def decode(self, mel, lang: str):
        """``(encoder output, token ids)`` of one window's log-mel features in ``lang``."""
        enc = self.model.encode(mel)
        prompt = [self.special.sot, self.vocab.index(f"<|{lang}|>"), self.vocab.index("<|transcribe|>")]
        return enc, self.model.generate(enc, [prompt], **self.greedy_kw)[0].sequences_ids[0]

    def texts(self, ids) -> list[str]:
        """The texts of the segments of ``ids``, stripped, empty ones left out."""
        texts = (self.tok.decode(seg).strip() for seg in segments(ids, self.special.timestamp_begin))
        return [text for text in texts if text]
