"""Where are accepted tokens lost? Every rejected draft's first wrong token, classified, on recorded streams.

    # 1. record the model's greedy token streams once (one model process; `auto` context with its guard)
    python research/draft_losses.py record bench-data/full.jsonl --set telephony --set opendomain -o s1.jsonl
    python research/draft_losses.py record bench-data/manifest.jsonl --set calls -o s2.jsonl
    python research/draft_losses.py record --audio tests/data/en-agent-pass.flac ... --lang en --set demo -o s3.jsonl
    # 2. replay the product's drafter on them, model-free, and classify what it lost
    python research/draft_losses.py table s1.jsonl s2.jsonl s3.jsonl [--map demo/en=/tmp/telephony-en.tmap] \
        [--levers] [--teacher train-en.jsonl ...] [--md out.md]

``record`` decodes each file's first window greedily (the fork, base, int8, 2 threads, timestamps on,
the window ``tokenmap_bench.features`` gives: no VAD) on the audio context ``--context`` names: ``auto``
encodes the window's audio plus :class:`tokenmap.context.AudioContext`'s margin and sends a window its
:class:`tokenmap.context.Guard` rejects back to the full 30 s, as ``transcribe --audio-context auto``
does; ``full`` encodes 30 s. One JSON line per window: id, set, lang, task, text, prompt, tokens
(no EOT), seconds (audio in the window), context (``short``, ``full`` or ``guarded: <reason>``).

``table`` replays the drafter tokenmap builds for a window (:func:`tokenmap.decode.drafters.default_drafter`:
the map's :class:`~tokenmap.decode.follow.FollowDrafter`, then prompt lookup; the window's audio length;
the default cost curve or this machine's calibration; one :class:`~tokenmap.decode.control.ControllerSet`
per set and language, its window gate included unless ``--no-gate``) on each stream, pass by pass as
:func:`tokenmap.decode.replay.replay_window` does, and classifies the first wrong token of every rejected
draft (draft token ``d`` against the model's ``m``), in this order:

* (a) punctuation or spacing: ``m`` or ``d`` is a punctuation mark the other is not (also against a
  timestamp: a mark the model dropped before closing the segment), or both first words agree once
  spaces and punctuation are removed (the same text split into other tokens);
* (e) Whisper's structure: a timestamp or end of text on either side (another closing or opening
  time than the guess, a segment the model closed where the draft went on, or the reverse);
* (b) casing or number style: the first words agree case-folded, or one is a digit, ``#`` or ``*``
  and the other its word (en, es, fr);
* (c) another branch of the map: ``m`` is a continuation the map holds at the context the draft
  walked (a child of that node, with a lower count; never the root);
* (d) content the map never saw there.

"Lost" counts the draft tokens after the mismatch that still match the model's stream once realigned
past it: the best of the model inserting one or two tokens, dropping one or two of the draft's,
substituting one, or writing the same text in other tokens (up to three on each side). Fixing a
substitution would also keep the mismatched position itself (one token per draft, not counted).
"branch gain c" adds, over class (c), what following the model's branch of the map would have kept.

``--levers`` replays changes to the drafting against the same streams and reports tokens per pass and
the modelled decoder S (passes on the cost curve, prefill excluded) beside the replay as is. "(bound)"
marks an oracle that uses the model's stream; the others use only what a pass tells:

* ``alive (a)``: keep a rejected draft alive after an insertion: when the model wrote a punctuation
  mark where the draft went on (or dropped the draft's mark, or wrote another), the next pass drafts
  the rest of the rejected draft when that is longer than what the drafter proposes;
* ``alive (any)``: the same after any one-token deviation (a substitution drafts the rest past it);
* ``style (bound)``: a map in Whisper's style: a draft rejected for class (a) or (b) is the model's
  text up to the realigned tail instead;
* ``2 branches (bound)``: multi-candidate verification at the first wrong token: where the model's
  token is another child of the map there, that branch is verified too (charged the rows of both);
* ``top-2 at 1st``: multi-candidate verification as it could run: beside every map draft, the second
  most frequent first token and its walk (charged the rows of both; the better branch is kept);
* ``length (bound)``: draft length from acceptance: every map draft extended by the map's walk and cut
  exactly where the model leaves it (nothing drafted where it would be rejected at its first token);
* ``no shallow``: draft length from acceptance as it could run, crudely: no map text drafted where the
  walk's first context is one token long (or the utterance start alone), where first tokens held for
  25 % (4 %) of drafts on these sets.
* ``over marks``: the product's drafter given the model's comma-like tokens (``SpecialTokens.inner_marks``:
  commas, semicolons, colons): its context steps over such a mark the corpus does not write there, and
  over one the corpus writes and the model left out, instead of backing off to a short context.

``--teacher`` measures style learned from the model's own outputs as it could run: the telephony
and demo sets' maps are built with the segment texts of streams ``record`` wrote of other audio (the
train split's 8 kHz prompts, the same voices through another codec: never the measured recordings),
twice over, as the bench's ``tokenmap-learned`` maps; the calls' maps keep theirs, since calls play
train-split prompts as well. ``--inventory`` gives the telephony and demo sets the bench's own map of
the task instead (the whole phrase inventory, test split included), or with ``--teacher`` its learned map.
"""
import argparse
import collections
import json
import sys
import time
from pathlib import Path

import numpy as np
from pass_anatomy import follow_of  # a sibling script: the map's FollowDrafter in a drafter chain

from tokenmap import build_map, load_maps, resolve_model
from tokenmap.context import AudioContext, Guard, content_seconds
from tokenmap.decode.control import ControllerSet
from tokenmap.decode.cost import load_cost_model
from tokenmap.decode.drafters import default_drafter, lcp
from tokenmap.decode.reference import GREEDY_KW
from tokenmap.decode.replay import ReplayStats
from tokenmap.decode.special import SpecialTokens
from tokenmap.decode.speculative import window_draft
from tokenmap.textok import TextTokenizer
from tokenmap_bench import Recording, ensure_map, features, load_manifest, segments

CLASSES = ("a", "b", "c", "d", "e")
NAMES = {"a": "punctuation / spacing", "b": "case / number style", "c": "other map branch",
         "d": "unseen by the map", "e": "timestamp / end"}
#: sentence punctuation and quotes (class a); # and * against their words are a number style (class b)
PUNCT = set(".,?!;:…\"'«»¿¡-–—()[]“”‘’„")


# -- record ------------------------------------------------------------------
def record(args) -> None:
    import ctranslate2

    model_dir = resolve_model("base", download=False)
    model = ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="int8", intra_threads=2)
    special = SpecialTokens.from_model_dir(str(model_dir))
    tok = TextTokenizer.from_model(str(model_dir))
    vocab = (model_dir / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    index = {t: i for i, t in enumerate(vocab)}
    utts = []
    for manifest in args.manifest:
        utts += [u for u in load_manifest(manifest) if not args.set or u.set in args.set]
    for path in args.audio:
        if not args.lang:
            raise SystemExit("--audio needs --lang")
        utts.append(Recording(id=Path(path).stem, audio=str(Path(path).resolve()), text="", domain="telephony",
                              lang=args.lang, set=(args.set or ["audio"])[0]))
    guard = Guard()
    t0 = time.time()
    with open(args.out, "w", encoding="utf-8") as out:
        for i, u in enumerate(utts):
            mel, audio_s = features(u)
            array = np.asarray(mel)
            seconds = content_seconds(array)
            prompt = [special.sot, index[f"<|{u.lang}|>"], index["<|transcribe|>"]]
            frames = AudioContext(args.context).for_language(u.lang).frames(seconds)
            context = "full"
            if frames is not None:
                short = ctranslate2.StorageView.from_array(np.ascontiguousarray(array[..., :frames]))
                res = model.generate(model.encode(short), [prompt], **GREEDY_KW)[0]
                tokens = list(res.sequences_ids[0])
                why = guard.reason(tokens, seconds=seconds or 30.0, score=res.scores[0] if res.scores else 0.0,
                                   no_speech_prob=res.no_speech_prob,
                                   finished=len(prompt) + len(tokens) < GREEDY_KW["max_length"] - 1,
                                   timestamp_begin=special.timestamp_begin,
                                   text=tok.decode([t for t in tokens if t < special.eot]))
                context = "short" if why is None else f"guarded: {why}"
            if frames is None or context != "short":
                res = model.generate(model.encode(mel), [prompt], **GREEDY_KW)[0]
            out.write(json.dumps({"id": u.id, "set": u.set, "lang": u.lang, "task": u.task, "text": u.text,
                                  "prompt": prompt, "tokens": list(res.sequences_ids[0]),
                                  "seconds": round(min(audio_s, 30.0), 3), "context": context}) + "\n")
            out.flush()
            if i % 20 == 0:
                print(f"{i}/{len(utts)} {time.time() - t0:.0f}s", file=sys.stderr)


# -- the map's context, as the FollowDrafter keeps it -------------------------
class Context:
    """The map node matching the current segment's text, advanced token by token with the rules of
    :class:`tokenmap.decode.follow.FollowDrafter` (a segment opens at the utterance start where the
    corpus ends one; where the model goes on past the corpus's utterance end, the context restarts),
    through the map's public lookups only."""

    def __init__(self, token_map, timestamp_begin: int):
        self.map, self.tb = token_map, timestamp_begin
        self.start = token_map.bos_node if token_map.bos_node > 0 else 0

    def end_share(self, node: int) -> float:
        c = self.map.child(node, self.map.sep)
        return self.map.count(c) / self.map.count(node) if c > 0 and node > 0 else 0.0

    def segment_start(self, node: int) -> int:
        return max(self.map.bos_node, 0) if self.end_share(node) >= 0.5 or node == 0 else node

    def feed(self, state: tuple, token: int) -> tuple:
        """``(node, previous token)`` after ``token``."""
        node, prev = state
        if token >= self.tb:
            if prev is not None and prev < self.tb:
                return node, token  # a closing timestamp keeps the segment's context
            return self.segment_start(node), token
        if self.map.child(node, token) < 0 and self.end_share(node) >= 0.5 and self.map.bos_node > 0:
            node = self.map.bos_node
        return self.map.advance(node, token), token

    def feed_all(self, state: tuple, tokens) -> tuple:
        for t in tokens:
            state = self.feed(state, int(t))
        return state

    def walk(self, node: int, n: int, eot: int) -> list[int]:
        """The map's most frequent continuation after ``node``: at most ``n`` text tokens."""
        out: list[int] = []
        while len(out) < n:
            _, child, _ = self.map.next_choice(node)
            if child < 0:
                break
            t = self.map.token(child)
            if t == self.map.sep or t >= eot:
                break
            out.append(t)
            node = child
        return out


# -- classifying a first wrong token -----------------------------------------
class Texts:
    def __init__(self, tokenizer, eot: int):
        self.tok, self.eot = tokenizer, eot
        self._one: dict = {}

    def one(self, t: int) -> str:
        if t not in self._one:
            self._one[t] = self.tok.decode([t]) if t < self.eot else ""
        return self._one[t]

    def span(self, ids) -> str:
        return self.tok.decode([t for t in ids if t < self.eot])


def _punct(s: str) -> bool:
    s = s.strip()
    return bool(s) and all(c in PUNCT for c in s)


def _squash(s: str) -> str:
    """Text without spaces and sentence punctuation."""
    return "".join(c for c in s if not c.isspace() and c not in PUNCT)


def _first_word(s: str) -> str:
    parts = s.split()
    return parts[0] if parts else ""


#: words for digits and keypad symbols (en, es, fr): a digit against its word is a number style (b)
SPOKEN = {
    "0": "zero oh cero zéro", "1": "one uno un una un une", "2": "two dos deux", "3": "three tres trois",
    "4": "four cuatro quatre", "5": "five cinco cinq", "6": "six seis six", "7": "seven siete sept",
    "8": "eight ocho huit", "9": "nine nueve neuf", "10": "ten diez dix",
    "#": "pound hash numeral gato almohadilla dièse carré", "*": "star asterisk asterisco estrella étoile astérisque",
}
SPOKEN_PAIRS = {(k, w) for k, v in SPOKEN.items() for w in v.split()}


def _same_number(a: str, b: str) -> bool:
    a, b = _squash(a).casefold(), _squash(b).casefold()
    return (a, b) in SPOKEN_PAIRS or (b, a) in SPOKEN_PAIRS


def classify(dseq, mseq, texts: Texts, tb: int, known: bool, before: int | None = None) -> tuple[str, str]:
    """``(class, detail)`` of a draft ``dseq`` whose first token differs from the model's ``mseq``
    (both from the mismatch on; ``known``: the map holds the model's token at the draft's context;
    ``before``: the token the model wrote before the mismatch)."""
    d, m = dseq[0], mseq[0]
    dt, mt = texts.one(d), texts.one(m)  # "" for a timestamp or end of text
    if _punct(mt) and not _punct(dt):
        return "a", "model inserted punctuation"
    if _punct(dt) and not _punct(mt):
        return "a", "model dropped punctuation"
    if _punct(dt) and _punct(mt):
        return "a", "other punctuation"
    if d >= tb or m >= tb or m == texts.eot:
        if d >= tb and m >= tb:
            closing = before is not None and before < tb
            return "e", "another closing timestamp" if closing else "another opening timestamp"
        if m == texts.eot:
            return "e", "model ended the window " + ("with no closing timestamp" if d >= tb
                                                     else "where the draft went on")
        if m >= tb:
            return "e", "model closed the segment, the draft went on"
        return "e", "model went on, the draft closed the segment"
    dspan, mspan = texts.span(dseq[:8]), texts.span(mseq[:8])
    dw, mw = _first_word(dspan), _first_word(mspan)
    unit = max(len(_squash(dw)), len(_squash(mw)), 1)
    dn, mn = _squash(dspan)[:unit], _squash(mspan)[:unit]
    if len(dn) == len(mn) == unit:
        if dn == mn:
            n = max(len(dt), len(mt))
            return "a", ("same text, other tokens" if dspan[:n] == mspan[:n] else "spacing or inner punctuation")
        if dn.casefold() == mn.casefold():
            return "b", "case"
    if _same_number(dw, mw):
        return "b", "digits or symbols vs words"
    return ("c", "another branch") if known else ("d", "unseen")


def realigned(dseq, mseq, texts: Texts, prefer=(1, 1)) -> tuple[int, int, int]:
    """``(tail, i, j)``: past ``i`` draft tokens and ``j`` of the model's, ``tail`` draft tokens match the
    model again (the best realignment of the docstring; ``prefer`` wins ties)."""
    best = (lcp(dseq[prefer[0]:], mseq[prefer[1]:]),) + tuple(prefer)
    for i, j in ((1, 1), (0, 1), (0, 2), (1, 0), (2, 0)):
        best = max(best, (lcp(dseq[i:], mseq[j:]), i, j), key=lambda x: x[0])
    for i in range(1, 4):
        for j in range(1, 4):
            if (i, j) != (1, 1) and i <= len(dseq) and j <= len(mseq):
                a, b = _squash(texts.span(dseq[:i])), _squash(texts.span(mseq[:j]))
                if a and a.casefold() == b.casefold():
                    best = max(best, (lcp(dseq[i:], mseq[j:]), i, j), key=lambda x: x[0])
    return best


def preferred(detail: str) -> tuple[int, int]:
    """The realignment a class detail implies when no tail decides: an insertion skips the model's token,
    a dropped mark the draft's, anything else substitutes one for one."""
    return (0, 1) if detail.startswith("model inserted") else (1, 0) if detail.startswith("model dropped") else (1, 1)


def remainder(draft, k: int, m: int, texts: Texts, any_deviation: bool) -> list[int]:
    """What of a draft rejected at ``k`` for the model's ``m`` a next pass may draft again, using only what
    the pass told (``alive`` levers): the rest of the draft after an inserted or dropped punctuation mark,
    and with ``any_deviation`` after any one-token deviation."""
    if m == texts.eot:
        return []
    dt, mt = texts.one(draft[k]), texts.one(m)
    if _punct(mt) and not _punct(dt):
        return list(draft[k:])  # the model inserted a mark: the draft goes on after it
    if k + 1 < len(draft) and draft[k + 1] == m and (any_deviation or _punct(dt)):
        return list(draft[k + 2:])  # the model dropped the draft's token and wrote the next one
    if any_deviation or (_punct(dt) and _punct(mt)):
        return list(draft[k + 1:])  # substituted
    return []


def children(token_map, node: int, eot: int) -> list[int]:
    """The text children of ``node``, most frequent first (the map's sorted edge keys hold them in a row)."""
    keys = token_map.arrays["edge_key"]
    lo = int(keys.searchsorted(np.uint64(node << 32)))
    hi = int(keys.searchsorted(np.uint64((node + 1) << 32)))
    kids = [c for c in range(lo + 1, hi + 1) if token_map.token(c) < eot and token_map.token(c) != token_map.sep]
    return sorted(kids, key=lambda c: -token_map.count(c))


# -- the replay --------------------------------------------------------------
LEVERS = ("as is", "alive (a)", "alive (any)", "style (bound)", "2 branches (bound)", "top-2 at 1st", "length (bound)",
          "no shallow", "over marks")


def replay_window(drafter, ctx: Context, truth, special, texts, cost, lever: str, acc, examples=None,
                  feed: int = 2) -> ReplayStats:
    """One window, pass by pass (the loop of :func:`tokenmap.decode.replay.replay_window`), with ``lever``
    applied; every rejected draft is classified into ``acc`` (a Counter)."""
    tb, eot = special.timestamp_begin, special.eot
    target = list(truth) + [eot]
    tokens: list[int] = []
    stats = ReplayStats()
    drafter.reset(())
    follow = follow_of(drafter)
    state = (ctx.start, None)
    alive: list[int] = []
    first = True
    while len(tokens) < len(target):
        own = window_draft(drafter, tokens, True, tb, 64)
        rest = target[len(tokens):]
        source = ("map" if follow is not None and follow.last_expected > 0 else
                  "structure" if own == [tb] else "lookup" if own else "")
        draft, rows = own, len(own)
        k = lcp(own, rest)
        rejected_at = k if k < len(own) and k < len(rest) else None
        if lever.startswith("alive") and len(alive) > len(own):
            draft, rows, source = alive, len(alive), "alive"
        elif lever == "style (bound)" and rejected_at is not None:
            cls, detail = classify(own[k:], rest[k:], texts, tb, False)
            if cls in ("a", "b"):  # a map in Whisper's style would have drafted the model's text here
                tail, i, j = realigned(own[k:], rest[k:], texts, preferred(detail))
                draft = rest[: k + j + tail]
                rows = len(draft)
        elif lever == "2 branches (bound)" and source == "map" and rejected_at is not None and rest[k] < eot:
            where = ctx.map.next_choice(ctx.feed_all(state, rest[:k])[0])[0]
            child = ctx.map.child(where, rest[k]) if where > 0 else -1
            if child > 0:  # the model's token is another branch of the map there: verify both
                draft = own[:k] + [rest[k]] + ctx.walk(child, len(own) - k - 1, eot)
                rows = len(own) + len(draft) - k
        elif lever == "top-2 at 1st" and source == "map":
            p = 1 if own[0] >= tb else 0
            if len(own) > p and own[p] < tb:
                where = ctx.map.next_choice(ctx.feed_all(state, own[:p])[0])[0]
                alt = [c for c in children(ctx.map, where, eot) if ctx.map.token(c) != own[p]][:1] if where else []
                if alt:  # the second most frequent first token and its walk, verified beside the draft
                    second = own[:p] + [ctx.map.token(alt[0])] + ctx.walk(alt[0], len(own) - p - 1, eot)
                    rows = len(own) + len(second) - p
                    if lcp(second, rest) > k:
                        draft = second
        elif lever == "no shallow" and source == "map":
            p = 1 if own[0] >= tb else 0
            if len(own) > p and own[p] < tb:
                where = ctx.map.next_choice(ctx.feed_all(state, own[:p])[0])[0]
                if int(ctx.map.arrays["node_depth"][where]) <= 1:  # a context of one token, or BOS alone
                    draft, rows, source = own[:p], p, "structure" if p else ""
        elif lever == "length (bound)" and tokens and tokens[-1] < tb and source in ("map", ""):
            if not own or own[-1] < tb:
                ext = own + ctx.walk(ctx.feed_all(state, own)[0], 24 - len(own), eot)
                draft = ext[: lcp(ext, rest)]
                rows, source = len(draft), "map" if draft else ""
        k = lcp(draft, rest)
        n_in = (feed if first else 1) + rows
        stats.ms += cost.step_ms if n_in == 1 else cost.batch(n_in)
        stats.passes += 1
        if draft:
            stats.drafts += 1
            stats.drafted += rows
            stats.accepted += k
            acc[f"drafts {source}"] += 1
        if own and source != "alive":
            drafter.update(len(own), lcp(own, rest))
        alive = []
        if draft and k < len(draft):
            node = ctx.feed_all(state, rest[:k])[0]
            where = ctx.map.next_choice(node)[0]
            known = where > 0 and rest[k] < eot and ctx.map.child(where, rest[k]) > 0
            before = (tokens + rest[:k])[-1] if tokens or k else None
            cls, detail = classify(draft[k:], rest[k:], texts, tb, known, before)
            lost = realigned(draft[k:], rest[k:], texts, preferred(detail))[0]
            if cls == "a" and "punctuation" in detail:
                detail += ", the draft goes on past it" if lost else ", nothing to realign"
            if cls == "c":  # what following the model's branch of the map would have kept
                branch = ctx.walk(ctx.map.child(where, rest[k]), len(draft) - k - 1, eot)
                acc["branch gain c"] += 1 + lcp(branch, rest[k + 1:])
            acc["rejected"] += 1
            acc[f"n {cls}"] += 1
            acc[f"lost {cls}"] += lost
            acc[f"detail {cls}: {detail}"] += 1
            acc[f"rejected {source}"] += 1
            acc["rejected at first"] += k == 0
            if examples is not None and len(examples[cls]) < examples["limit"]:
                examples[cls].append((texts.span(tokens[-6:]), texts.span(draft[k:k + 5]),
                                      texts.span(rest[k:k + 5]), detail, lost))
            if lever.startswith("alive"):
                alive = remainder(draft, k, rest[k], texts, lever == "alive (any)")
        decided = rest[: k + 1]
        stats.tokens += len(decided)
        state = ctx.feed_all(state, decided)
        tokens.extend(decided)
        first = False
    stats.greedy_ms = cost.batch(feed) + cost.step_ms * (len(target) - 1)
    return stats


def group_map(args, key: tuple, cache: Path, corpora: Path, teacher: dict):
    """The map of ``(set, lang)``: ``--map``, else the default of the docstring (built once); with
    ``teacher`` (``{lang: [texts]}``) the telephony and demo sets' maps learn those texts too."""
    given = dict(m.split("=", 1) for m in args.map)
    name = "/".join(key)
    set_, lang = key
    if set_ in ("telephony", "demo") and (teacher or args.inventory):
        lines = None
        if teacher:
            lines = cache / f"teacher-{lang}.txt"
            lines.write_text("\n".join(teacher.get(lang, [])) + "\n", encoding="utf-8")
        if args.inventory:  # the bench's map of the task, or its tokenmap-learned map
            return ensure_map(corpora, "telephony", lang, cache, "base", teacher=lines,
                              name="learned-" if lines else "")
        target = cache / f"telephony-{lang}-train-taught.tmap"
        build_map([corpora / "telephony" / lang / "train.txt"], target, model="base", force=True,
                  teacher=[lines], teacher_copies=2)
        return target
    if name in given or set_ in given:
        return Path(given.get(name) or given[set_])
    if set_ in ("telephony", "demo"):
        target = cache / f"telephony-{lang}-train.tmap"
        if not target.is_file():
            build_map([corpora / "telephony" / lang / "train.txt"], target, model="base", force=True)
        return target
    domain = "telephony" if set_ == "calls" else set_
    return ensure_map(corpora, domain, lang, cache, "base")


def teacher_texts(paths, texts: Texts, tb: int) -> dict:
    """``{lang: segment texts}`` of the streams at ``paths`` (the model's own wording of other audio)."""
    out = collections.defaultdict(list)
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out[row["lang"]] += [t for t in (texts.span(seg).strip() for seg in segments(row["tokens"], tb)) if t]
    return out


def table(args) -> None:
    model_dir = resolve_model("base", download=False)
    special = SpecialTokens.from_model_dir(str(model_dir))
    texts = Texts(TextTokenizer.from_model(str(model_dir)), special.eot)
    cost = load_cost_model(model_dir, "int8", 2)
    groups: dict = collections.defaultdict(list)
    for path in args.streams:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                groups[(row["set"], row["lang"])].append(row)
    cache, corpora = Path(args.cache), Path(args.corpora)
    teacher = teacher_texts(args.teacher, texts, special.timestamp_begin)
    cache.mkdir(parents=True, exist_ok=True)
    levers = LEVERS if args.levers else LEVERS[:1]
    results: dict = {}
    maps_used: dict = {}
    shown = collections.defaultdict(list, limit=args.examples)
    for key, rows in groups.items():
        path = group_map(args, key, cache, corpora, teacher)
        maps_used[key] = str(path)
        token_map = load_maps(path)[0]
        ctx = Context(token_map, special.timestamp_begin)
        for lever in levers:
            ctl = ControllerSet(cost)
            acc, total = collections.Counter(), ReplayStats()
            for row in rows:
                truth = row["tokens"]
                acc["windows"] += 1
                acc["contexts " + row.get("context", "?").split(":")[0]] += 1
                if not args.no_gate and not ctl.use_speculation():
                    acc["plain windows"] += 1
                    n = len(truth) + 1
                    total.add(ReplayStats(passes=n, tokens=n, ms=cost.batch(2) + cost.step_ms * (n - 1),
                                          greedy_ms=cost.batch(2) + cost.step_ms * (n - 1)))
                    continue
                drafter = default_drafter(token_map, special.timestamp_begin, controllers=ctl, eot=special.eot,
                                          cost=cost, seconds=min(row["seconds"], 30.0) or None,
                                          inner_marks=special.inner_marks if lever == "over marks" else frozenset())
                st = replay_window(drafter, ctx, truth, special, texts, cost, lever, acc,
                                   shown if args.examples and lever == "as is" else None)
                ctl.record_window(st)
                total.add(st)
            results[(key, lever)] = (acc, total)
    report(args, groups, results, levers, maps_used, cost, shown)


# -- output ------------------------------------------------------------------
def _pct(a: float, b: float) -> str:
    return f"{100.0 * a / b:.0f} %" if b else "-"


def report(args, groups, results, levers, maps_used, cost, shown) -> None:
    order = sorted(groups, key=lambda k: (["telephony", "demo", "calls", "opendomain"].index(k[0])
                                         if k[0] in ("telephony", "demo", "calls", "opendomain") else 9, k))
    sets = collections.OrderedDict()
    for key in order:
        sets.setdefault(key[0], []).append(key)
    lines = [f"Replayed model-free on recorded greedy streams; cost curve: {cost.source}; "
             f"window gate {'off' if args.no_gate else 'on'}.", ""]
    head = ("| set | lang | windows | tokens | tokens / pass | drafts | rejected (at 1st token) | A_r | " +
            " | ".join(f"({c}) {NAMES[c]}: share (lost)" for c in CLASSES) + " |")
    lines += [head, "|" + " --- |" * (8 + len(CLASSES))]

    def row_of(label, lang, accs, tots):
        acc = sum(accs, collections.Counter())
        drafted = sum(t.drafted for t in tots)
        accepted = sum(t.accepted for t in tots)
        drafts = sum(t.drafts for t in tots)
        rej = acc["rejected"]
        cells = [f"{_pct(acc[f'n {c}'], rej)} ({acc[f'lost {c}']})" for c in CLASSES]
        plain = f" ({acc['plain windows']} plain)" if acc["plain windows"] else ""
        tokens, passes = sum(t.tokens for t in tots), sum(t.passes for t in tots)
        return (f"| {label} | {lang} | {acc['windows']}{plain} | {tokens} | {tokens / passes:.2f} | {drafts} | "
                f"{rej} ({acc['rejected at first']}) | {_pct(accepted, drafted)} | "
                + " | ".join(cells) + " |")

    for set_, keys in sets.items():
        for key in keys:
            acc, tot = results[(key, "as is")]
            lines.append(row_of(set_, key[1], [acc], [tot]))
        if len(keys) > 1:
            lines.append(row_of(f"**{set_}**", "all", [results[(k, 'as is')][0] for k in keys],
                                [results[(k, 'as is')][1] for k in keys]))
    everything = [results[(k, "as is")] for k in order]
    lines.append(row_of("**all**", "", [a for a, _ in everything], [t for _, t in everything]))
    lines += ["", "Details of the classes (rejected drafts, all sets; per set in brackets):", ""]
    details = collections.Counter()
    per_set = collections.defaultdict(collections.Counter)
    for key in order:
        acc = results[(key, "as is")][0]
        for name, v in acc.items():
            if name.startswith(("detail ", "rejected ", "drafts ", "branch gain")):
                details[name] += v
                per_set[name][key[0]] += v
    for name in sorted(details):
        where = ", ".join(f"{s} {n}" for s, n in per_set[name].items() if n)
        lines.append(f"- {name}: {details[name]} ({where})")
    if len(levers) > 1:
        lines += ["", "Levers (tokens per pass, modelled decoder S without the prefill; per set):", "",
                  "| set | " + " | ".join(levers) + " |", "|" + " --- |" * (1 + len(levers))]
        for set_, keys in list(sets.items()) + [("**all**", order)]:
            cells = []
            for lever in levers:
                tots = [results[(k, lever)][1] for k in keys]
                tokens, passes = sum(t.tokens for t in tots), sum(t.passes for t in tots)
                ms, greedy = sum(t.ms for t in tots), sum(t.greedy_ms for t in tots)
                cells.append(f"{tokens / passes:.2f} / {greedy / ms:.2f}")
            lines.append(f"| {set_} | " + " | ".join(cells) + " |")
    lines += ["", "Maps: " + "; ".join(f"{'/'.join(k)} {v}" for k, v in sorted(maps_used.items()))]
    contexts = collections.Counter()
    for key in order:
        contexts.update({k[9:]: v for k, v in results[(key, "as is")][0].items() if k.startswith("contexts ")})
    lines.append("Audio contexts of the recorded windows: " + ", ".join(f"{k} {v}" for k, v in contexts.items()))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.examples:
        for c in CLASSES:
            print(f"examples ({c}) {NAMES[c]}:")
            for before, d, m, detail, lost in shown[c]:
                print(f"   {before!r} | draft {d!r} | model {m!r} | {detail}, lost {lost}")
    if args.md:
        Path(args.md).write_text(text, encoding="utf-8")


# -- main --------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record greedy token streams (one model process)")
    rec.add_argument("manifest", nargs="*", help="bench manifests (JSON lines)")
    rec.add_argument("--audio", nargs="+", default=[], help="audio files outside a manifest (with --lang)")
    rec.add_argument("--lang", default=None, help="language of --audio files")
    rec.add_argument("--set", action="append", default=[], help="keep these sets (repeatable); --audio: its set")
    rec.add_argument("--context", default="auto", choices=("auto", "full"), help="encoder audio context")
    rec.add_argument("-o", "--out", required=True)
    rec.set_defaults(run=record)
    tab = sub.add_parser("table", help="replay the drafter on recorded streams and classify its losses")
    tab.add_argument("streams", nargs="+", help="JSON lines written by `record`")
    tab.add_argument("--map", action="append", default=[], metavar="SET/LANG=PATH",
                     help="the map of a set and language (default: telephony and demo: the language's "
                     "telephony train split; other sets: the bench's map of the task, tokenmap_bench.ensure_map)")
    tab.add_argument("--cache", default="/tmp/draft-losses-maps", help="where default maps are built")
    tab.add_argument("--corpora", default="corpora")
    tab.add_argument("--teacher", action="append", default=[], metavar="STREAMS",
                     help="streams `record` wrote of other audio (the train split's 8 kHz prompts): the "
                     "telephony and demo sets' maps learn the model's wording from them (twice, as the bench's "
                     "learned maps); other sets keep theirs")
    tab.add_argument("--inventory", action="store_true",
                     help="telephony and demo sets: the bench's map of the task (train and test split: the whole "
                     "phrase inventory; with --teacher its tokenmap-learned map) instead of the train split's")
    tab.add_argument("--no-gate", action="store_true", help="draft in every window (no window gate)")
    tab.add_argument("--levers", action="store_true", help="also replay the levers of the docstring")
    tab.add_argument("--examples", type=int, default=0, help="print this many rejected drafts per class")
    tab.add_argument("--md", default=None, help="also write the tables to this Markdown file")
    tab.set_defaults(run=table)
    args = ap.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
