"""`tokenmap recall`: record what recordings sound like and what the model writes for them."""

from __future__ import annotations

from pathlib import Path

import click

from .errors import fail, report


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Recall index to write (give it to `tokenmap transcribe --recall`).")
@click.option("--model", "-m", default="base", show_default=True,
              help="The model that will transcribe with the index (its encoder makes the fingerprints).")
@click.option("--language", "-l", default=None, help="Spoken language code; detected when omitted.")
@click.option("--compute-type", type=click.Choice(["int8", "float32", "int8_float32"]), default="int8",
              show_default=True, help="Weight precision on the CPU.")
@click.option("--threads", type=click.IntRange(1, 64), default=None,
              help="CPU threads for CTranslate2 [default: all visible cores, at most 8].")
@click.option("--append", is_flag=True, help="Add to an existing index instead of writing a new one.")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
def recall(files, output, model, language, compute_type, threads, append, force):
    """Record a recall index of recordings that will be heard again.

    Transcribes FILES with plain greedy decoding and keeps, for every segment,
    fingerprints of the audio where it starts (of the encoder output and of
    the log-mel features) and the tokens the model wrote. `tokenmap transcribe
    --recall INDEX` then drafts a whole segment where its audio is heard again:
    at the start of a window by the encoder output, inside one (prompts played
    back to back in a call) by the log-mel features, which do not depend on the
    speech before. The model still verifies every token: the transcript is
    the one plain decoding gives.

    \b
    Examples:
      tokenmap recall prompts/*.wav -l en -o prompts.trec
      tokenmap transcribe --map ivr.tmap --recall prompts.trec call-0042.wav
    """
    from tokenmap.audio import AudioError
    from tokenmap.decode.recall import load_recall, new_index
    from tokenmap.models import resolve_model
    from tokenmap.runtime.engine import default_threads
    from tokenmap.transcriber import TranscribeOptions, transcribe_file
    from tokenmap.whisper import WhisperModel

    if output.exists() and not (force or append):
        fail(f"{output} exists: use --force to overwrite it or --append to add to it")
    try:
        model_dir = resolve_model(model)
        whisper = WhisperModel(str(model_dir), device="cpu", compute_type=compute_type,
                               cpu_threads=threads or default_threads())
        if not whisper.drafting:
            fail("recording a recall index needs the engine fork (`make engine`; see `tokenmap doctor`)")
        index = (load_recall(output, whisper.hf_tokenizer, model_dir) if append and output.exists()
                 else new_index(model_dir, whisper.hf_tokenizer))
    except Exception as exc:  # ModelError, EngineError, MapFormatError
        fail(exc, exit_code=2)
    whisper.model.recorder = index
    options = TranscribeOptions(language=language, beam_size=1, vad=False)
    failed = 0
    for path in files:
        before = len(index)
        try:
            transcribe_file(whisper, path, options)
        except (AudioError, RuntimeError, ValueError) as exc:
            failed += 1
            report(f"{path}: {exc}")
            continue
        click.echo(f"{path}: {len(index) - before} segments", err=True)
    size = index.save(output, force=True)
    click.echo(f"{output}: {len(index)} segments, {size / 1e6:.1f} MB", err=True)
    if failed:
        fail(f"{failed} of {len(files)} file(s) failed")
