"""`tokenmap stream`: live captions of a file (or the microphone) with self-speculative decoding."""

from __future__ import annotations

import json
import shutil
import sys

import click

from .errors import fail
from .options import encoder_option

DIM, RESET, CLEAR = "\x1b[2m", "\x1b[0m", "\r\x1b[K"


class Display:
    """TTY: committed text as lines, the tentative tail dimmed on the current line; piped: plain lines."""

    def __init__(self, tty: bool, jsonl: bool):
        self.tty, self.jsonl = tty and not jsonl, jsonl
        self.pending = False

    def show(self, u) -> None:
        if self.jsonl:
            r = u.record
            click.echo(json.dumps({
                "update": u.index, "audio_end": round(u.audio_end, 2), "committed": u.new_committed_text,
                "tentative": u.tentative_text, "final": u.final, "decode_ms": round(1000 * r.decode_seconds, 1),
                "encode_ms": round(1000 * r.encode_seconds, 1), "buffer_s": round(r.buffer_seconds, 2),
                "draft": r.draft, "accepted": r.accepted}, ensure_ascii=False))
            return
        if not self.tty:
            if u.new_committed_text:
                click.echo(u.new_committed_text)
            return
        width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
        out = CLEAR
        if u.new_committed_text:
            out += u.new_committed_text + "\n"
        tail = u.tentative_text[-width:]
        out += f"{DIM}{tail}{RESET}" if tail else ""
        sys.stdout.write(out)
        sys.stdout.flush()
        self.pending = bool(tail)

    def close(self) -> None:
        if self.tty and self.pending:
            sys.stdout.write(CLEAR)
            sys.stdout.flush()


def summary_line(s: dict, interrupted: bool, language: str | None = None) -> str:
    def fmt(v, spec, unit=""):
        return "-" if v is None else f"{v:{spec}}{unit}"

    return (
        f"{'interrupted; ' if interrupted else ''}language {language or '-'}; {s['updates']} updates, "
        f"decode {s['decode_ms_per_update']:.0f} ms/update"
        f" (scratch {fmt(s['scratch_ms_per_update'], '.0f', ' ms')}, "
        f"cost {fmt(s['decode_cost_vs_scratch'], '.2f', 'x')},"
        f" speed-up {fmt(s['speedup_vs_scratch'], '.2f', 'x')}), encode {s['encode_ms_per_update']:.0f} ms/update;"
        f" NE {s['ne']:.2f} (mask-{s['mask_k']}: {s['ne_masked']:.2f}), A/D {s['a_d']:.1%}, A/O {s['a_o']:.1%};"
        f" latency {fmt(s['latency_mean'], '.2f', ' s')} mean, {fmt(s['latency_max'], '.2f', ' s')} max;"
        f" short audio context on {s['short_updates']} update(s), {s['guarded_updates']} sent back to 30 s;"
        f" encoding and decoding took {fmt(s['compute_rtf'], '.2f', 'x')} the audio's duration"
        + (f"; an update costs {s['update_cost_vs_30s']:.2f}x re-decoding the buffer at 30 s"
           if s.get("update_cost_vs_30s") is not None else "")
    )


@click.command()
@click.argument("source", type=str)
@click.option("--model", "-m", default="base", show_default=True, help="Packaged name, CT2 directory or model name.")
@click.option("--map", "map_path", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="Token map: drafts beyond the previous hypothesis.")
@click.option("--language", "-l", default=None,
              help="Spoken language code (en, es, fr…); detected when omitted (or 'auto'): on the growing buffer at "
                   "each update until two updates in a row name the same language with probability 0.8 or more "
                   "(or the buffer fills); nothing is committed before.")
@click.option("--update", "update", type=click.FloatRange(0.2, 10.0), default=1.0, show_default=True,
              help="Seconds of audio between updates.")
@click.option("--realtime", is_flag=True, help="Play the file at wall-clock speed (default: as fast as possible).")
@click.option("--beta", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
              help="Verification bias toward the previous hypothesis (0 = greedy; exactly greedy with --exact).")
@click.option("--mask-k", type=click.IntRange(0, 50), default=0, show_default=True,
              help="Hide the last k tentative tokens on screen (display only).")
@click.option("--jsonl", is_flag=True, help="One JSON object per update, then a summary object.")
@click.option("--scratch", is_flag=True, help="Also encode every update as 30 s and decode it from scratch, as "
                                            "whisper_streaming-style tools do, to measure the speed-up.")
@click.option("--compute-type", type=click.Choice(["int8", "float32", "int8_float32"]), default="int8",
              show_default=True)
@click.option("--exact", is_flag=True, help="Decode an int8 model with a float32 copy: verification then equals "
                                          "plain greedy decoding (slower).")
@click.option("--threads", type=click.IntRange(1, 64), default=None, help="CPU threads [default: all, at most 8].")
@encoder_option
@click.option("--audio-context", type=click.Choice(["auto", "full"]), default="auto", show_default=True,
              help="auto: a buffer shorter than 30 s is encoded as its audio plus a margin (a guard sends an update "
                   "whose output looks broken back to 30 s); full: every update is encoded as 30 s.")
def stream(source, model, map_path, language, update, realtime, beta, mask_k, jsonl, scratch, compute_type,
           exact, threads, encoder, audio_context):
    """Live captions of SOURCE (an audio file, or 'mic' for the microphone).

    Every update re-decodes the growing buffer with the previous hypothesis as
    the draft; text that two updates agree on is committed.
    """
    from tokenmap.audio import AudioError, load_audio
    from tokenmap.stream.audio import AudioSourceError, FileSource, MicrophoneSource
    from tokenmap.stream.live import StreamModel, StreamOptions, StreamTranscriber

    try:  # the model first, as `transcribe` does: the same errors and exit codes for the same inputs
        stream_model = StreamModel.load(model, compute_type=compute_type, threads=threads, token_map=map_path,
                                        exact=exact, encoder=encoder, audio_context=audio_context)
    except Exception as exc:  # ModelError, EngineError, MapFormatError, CTranslate2 load errors
        fail(exc, exit_code=2)
    try:
        if source == "mic":
            chunks = MicrophoneSource().chunks(update)
        else:
            chunks = FileSource(load_audio(source), realtime=realtime).chunks(update)
    except (AudioError, AudioSourceError) as exc:
        fail(exc)
    options = StreamOptions(update_seconds=update, beta=beta, mask_k=mask_k,
                            language=None if language == "auto" else language,
                            scratch="generate" if scratch else None)
    st = StreamTranscriber(stream_model, options)
    display = Display(sys.stdout.isatty(), jsonl)
    interrupted = False
    try:
        for u in st.run(chunks):
            display.show(u)
    except KeyboardInterrupt:
        interrupted = True
    display.close()
    s = st.metrics.summary(mask_k)
    if jsonl:
        click.echo(json.dumps({"summary": s, "text": st.committed_text, "language": st.language,
                               "interrupted": interrupted}))
        return
    # committed text was written line by line as it was committed (also when interrupted)
    click.echo(summary_line(s, interrupted, st.language), err=True)
