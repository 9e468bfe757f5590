"""`tokenmap transcribe`: faster-whisper transcription, optionally with a token map."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from tokenmap.writers import FORMATS, STREAMED, SegmentWriter

from .decoding import decoding_kwargs, decoding_options, epilog
from .errors import fail, report
from .options import encoder_option


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def encoder_name(whisper, compute_type: str) -> str:
    """What encodes, as `tokenmap doctor` names it (:func:`tokenmap.encoders.describe`)."""
    from tokenmap.encoders import describe

    encoder = getattr(getattr(whisper, "model", None), "encoder", None)  # faster-whisper's model alone: none
    return describe(encoder.choices()) if encoder is not None else f"ctranslate2 {compute_type}"


def drafting_note(stats: dict, mapped: bool, fork: bool) -> str:
    """Whether drafting ran on a file: on how many of its windows, or why not at all."""
    if not mapped:
        return "drafting off (no --map or --recall)"
    if not fork:
        return "drafting off (stock CTranslate2: the engine fork is not installed)"
    windows = stats.get("windows", 0) + stats.get("fallbacks", 0)
    return f"drafting ran on {stats.get('windows', 0) - stats.get('plain_windows', 0)} of {windows} window(s)"


def _summary(t, encoder: str, drafting: str) -> str:
    s = t.stats
    line = (
        f"{t.path}: {s['audio_seconds']:.1f} s audio in {s['wall_seconds']:.2f} s "
        f"(RTF {s['rtf']:.3f}), language {t.language or '-'}; encoder {encoder}, {drafting}"
    )
    if "acceptance_rate" in s:
        line += (
            f"; drafted {s['drafted']}, accepted {s['accepted']} "
            f"(A_r {s['acceptance_rate']:.1%}, A_l {s['acceptance_length']:.2f}), "
            f"{s['verify_passes']} verify passes, decoder {s['decoder_seconds']:.2f} s, "
            f"{s['tokens_per_second']:.0f} tok/s"
        )
    if s.get("short_windows"):
        line += (f"; short audio context on {s['short_windows']} window(s), {s['guarded']} sent back to 30 s "
                 "by the guard (may differ from the 30 s transcript by a word)")
    if s.get("prompt_copies"):
        line += f"; {s['prompt_copies']} window(s) copied the previous text and were decoded again without it"
    if s.get("loops_stopped"):
        line += f"; {s['loops_stopped']} decode(s) stopped as they started to repeat (--no-loop-stop: decode on)"
    return line


def _progress_bar(path: str):
    from tqdm import tqdm

    bar = tqdm(
        total=1.0, desc=Path(path).name, unit="s", file=sys.stderr,
        disable=not sys.stderr.isatty(), bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s [{elapsed}<{remaining}]",
    )

    def update(done: float, total: float) -> None:
        bar.total = round(total, 1)
        bar.n = round(done, 1)
        bar.refresh()

    return bar, update


class _Output:
    """Where one file's transcript goes: stdout, or ``NAME.FMT`` in the output folder.

    txt, srt, vtt and tsv go out a segment at a time, as each is decoded: on stdout, or with
    ``-o`` into ``NAME.FMT.partial``, flushed after every segment and renamed to ``NAME.FMT``
    when the file is done, so ``NAME.FMT`` is always complete (and an older one stays until
    then). json is written when the file is done. :meth:`abandon` after a failure removes a
    partial file that holds no segment and returns the path of one that does.
    """

    def __init__(self, path: str, fmt: str, output_dir: Path | None, many: bool):
        self.fmt, self.count = fmt, 0
        self.writer = SegmentWriter(fmt) if fmt in STREAMED else None
        self.banner = f"==> {path} <==\n" if output_dir is None and many and fmt == "txt" else ""
        self.target = None if output_dir is None else output_dir / f"{Path(path).stem}.{fmt}"
        self.partial = None if self.target is None else self.target.with_name(f"{self.target.name}.partial")
        self._file = None
        self._started = False

    def segment(self, segment) -> None:
        """Write ``segment`` now (streamed formats); called by ``transcribe_file`` per segment."""
        if self.writer is not None:
            self.count += 1
            self._write(self.writer.piece(segment))

    def finish(self, transcript) -> None:
        """The file is done: complete the output (and move the partial file into place)."""
        if self.writer is None:
            from tokenmap.writers import render

            if self.target is None:
                click.echo(self.banner + render(transcript, self.fmt), nl=False)
            else:
                _write_atomic(self.target, render(transcript, self.fmt))
            return
        self._write("")
        if self._file is not None:
            self._file.close()
            os.replace(self.partial, self.target)

    def abandon(self) -> Path | None:
        """After a failure: the partial file when it holds decoded segments (else it is removed)."""
        if self._file is None:
            return None
        self._file.close()
        if self.count:
            return self.partial
        self.partial.unlink(missing_ok=True)
        return None

    def _write(self, text: str) -> None:
        if not self._started:
            self._started = True
            text = (self.banner if self.target is None else "") + self.writer.header() + text
            if self.target is not None:
                self._file = open(self.partial, "w", encoding="utf-8")
        if not text:
            return
        if self._file is not None:
            self._file.write(text)
            self._file.flush()
            return
        from tqdm import tqdm

        with tqdm.external_write_mode(file=sys.stdout):  # clears a progress bar on the same terminal
            click.echo(text, nl=False)
            sys.stdout.flush()


def _failure(path: str, exc: Exception, partials: list[Path]) -> str:
    """The one error line for a file that failed (naming the partial outputs it left, if any)."""
    from tokenmap.audio import AudioError

    line = str(exc) if isinstance(exc, AudioError) else f"{path}: transcription failed ({type(exc).__name__}: {exc})"
    return line + (f"; the segments decoded before are in {', '.join(map(str, partials))}" if partials else "")


@click.command(epilog=epilog())
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--model", "-m", default="base", show_default=True,
              help="Packaged name (base, tiny.en), CTranslate2 model directory, or faster-whisper model name.")
@click.option("--map", "map_path", type=click.Path(dir_okay=False, path_type=str), multiple=True,
              help="Token map from `tokenmap build`: turns on speculative decoding. Repeat it with one map "
                   "per domain to let the decoder infer which one the audio fits.")
@click.option("--recall", "recall_path", type=click.Path(exists=True, dir_okay=False, path_type=str), default=None,
              help="Recall index from `tokenmap recall`: a segment whose audio was recorded there is drafted whole.")
@click.option("--language", "-l", default=None, help="Spoken language code (en, es, fr…); detected when omitted.")
@click.option("--task", type=click.Choice(["transcribe", "translate"]), default="transcribe", show_default=True)
@click.option("--compute-type", type=click.Choice(["int8", "float32", "int8_float32"]), default="int8",
              show_default=True, help="Weight precision on the CPU.")
@click.option("--decoder-compute-type", type=click.Choice(["auto", "same", "float32", "int8"]), default="auto",
              show_default=True,
              help="Decoder precision. auto: as --compute-type (int8 throughout, the fastest), or float32 with "
                   "--exact; same, float32, int8: explicitly.")
@click.option("--exact", is_flag=True,
              help="Decode an int8 model with a float32 copy of it: the transcript with a map then equals plain "
                   "greedy decoding of that configuration, at a slower decoder and twice the model memory. "
                   "Without it, int8 drafting may change a word where the model's top two choices nearly tie.")
@encoder_option
@click.option("--audio-context", type=click.Choice(["full", "auto"]), default="full", show_default=True,
              help="full: encode every window as 30 s, as Whisper does. auto: encode a short window as its "
                   "audio plus a margin (several times faster on commands and prompts); a guard sends a window "
                   "whose output looks broken (no end, repeats, timestamps past the audio, low confidence) back "
                   "to 30 s. auto may change a transcript by a word: see docs/BENCHMARKS.md, 'Short audio'.")
@click.option("--loop-stop/--no-loop-stop", default=True, show_default=True,
              help="Stop a window's decode once it repeats the same 1-16 tokens back to back (24 tokens, 4 times) "
                   "and keep its text up to there; faster-whisper's temperature fallback still sees it as the "
                   "loop it is. --no-loop-stop decodes loops to the maximum length, as faster-whisper does.")
@click.option("--threads", type=click.IntRange(1, 64), default=None,
              help="CPU threads for CTranslate2 [default: all visible cores, at most 8].")
@click.option("--beam-size", type=click.IntRange(1, 16), default=1, show_default=True,
              help="1 is greedy decoding (the speculative path); >1 uses plain beam search.")
@click.option("--vad/--no-vad", "--vad-filter/--no-vad-filter", "vad", default=True, show_default=True,
              help="Skip non-speech with Silero VAD before decoding. On by default: without it, Whisper repeated "
                   "or invented sentences after pauses of a few seconds (a LibriVox passage with 7 s pauses: WER "
                   "12.7 % against 1.4 %); on single prompts and 25 s call windows it changed about one transcript "
                   "in twenty, either way. --no-vad decodes every sound, e.g. a one-syllable prompt VAD may drop. "
                   "--vad-* below tune it.")
@click.option("--batch-size", type=click.IntRange(1, 64), default=1, show_default=True,
              help="1: decode window after window, each with the text before it as prompt (the quality "
                   "default). N > 1: decode the speech chunks VAD finds N at a time with faster-whisper's "
                   "BatchedInferencePipeline (tokenmap's, computing features batch by batch) around tokenmap's "
                   "model (faster on long files on few cores; no "
                   "previous text as prompt and no temperature fallback: docs/BENCHMARKS.md, 'Long files', "
                   "has its WER).")
@click.option("--word-timestamps", is_flag=True,
              help="Time every word: json lists the words of each segment; srt and vtt write a cue per line "
                   "of words (at most 42 characters), timed from its first word's start to its last word's end.")
@click.option("--format", "-f", "fmt", type=click.Choice(FORMATS + ("all",)), default="txt", show_default=True,
              help="Output format; all: every format, one file each (needs --output-dir).")
@click.option("--output-dir", "-o", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write FILE-stem.FORMAT files here instead of printing. txt, srt, vtt and tsv are written "
                   "segment by segment into FILE-stem.FORMAT.partial, renamed when the file is done.")
@decoding_options
def transcribe(files, model, map_path, recall_path, language, task, compute_type, decoder_compute_type, exact,
               encoder, audio_context, loop_stop, threads, beam_size, vad, batch_size, word_timestamps, fmt,
               output_dir, **decoding):
    """Transcribe audio FILES (any format FFmpeg reads) with Whisper.

    \b
    Examples:
      tokenmap transcribe talk.wav
      tokenmap transcribe -l en -f srt -o subs/ *.wav
      tokenmap transcribe --map maint.tmap report.wav
      tokenmap transcribe --map maint.tmap --map incar.tmap report.wav
      tokenmap transcribe --map ivr.tmap --recall prompts.trec call.wav
      tokenmap transcribe --audio-context auto --map ivr.tmap -l en prompt.wav

    \b
    With faster-whisper's decoding options:
      tokenmap transcribe --initial-prompt "Asterisk PBX, voicemail, PIN." call.wav
      tokenmap transcribe --beam-size 5 --temperature 0 --no-condition-on-previous-text talk.wav
      tokenmap transcribe --word-timestamps -f all -o subs/ talk.wav

    A summary line per file goes to stderr: audio duration, wall time,
    real-time factor, language, the encoder (engine and precision), whether
    drafting ran, and the speculative statistics with --map. A file that fails
    is reported in one line and the others go on; the exit code is 1 if any
    failed, 2 if the model could not be loaded.
    """
    from tokenmap.assembly import ModelOptions
    from tokenmap.audio import AudioError
    from tokenmap.transcriber import TranscribeOptions, load_model, transcribe_file

    if fmt == "all" and output_dir is None:
        raise click.UsageError("-f all writes one file per format: give a folder for them with -o (e.g. -o .)")
    fw_kwargs = decoding_kwargs(decoding, batched=batch_size > 1)

    try:
        whisper = load_model(model, options=ModelOptions(
            compute_type=compute_type, threads=threads or 0, token_map=list(map_path) or None,
            decoder_compute_type=decoder_compute_type, encoder=encoder, recall=recall_path, exact=exact,
            audio_context=audio_context, loop_stop=loop_stop))
    except Exception as exc:  # ModelError, EngineError, MapFormatError, CTranslate2 load errors
        fail(exc, exit_code=2)
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
    options = TranscribeOptions(language=language, task=task, beam_size=beam_size, vad=vad,
                                word_timestamps=word_timestamps, batch_size=batch_size, decoding=fw_kwargs)
    engine = encoder_name(whisper, compute_type)
    mapped, fork = bool(map_path) or recall_path is not None, getattr(whisper, "drafting", False)
    formats = FORMATS if fmt == "all" else (fmt,)
    failed = 0
    for path in files:
        bar, update = _progress_bar(path)
        outs = [_Output(path, f, output_dir, many=len(files) > 1) for f in formats]

        def on_segment(segment, outs=outs):
            for out in outs:
                out.segment(segment)

        try:
            result = transcribe_file(whisper, path, options, progress=update, on_segment=on_segment)
        except (AudioError, RuntimeError, ValueError, MemoryError) as exc:
            failed += 1
            report(_failure(path, exc, [p for p in (out.abandon() for out in outs) if p is not None]))
            continue
        except BaseException:  # Ctrl-C: the segments decoded so far stay in the partial files
            for out in outs:
                out.abandon()
            raise
        finally:
            bar.close()
        for out in outs:
            out.finish(result)
        click.echo(_summary(result, engine, drafting_note(result.stats, mapped, fork)), err=True)
    if failed:
        fail(f"{failed} of {len(files)} file(s) failed")
