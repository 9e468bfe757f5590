"""Entry point of the `tokenmap` command: a click group of thin commands.

Each command lives in its own module and is imported only when it runs, so
`tokenmap --help` does not load CTranslate2.
"""

import importlib
import logging

import click

# command name -> "module:attribute", imported on first use
COMMANDS = {
    "transcribe": "tokenmap_cli.cmd_transcribe:transcribe",
    "doctor": "tokenmap_cli.cmd_doctor:doctor",
    "models": "tokenmap_cli.cmd_models:models",
    "build": "tokenmap_cli.cmd_build:build",
    "inspect": "tokenmap_cli.cmd_build:inspect_map",
    "calibrate": "tokenmap_cli.cmd_calibrate:calibrate",
    "bench": "tokenmap_cli.cmd_bench:bench",
    "stream": "tokenmap_cli.cmd_stream:stream",
    "recall": "tokenmap_cli.cmd_recall:recall",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported when they are looked up."""

    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            return None  # command not available in this build
        return getattr(module, attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tokenmap")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def cli(verbose):
    """tokenmap: faster Whisper decoding on CPU with domain token maps.

    \b
    Typical session:
      tokenmap doctor                              # check the engine and models
      tokenmap transcribe talk.wav                 # plain transcription
      tokenmap build corpora/maintenance/train.txt -o maint.tmap
      tokenmap transcribe --map maint.tmap report.wav
    """
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    from tokenmap.runtime import memory

    memory.install()  # this process is tokenmap's: buffers kept for reuse (tokenmap.runtime.memory)
    logging.getLogger("tokenmap").setLevel(level)


if __name__ == "__main__":  # pragma: no cover
    cli()
