"""`tokenmap calibrate`: measure what a verify pass costs on this machine.

Example::

    tokenmap calibrate --model base --compute-type int8 --threads 2   # measures the float32 decoder
"""

from __future__ import annotations

import sys

import click

from .errors import fail


@click.command()
@click.option("--model", default="base", show_default=True, help="Whisper model name or CTranslate2 directory.")
@click.option("--compute-type", default="int8", show_default=True,
              help="CTranslate2 compute type, as given to `tokenmap transcribe`.")
@click.option("--decoder-compute-type", type=click.Choice(["auto", "same", "float32", "int8"]), default="auto",
              show_default=True, help="As for `tokenmap transcribe`: the curve is measured for the decoder's "
                                      "precision (auto: as --compute-type, float32 with --exact).")
@click.option("--exact", is_flag=True, help="Calibrate the float32 decoder that `tokenmap transcribe --exact` uses.")
@click.option("--threads", default=2, show_default=True, type=click.IntRange(1, 256), help="intra_threads.")
@click.option("--max-tokens", default=32, show_default=True, type=click.IntRange(1, 64),
              help="Measure batches of 1..N tokens.")
@click.option("--reps", default=5, show_default=True, type=click.IntRange(1, 100), help="Repetitions (median).")
def calibrate(model, compute_type, decoder_compute_type, exact, threads, max_tokens, reps):
    """Time a verify pass of 1..N tokens on the real path (engine call, logits, rules); save the curve."""
    from tqdm import tqdm

    from tokenmap.decode.cost import calibrate as measure
    from tokenmap.decode.cost import calibration_path, save_cost_model
    from tokenmap.runtime.precision import decoder_compute_type as decoder_type
    from tokenmap.textok import TokenizerError, model_dir_for

    try:
        model_dir = model_dir_for(model)
    except TokenizerError as exc:
        fail(exc)
    compute_type = decoder_type(compute_type, decoder_compute_type, exact)  # the curve is the decoder's
    click.echo(f"decoder compute type: {compute_type}")
    bar = tqdm(total=reps, unit=" round", file=sys.stderr, disable=not sys.stderr.isatty(), desc="calibrate")
    try:
        cost = measure(model_dir, compute_type, threads, max_tokens, reps, progress=lambda n: bar.update(1))
    except Exception as exc:  # engine errors: one line, no traceback
        bar.close()
        fail(f"calibration failed: {exc}")
    bar.close()
    click.echo(f"prefill (once per window): {cost.prefill_ms:.2f} ms  {cost.prefill_ms / cost.step_ms:5.2f} steps")
    click.echo(f"forward_step: {cost.step_ms:.2f} ms, of which {cost.loop_ms:.2f} ms the loop's own "
               "(what plain generate does not pay a token)")
    click.echo("forward_batch (tokens: ms, in steps):")
    for n, ms in enumerate(cost.batch_ms, 1):
        click.echo(f"  {n:2d}: {ms:7.2f} ms  {ms / cost.step_ms:5.2f}")
    path = save_cost_model(cost, calibration_path(model_dir, compute_type, threads),
                           {"model": str(model_dir), "compute_type": compute_type, "threads": threads})
    click.echo(f"saved {path} (drafting uses it made non-decreasing: a longer pass never cheaper)")
