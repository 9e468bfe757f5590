"""How every `tokenmap` command reports a failure: one line on stderr, ``Error: <message>``.

The prefix is click's own: click prints ``Error: ...`` for a bad option or a
missing argument, so a command's failures and click's usage errors look the
same. Commands call :func:`report` for a failure they go on after (one file
of many) and :func:`fail` for one that ends the command.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

PREFIX = "Error: "


def one_line(message: object) -> str:
    """``message`` as one line (the lines of a multi-line message joined by spaces)."""
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


def report(message: object) -> None:
    """Print ``Error: <message>`` on stderr (one line) and return."""
    click.echo(PREFIX + one_line(message), err=True)


def fail(message: object, exit_code: int = 1) -> NoReturn:
    """Print ``Error: <message>`` on stderr (one line), then exit with ``exit_code``."""
    report(message)
    sys.exit(exit_code)
