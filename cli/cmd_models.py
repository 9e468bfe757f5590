"""`tokenmap models`: list and assemble the packaged Whisper models."""

import sys

import click

from .errors import report


@click.group()
def models():
    """List or prepare the Whisper models tokenmap can use offline."""


@models.command("list")
def list_models():
    """Show each packaged model and whether it is ready."""
    from tokenmap.models import PACKAGED, available_models

    for name, state in available_models().items():
        click.echo(f"{name:<8} {state}  [{PACKAGED[name].licence}]")


@models.command("prepare")
@click.argument("names", nargs=-1)
def prepare(names):
    """Assemble packaged models (default: all) into the cache; fast when done already."""
    from tokenmap.models import PACKAGED, ModelError, assemble

    failed = False
    for name in names or tuple(PACKAGED):
        if name not in PACKAGED:
            report(f"{name!r} is not a packaged model ({', '.join(PACKAGED)})")
            failed = True
            continue
        try:
            click.echo(f"{name}: {assemble(PACKAGED[name])}")
        except ModelError as exc:
            report(exc)
            failed = True
    sys.exit(1 if failed else 0)
