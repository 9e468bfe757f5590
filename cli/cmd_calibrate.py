"""`tokenmap calibrate`: measure what a verify pass costs on this machine.

Example::

    tokenmap calibrate --model base --compute-type int8 --threads 2   # the int8 decoder's verify passes
    tokenmap calibrate --encoder                                      # which engine encodes fastest here
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
@click.option("--threads", default=None, type=click.IntRange(1, 256),
              help="CPU threads (intra_threads); a curve serves transcriptions with as many threads "
                   "[default: as `tokenmap transcribe`: all visible cores, at most 8].")
@click.option("--max-tokens", default=32, show_default=True, type=click.IntRange(1, 64),
              help="Measure batches of 1..N tokens.")
@click.option("--reps", default=5, show_default=True, type=click.IntRange(1, 100), help="Repetitions (median).")
@click.option("--encoder", "encoders", is_flag=True,
              help="Instead: time the encoder engines (CTranslate2 at --compute-type and the OpenVINO precisions "
                   "this CPU runs: f32, int8 weights, bf16, int8-full) on 10 s and 30 s windows and keep the "
                   "result, which --encoder auto chooses from.")
def calibrate(model, compute_type, decoder_compute_type, exact, threads, max_tokens, reps, encoders):
    """Time a verify pass of 1..N tokens on the real path (engine call, logits, rules); save the curve.

    With --encoder, time the encoder engines instead and keep what `--encoder auto` chooses from.
    """
    from tqdm import tqdm

    from tokenmap.decode.calibration import calibrate as measure
    from tokenmap.decode.cost import calibration_path, save_cost_model
    from tokenmap.runtime.engine import default_threads
    from tokenmap.runtime.nativelib import row_math_status
    from tokenmap.runtime.precision import decoder_compute_type as decoder_type
    from tokenmap.textok import TokenizerError, model_dir_for

    threads = threads or default_threads()  # the count `tokenmap transcribe` runs with, so its curve applies
    try:
        model_dir = model_dir_for(model)
    except TokenizerError as exc:
        fail(exc)
    if encoders:
        return _calibrate_encoders(model_dir, compute_type, threads, reps)
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
    if cost.plain_step_ms > 0:
        click.echo(f"plain generate (windows without drafts): {cost.plain_step_ms:.2f} ms a token, "
                   f"{cost.plain_prefill_ms:.2f} ms the prompt")
    click.echo("forward_batch (tokens: ms, in steps):")
    for n, ms in enumerate(cost.batch_ms, 1):
        click.echo(f"  {n:2d}: {ms:7.2f} ms  {ms / cost.step_ms:5.2f}")
    path = save_cost_model(cost, calibration_path(model_dir, compute_type, threads),
                           {"model": str(model_dir), "compute_type": compute_type, "threads": threads,
                            "row_math": row_math_status()})
    click.echo(f"saved {path} (drafting uses it made non-decreasing: a longer pass never cheaper)")


def _calibrate_encoders(model_dir, compute_type: str, threads: int, reps: int) -> None:
    from tokenmap.encoders.choice import measure_apart, plan_from_measurement, plan_summary, save_measurement
    from tokenmap.encoders.openvino import openvino_available

    missing = openvino_available()
    if missing:
        fail(missing)
    click.echo(f"timing the encoder engines on {model_dir.name} ({threads} threads, {reps} rounds) ...")
    try:
        data = measure_apart(model_dir, compute_type, threads, reps=reps)
    except Exception as exc:  # engine errors: one line, no traceback
        fail(f"encoder calibration failed: {exc}")
    for name, per in data["ms"].items():
        click.echo(f"  {name:18s} " + "  ".join(f"{int(f) // 100:2d} s: {ms:7.1f} ms" for f, ms in per.items()))
    for name, why in data["unavailable"].items():
        click.echo(f"  {name:18s} left out: {why}")
    path = save_measurement(model_dir, compute_type, threads, data)
    click.echo(f"--encoder auto: {plan_summary(plan_from_measurement(data, 'ctranslate2', compute_type))}")
    click.echo(f"saved {path}")
