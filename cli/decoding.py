"""faster-whisper's ``WhisperModel.transcribe`` parameters as `tokenmap transcribe` options.

:data:`PARAMETERS` names, for every parameter of faster-whisper's ``transcribe``, the option that
reaches it or why none does; `tokenmap transcribe --help` prints it (:func:`epilog`) and a test checks
it against faster-whisper's signature. :func:`decoding_options` adds the options that are not the
command's own; :func:`decoding_kwargs` turns their values into ``transcribe`` keyword arguments.

Defaults are those of :meth:`tokenmap.WhisperModel.transcribe` (faster-whisper's, with ``beam_size=1``),
except VAD, which the command turns on. Options whose default differs between sequential and batched
decoding (``--without-timestamps``, the VAD parameters) pass nothing unless given, so each path keeps
its own.

Example::

    >>> parse_temperature("0"), parse_temperature("0,0.5,1")
    (0.0, [0.0, 0.5, 1.0])
    >>> clip_pairs("0,10,20.5")
    [{'start': 0.0, 'end': 10.0}, {'start': 20.5, 'end': None}]
"""

from __future__ import annotations

import textwrap

import click

#: faster-whisper's default temperatures: 0 (greedy), then sampling hotter after each failed window
TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
PREPEND_PUNCTUATIONS = "\"'“¿([{-"
APPEND_PUNCTUATIONS = "\"'.。,，!！?？:：”)]}、"

#: CLI option (destination name) -> faster-whisper's ``VadOptions`` field
VAD_FIELDS = {
    "vad_threshold": "threshold",
    "vad_neg_threshold": "neg_threshold",
    "vad_min_speech_ms": "min_speech_duration_ms",
    "vad_max_speech_s": "max_speech_duration_s",
    "vad_min_silence_ms": "min_silence_duration_ms",
    "vad_speech_pad_ms": "speech_pad_ms",
}
#: the VAD parameters faster-whisper's batched pipeline starts from when it is given none
BATCHED_VAD = {"min_silence_duration_ms": 160}

#: faster-whisper's ``WhisperModel.transcribe`` parameter -> the option that sets it, or why none does
PARAMETERS = {
    "audio": "FILES",
    "language": "--language",
    "task": "--task",
    "log_progress": "not an option: tokenmap draws its own progress bar on a terminal",
    "beam_size": "--beam-size",
    "best_of": "--best-of",
    "patience": "--patience",
    "length_penalty": "--length-penalty",
    "repetition_penalty": "--repetition-penalty",
    "no_repeat_ngram_size": "--no-repeat-ngram-size",
    "temperature": "--temperature",
    "compression_ratio_threshold": "--compression-ratio-threshold",
    "log_prob_threshold": "--log-prob-threshold",
    "no_speech_threshold": "--no-speech-threshold",
    "condition_on_previous_text": "--condition-on-previous-text / --no-condition-on-previous-text",
    "prompt_reset_on_temperature": "--prompt-reset-on-temperature",
    "initial_prompt": "--initial-prompt (text; token ids only from Python)",
    "prefix": "--prefix",
    "suppress_blank": "--suppress-blank / --no-suppress-blank",
    "suppress_tokens": "--suppress-tokens",
    "without_timestamps": "--without-timestamps / --with-timestamps",
    "max_initial_timestamp": "--max-initial-timestamp",
    "word_timestamps": "--word-timestamps",
    "prepend_punctuations": "--prepend-punctuations",
    "append_punctuations": "--append-punctuations",
    "multilingual": "--multilingual",
    "vad_filter": "--vad / --no-vad (on by default, unlike faster-whisper)",
    "vad_parameters": "--vad-threshold, --vad-neg-threshold, --vad-min-speech-ms, --vad-max-speech-s, "
                      "--vad-min-silence-ms, --vad-speech-pad-ms",
    "max_new_tokens": "--max-new-tokens",
    "chunk_length": "--chunk-length",
    "clip_timestamps": "--clip-timestamps",
    "hallucination_silence_threshold": "--hallucination-silence-threshold",
    "hotwords": "--hotwords",
    "language_detection_threshold": "--language-detection-threshold",
    "language_detection_segments": "--language-detection-segments",
}


def epilog() -> str:
    """`tokenmap transcribe --help`'s last part: :data:`PARAMETERS` as a two-column list."""
    width = max(map(len, PARAMETERS))
    rows = []
    for name, where in PARAMETERS.items():
        lines = textwrap.wrap(where, 100 - width, break_on_hyphens=False) or [""]
        rows += [f"  {name:<{width}}  {lines[0]}"] + [f"  {'':<{width}}  {line}" for line in lines[1:]]
    rows = "\n".join(rows)
    return ("Every parameter of faster-whisper's WhisperModel.transcribe, and the option that sets it "
            f"(docs/USAGE.md, 'faster-whisper parameters'):\n\n\b\n{rows}")


def parse_temperature(text: str) -> float | list[float]:
    """One temperature, or a comma-separated list of them (tried in turn); ValueError otherwise."""
    values = [float(part) for part in text.split(",")]
    if any(not 0.0 <= v <= 2.0 for v in values):
        raise ValueError("temperatures lie between 0 and 2")
    return values[0] if len(values) == 1 else values


def clip_pairs(text: str) -> list[dict]:
    """``START,END,START,...`` (seconds) as spans; a last start alone runs to the end (``end`` None)."""
    values = [float(part) for part in text.split(",")]
    if any(v < 0 for v in values):
        raise ValueError("times are seconds from the start, not negative")
    spans = [{"start": values[i], "end": values[i + 1] if i + 1 < len(values) else None}
             for i in range(0, len(values), 2)]
    if any(s["end"] is not None and s["end"] <= s["start"] for s in spans):
        raise ValueError("each span ends after it starts")
    return spans


class _Parsed(click.ParamType):
    """A click type from a parser that raises ValueError; ``none`` (when ``optional``) is None."""

    def __init__(self, name: str, parse, optional: bool = False):
        self.name, self.parse, self.optional = name, parse, optional

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        if self.optional and value.strip().lower() == "none":
            return None
        try:
            return self.parse(value.strip())
        except ValueError as exc:
            builtin = str(exc).startswith(("could not convert", "invalid literal"))
            self.fail(f"expected {self.name}, not {value!r}" if builtin else f"{value!r}: {exc}", param, ctx)


def _suppress_tokens(text: str) -> list[int]:
    return [int(part) for part in text.split(",")] if text else []


TEMPERATURE = _Parsed("T[,T...]", parse_temperature)
OPTIONAL_FLOAT = _Parsed("FLOAT|none", float, optional=True)
TOKEN_IDS = _Parsed("ID[,ID...]|none", _suppress_tokens, optional=True)
CLIPS = _Parsed("START,END[,...]", lambda text: clip_pairs(text) and text)

_OPTIONS = [
    click.option("--temperature", type=TEMPERATURE, default=",".join(map(str, TEMPERATURES)), show_default=True,
                 help="Sampling temperature, or a comma-separated list tried in turn when a window fails the "
                      "thresholds below (faster-whisper's fallback). 0 alone keeps every window greedy, which a "
                      "map drafts; a window decoded at a temperature above 0 is sampled, never drafted."),
    click.option("--best-of", type=click.IntRange(1, 32), default=5, show_default=True,
                 help="Candidates sampled at a temperature above 0; the most likely is kept."),
    click.option("--patience", type=click.FloatRange(min=0.0, min_open=True), default=1.0, show_default=True,
                 help="Beam search patience (with --beam-size > 1): >1 keeps searching after the first "
                      "beams finish."),
    click.option("--length-penalty", type=float, default=1.0, show_default=True,
                 help="Exponential length penalty of beam search and best-of ranking."),
    click.option("--repetition-penalty", type=click.FloatRange(min=0.0, min_open=True), default=1.0,
                 show_default=True, help=">1 penalises tokens generated before (windows then decode without "
                                         "the map)."),
    click.option("--no-repeat-ngram-size", type=click.IntRange(0, 64), default=0, show_default=True,
                 help="Never repeat an n-gram of this size (0: off; windows then decode without the map)."),
    click.option("--compression-ratio-threshold", type=OPTIONAL_FLOAT, default="2.4", show_default=True,
                 help="A window whose text compresses (gzip) by more than this has failed and is decoded again "
                      "at the next temperature (repeated text compresses well); none: never."),
    click.option("--log-prob-threshold", type=OPTIONAL_FLOAT, default="-1.0", show_default=True,
                 help="A window whose average token log probability is below this has failed, as above; none: "
                      "never."),
    click.option("--no-speech-threshold", type=OPTIONAL_FLOAT, default="0.6", show_default=True,
                 help="A window whose no-speech probability is above this, and whose log probability is below "
                      "--log-prob-threshold, is silence and skipped; none: never."),
    click.option("--condition-on-previous-text/--no-condition-on-previous-text", default=True, show_default=True,
                 help="Give each window the text before it as prompt (consistent spelling and style). Off: "
                      "windows are independent, less prone to repeating a failure. Batched decoding "
                      "(--batch-size > 1) never conditions."),
    click.option("--prompt-reset-on-temperature", type=click.FloatRange(0.0, 2.0), default=0.5, show_default=True,
                 help="A window decoded at a temperature above this gives the next window no previous text."),
    click.option("--initial-prompt", default=None, metavar="TEXT",
                 help="Text given to the first window as if it had been said before it: names, spellings and "
                      "punctuation to follow (e.g. 'Asterisk PBX, voicemail, PIN.')."),
    click.option("--prefix", default=None, metavar="TEXT",
                 help="Text the first window's transcript starts with; decoding continues after it (the first "
                      "window then decodes without the map)."),
    click.option("--hotwords", default=None, metavar="TEXT",
                 help="Words or phrases to favour, given to every window as prompt (ignored with --prefix)."),
    click.option("--suppress-blank/--no-suppress-blank", default=True, show_default=True,
                 help="Never start a window with a blank."),
    click.option("--suppress-tokens", type=TOKEN_IDS, default="-1", show_default=True,
                 help="Token ids never generated, comma-separated; -1: the model's non-speech symbols; none: "
                      "suppress nothing (windows then decode without the map)."),
    click.option("--without-timestamps/--with-timestamps", default=None,
                 help="Decode text tokens only: a segment is then a whole 30 s window. [default: with "
                      "timestamps; without with --batch-size > 1, as faster-whisper's pipelines do]"),
    click.option("--max-initial-timestamp", type=click.FloatRange(0.0), default=1.0, show_default=True,
                 help="Seconds into a window by which its first segment must start."),
    click.option("--max-new-tokens", type=click.IntRange(1, 448), default=None,
                 help="Tokens a window may generate at most [default: as many as the model allows]."),
    click.option("--prepend-punctuations", default=PREPEND_PUNCTUATIONS, show_default=True,
                 help="With --word-timestamps: marks joined to the word after them."),
    click.option("--append-punctuations", default=APPEND_PUNCTUATIONS, show_default=True,
                 help="With --word-timestamps: marks joined to the word before them."),
    click.option("--hallucination-silence-threshold", type=click.FloatRange(min=0.0, min_open=True), default=None,
                 metavar="SECONDS",
                 help="With --word-timestamps: skip silences longer than this around a segment that looks "
                      "invented [default: off]."),
    click.option("--multilingual", is_flag=True,
                 help="Detect the language of every window (speech that switches language)."),
    click.option("--language-detection-threshold", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True,
                 help="Without --language: a language this likely on the first window is taken; below it, "
                      "more windows are heard (--language-detection-segments)."),
    click.option("--language-detection-segments", type=click.IntRange(1, 100), default=1, show_default=True,
                 help="Windows (30 s each) language detection may hear at most."),
    click.option("--chunk-length", type=click.IntRange(1, 30), default=None, metavar="SECONDS",
                 help="Seconds of audio per window [default: the model's, 30]."),
    click.option("--clip-timestamps", type=CLIPS, default=None, metavar="START,END[,...]",
                 help="Transcribe only these spans (seconds; a last START alone runs to the end). VAD is then "
                      "skipped."),
    click.option("--vad-threshold", type=click.FloatRange(0.0, 1.0), default=None,
                 help="VAD: speech probability above which a frame is speech [default: 0.5]."),
    click.option("--vad-neg-threshold", type=click.FloatRange(0.0, 1.0), default=None,
                 help="VAD: probability below which speech ends [default: --vad-threshold minus 0.15]."),
    click.option("--vad-min-speech-ms", type=click.IntRange(0), default=None,
                 help="VAD: shorter speech is dropped [default: 0]."),
    click.option("--vad-max-speech-s", type=click.FloatRange(min=0.0, min_open=True), default=None,
                 help="VAD: longer speech is split at a pause [default: no limit]."),
    click.option("--vad-min-silence-ms", type=click.IntRange(0), default=None,
                 help="VAD: a pause this long ends a stretch of speech [default: 2000; 160 with --batch-size > 1]."),
    click.option("--vad-speech-pad-ms", type=click.IntRange(0), default=None,
                 help="VAD: audio kept on each side of speech [default: 400]."),
]

#: options whose ``none`` is passed on (faster-whisper then skips that check)
OFF_WHEN_NONE = ("compression_ratio_threshold", "log_prob_threshold", "no_speech_threshold", "suppress_tokens")
#: the options :func:`decoding_options` adds, by destination name
NAMES = [opt(lambda **kw: None).__click_params__[0].name for opt in _OPTIONS]


def decoding_options(command):
    """Decorate ``command`` with the decoding options (in :data:`_OPTIONS`' order in ``--help``)."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def decoding_kwargs(values: dict, batched: bool) -> dict:
    """faster-whisper ``transcribe`` keyword arguments from the options' ``values`` (by destination name).

    ``batched``: for faster-whisper's ``BatchedInferencePipeline`` (--batch-size > 1), which takes its
    spans as dicts, starts its VAD from other parameters and sets the longest speech itself. Raises
    ``click.UsageError`` for an option that does not apply there.
    """
    kwargs = {name: values[name] for name in NAMES
              if name not in VAD_FIELDS and (values[name] is not None or name in OFF_WHEN_NONE)}
    if kwargs["suppress_tokens"] is None:
        kwargs["suppress_tokens"] = []
    vad = {VAD_FIELDS[name]: values[name] for name in VAD_FIELDS if values[name] is not None}
    if batched:
        if "max_speech_duration_s" in vad:
            raise click.UsageError("--vad-max-speech-s does not apply with --batch-size > 1: speech chunks are cut "
                                   "at --chunk-length (30 s)")
        vad = {**BATCHED_VAD, **vad} if vad else vad
        if "clip_timestamps" in kwargs:
            spans = clip_pairs(kwargs["clip_timestamps"])
            if spans[-1]["end"] is None:
                raise click.UsageError("--clip-timestamps with --batch-size > 1 needs START,END pairs")
            kwargs["clip_timestamps"] = spans
    if vad:
        kwargs["vad_parameters"] = vad
    return kwargs
