"""Benchmark inputs: the manifest, the token maps per domain x language, machine facts.

A manifest is JSON lines, one utterance each::

    {"id", "audio", "text", "domain", "lang", "voice", "source", "set", "duration", "recordings"}

with ``audio`` relative to the manifest's folder; ``recordings`` (real speech only) names
the studio recordings the file plays (``en_US_f_Allison/agent-pass``), whatever the codec. Maps are built from
``corpora/<domain>/<lang>/train.txt`` into a cache folder and rebuilt only when
the corpus, the model or the build options change (a ``.json`` stamp beside
each map records them).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tokenmap.balance.budget import GENEROUS, PROTECT
from tokenmap.balance.sections import build_balanced
from tokenmap.build.builder import BuildOptions, build_map

log = logging.getLogger("tokenmap")

#: the map every domain is also decoded with when it is not its own (the "no slower" check)
MISMATCH_DOMAIN = "maintenance"
SR = 16000  # Whisper's sample rate
#: where drafting can pay: ``scripted`` (a closed phrase inventory heard again and again, the map
#: built from the whole inventory), ``structured`` (templated domain sentences with new slot values,
#: the map built from other sentences), ``open`` (books, a map of other text)
REGIMES = {"telephony": "scripted", "opendomain": "open"}


def regime_of(domain: str) -> str:
    """The regime of a domain (``structured`` unless listed in :data:`REGIMES`)."""
    return REGIMES.get(domain, "structured")


class BenchDataError(RuntimeError):
    """Benchmark inputs are missing or malformed (one-line message)."""


@dataclass(frozen=True)
class Recording:
    """One manifest line; ``audio`` is an absolute path."""

    id: str
    audio: str
    text: str
    domain: str
    lang: str
    voice: str = ""
    source: str = ""
    set: str = ""
    duration: float = 0.0
    recordings: tuple = ()

    @property
    def task(self) -> str:
        """The fairness task: ``domain/lang``."""
        return f"{self.domain}/{self.lang}"

    @property
    def regime(self) -> str:
        return regime_of(self.domain)


def stable_hash(*parts: object) -> int:
    """64-bit hash of the parts, independent of PYTHONHASHSEED."""
    data = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def lowest_hash_per_group(records: list[dict], quota: dict[str, int], seed: object = 0) -> list[dict]:
    """Every (set, domain, lang, voice) group's ``quota[set]`` records (1 for a set not named) with the
    lowest hash of (seed, id), sorted by id: stable as records are added."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        groups[(r["set"], r["domain"], r["lang"], r["voice"])].append(r)
    out = []
    for key in sorted(groups):
        ranked = sorted(groups[key], key=lambda r: stable_hash(seed, r["id"]))
        out.extend(ranked[:quota.get(key[0], 1)])
    return sorted(out, key=lambda r: r["id"])


def recording_key(path: str) -> str:
    """Which studio recording an audio file is, whatever its codec: ``<voice folder>/<name>``.

    Asterisk builds every codec package of a voice from one take, so ``x.g722`` and
    ``x.wav`` are the same recording (the bench's leak guard compares these keys).
    Under an Asterisk ``sounds`` folder the name keeps its subfolders.

    >>> recording_key("/usr/share/asterisk/sounds/en_US_f_Allison/agent-pass.g722")
    'en_US_f_Allison/agent-pass'
    >>> recording_key("/usr/share/asterisk/sounds/es_MX_f_Allison/digits/5.wav")
    'es_MX_f_Allison/digits/5'
    >>> recording_key("/usr/share/pocketsphinx/test/data/librivox/clip-0870.wav")
    'librivox/clip-0870'
    """
    parts = Path(path).with_suffix("").parts
    if "sounds" in parts[:-2]:
        return "/".join(parts[parts.index("sounds") + 1:])
    return "/".join(parts[-2:])


def load_manifest(path: str | os.PathLike, limit: int | None = None) -> list[Recording]:
    """Read a JSON-lines manifest; raises :class:`BenchDataError` with the fix when missing."""
    path = Path(path)
    if not path.is_file():
        raise BenchDataError(f"{path}: no benchmark manifest; run `make bench-data` first")
    out = []
    fields = set(Recording.__dataclass_fields__)
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            rec = {k: v for k, v in rec.items() if k in fields}
            rec["audio"] = str((path.parent / rec["audio"]).resolve())
            rec["recordings"] = tuple(rec.get("recordings") or ())
            utt = Recording(**rec)
        except (ValueError, KeyError, TypeError) as exc:
            raise BenchDataError(f"{path}:{number}: bad manifest line ({exc})") from exc
        if not Path(utt.audio).is_file():
            raise BenchDataError(f"{utt.audio}: audio missing; run `make bench-data` first")
        out.append(utt)
        if limit and len(out) >= limit:
            break
    if not out:
        raise BenchDataError(f"{path}: empty manifest; run `make bench-data` first")
    return out


#: the Asterisk voice folder of each language (a teacher line's ``prompt`` and ``lang`` name a recording)
ASTERISK_VOICES = {"en": "en_US_f_Allison", "es": "es_MX_f_Allison", "fr": "fr_CA_f_June"}
#: mel-fingerprint cosine at or above which a recall index's segment may be a measured recording: the same
#: take through the 8 kHz codec gives 0.95-0.997 (0.97 or more for 3 in 4 prompts), another take of the same
#: sentence by the same voice up to 0.96, so a match also needs the segment's text to be the start of the
#: measured reference (:func:`_same_take`); an index's header names its recordings for the rest
SAME_AUDIO_COSINE = 0.97


def corpus_path(corpora: Path, domain: str, lang: str) -> Path:
    return corpora / domain / lang / "train.txt"


def map_corpus(corpora: Path, domain: str, lang: str) -> list[Path]:
    """The files a task's own map is built from: its train split, and for a scripted task the
    whole phrase inventory (train and test: every prompt the system can play)."""
    files = [corpus_path(corpora, domain, lang)]
    if regime_of(domain) == "scripted":
        files.append(corpora / domain / lang / "test.txt")
    return [f for f in files if f.is_file()]


def _stamp(corpus: Path, model: str) -> dict:
    st = corpus.stat()
    return {"corpus": str(corpus.resolve()), "size": st.st_size, "mtime": int(st.st_mtime),
            "model": str(model), "version": 3}  # 2: tokenizer merges repaired; 3: suffix maps


def ensure_map(corpora: Path, domain: str, lang: str, cache: Path, model: str, teacher: Path | None = None,
               name: str = "") -> Path | None:
    """The cached map of ``domain/lang`` (:func:`map_corpus`, plus ``teacher`` lines when given),
    built when missing or stale; None without a corpus."""
    corpus = map_corpus(corpora, domain, lang)
    if not corpus:
        log.warning("no corpus %s: %s/%s decoded without a token map", corpus_path(corpora, domain, lang),
                    domain, lang)
        return None
    stamp = {"corpora": [_stamp(c, model) for c in corpus],
             **({"teacher": _stamp(teacher, model)} if teacher else {})}
    taught = [teacher] if teacher else []
    return _cached(cache / f"{name}{domain}-{lang}.tmap", stamp,
                   lambda target: build_map(corpus, target, model=str(model),
                                            options=BuildOptions(jobs=1, teacher_copies=2), force=True,
                                            teacher=taught))


def ensure_learned_maps(utterances, corpora: Path, cache: Path, model: str, teacher: Path) -> dict:
    """``{(domain, lang): map}`` for the scripted tasks of ``utterances``: the inventory plus the
    lines of ``teacher`` (JSON lines with ``text``, ``domain``, ``lang``: the model's transcripts of
    *other* recordings of the prompts) of that task."""
    lines: dict = {}
    for line in Path(teacher).read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        lines.setdefault((rec.get("domain"), rec.get("lang")), []).append(rec["text"])
    out = {}
    for key in sorted({(u.domain, u.lang) for u in utterances if u.regime == "scripted"}):
        if key not in lines:
            continue
        part = cache / "teacher" / f"{key[0]}-{key[1]}.txt"
        part.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(lines[key]) + "\n"
        if not part.is_file() or part.read_text(encoding="utf-8") != text:
            part.write_text(text, encoding="utf-8")
        out[key] = ensure_map(corpora, *key, cache, model, teacher=part, name="learned-")
    return out


def _cached(target: Path, stamp: dict, build) -> Path:
    """``target``, rebuilt by ``build(target)`` unless its ``.json`` stamp equals ``stamp``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    stamp_file = target.with_suffix(".json")
    if target.is_file() and stamp_file.is_file():
        try:
            if json.loads(stamp_file.read_text(encoding="utf-8")) == stamp:
                return target
        except ValueError:
            pass
    log.info("building map %s", target)
    build(target)
    stamp_file.write_text(json.dumps(stamp) + "\n", encoding="utf-8")
    return target


#: map modes of ``tokenmap bench --map-mode``: one map per task, one map over all tasks,
#: the balanced map set over all tasks (``tokenmap build --balance``: a section per task with its
#: budget), every task's own map (default budget), and the balanced set taught the model's own
#: transcripts of other audio (``--balance --teacher``); in the last three the decoder infers the
#: task (:class:`tokenmap.decode.drafters.MapSetDrafter`)
MAP_MODES = ("per-task", "multi", "balanced", "inferred", "taught")


def ensure_shared_map(mode: str, tasks, corpora: Path, cache: Path, model: str, teacher=()) -> Path | None:
    """The cached ``multi``, ``balanced`` or ``taught`` map over the train corpora of ``tasks``
    (``(domain, lang)`` pairs; those without a corpus are left out), or None.  ``teacher``: the
    ``taught`` set's teacher transcripts (:mod:`tokenmap.balance.divergence`)."""
    corpus = [corpus_path(corpora, d, lang) for d, lang in sorted(tasks) if corpus_path(corpora, d, lang).is_file()]
    if not corpus:
        return None
    teacher = [Path(t) for t in teacher] if mode == "taught" else []
    if mode == "taught" and not teacher:
        raise BenchDataError("map mode taught needs --teacher (the model's transcripts of other audio)")
    kw = {"teacher": teacher} if teacher else {}
    build = build_balanced if mode in ("balanced", "taught") else build_map
    stamp = {"mode": mode, "corpora": [_stamp(c, model) for c in corpus]}
    if teacher:
        stamp["teacher"] = [_stamp(t, model) for t in teacher]
    if mode != "multi":  # a changed allocation or layout rebuilds the map
        stamp["balance"] = {"generous": asdict(GENEROUS), "protect": PROTECT, "layout": "sections"}
    return _cached(cache / f"{mode}-{len(corpus)}tasks.tmap", stamp,
                   lambda target: build(corpus, target, model=str(model), options=BuildOptions(jobs=1), force=True,
                                        **kw))


@dataclass
class BenchMaps:
    """The map files a run drafts from (None where a task has no corpus).

    ``tasks[(domain, lang)]`` is each task's own map (system ``tokenmap``; the
    ``MISMATCH_DOMAIN`` maps serve ``tokenmap-mismatch``); ``shared[mode]`` is
    one map over every task (``multi``, ``balanced``: system ``tokenmap-<mode>``), or for
    ``inferred`` the list of the tasks' own maps (:meth:`inferred`).
    """

    tasks: dict = field(default_factory=dict)
    shared: dict = field(default_factory=dict)
    learned: dict = field(default_factory=dict)  # scripted tasks: inventory + the model's own transcripts

    def inferred(self, keys) -> list:
        """The ``inferred`` mode's map set: the own maps of the tasks ``keys`` that have one."""
        return [self.tasks[k] for k in sorted(keys) if self.tasks.get(k)]

    def drafted_by(self, system: str) -> dict:
        """``{(domain, lang): path}``: the map each task drafts from under ``system`` (``inferred``:
        its own map, the one the drafter should infer)."""
        mode = system[len("tokenmap-"):] if system.startswith("tokenmap-") else None
        if mode in self.shared and mode != "inferred":
            return dict.fromkeys(self.tasks, self.shared[mode]) if self.shared[mode] else {}
        return dict(self.tasks)

    def as_dict(self) -> dict:
        """``{"domain/lang" or mode: path string or None}`` (for results.json)."""
        named = {**{"/".join(k): p for k, p in self.tasks.items()}, **self.shared,
                 **{"learned " + "/".join(k): p for k, p in self.learned.items()}}
        return {k: ([str(x) for x in p] if isinstance(p, list) else str(p) if p else None) for k, p in named.items()}


def ensure_maps(utterances, corpora: Path, cache: Path, model: str, mismatch: bool = True) -> dict:
    """``{(domain, lang): map path or None}`` for every task in ``utterances``
    (plus the mismatch map of each language when ``mismatch``)."""
    keys = {(u.domain, u.lang) for u in utterances}
    if mismatch:
        keys |= {(MISMATCH_DOMAIN, u.lang) for u in utterances if u.domain != MISMATCH_DOMAIN}
    return {key: ensure_map(corpora, *key, cache, model) for key in sorted(keys)}


# -- machine -------------------------------------------------------------


def features(utt: Recording):
    """(mel StorageView [1, n_mels, 3000] of the first 30 s, audio seconds).

    The window faster-whisper's ``transcribe()`` decodes first: its features
    without their last frame, zero-padded to 3,000 frames (one frame more or
    less can change the greedy output of a dense window).
    """
    import ctranslate2
    import numpy as np
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor

    audio = decode_audio(utt.audio, sampling_rate=SR)
    mel = FeatureExtractor(feature_size=80)(audio)[:, :-1][:, :3000]
    mel = np.pad(mel, ((0, 0), (0, 3000 - mel.shape[1])))[None]
    return ctranslate2.StorageView.from_array(np.ascontiguousarray(mel, dtype=np.float32)), len(audio) / SR
