"""The ``loopwarden`` command line."""

from __future__ import annotations

import logging

import click

from loopwarden import __version__
from loopwarden.cli.demo import demo
from loopwarden.cli.io import detect, publish, tail
from loopwarden.cli.memory import memory
from loopwarden.cli.runtime import broker, dev, topics, worker


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="loopwarden")
@click.option("--verbose", "-v", is_flag=True, help="Log at INFO level.")
def main(verbose: bool) -> None:
    """loopwarden: watch agents' actions on Kafka, detect spins, push warnings back.

    Settings come from LOOPWARDEN_* environment variables (nested with "__", e.g.
    LOOPWARDEN_DETECTION__SPIN_THRESHOLD=4); options below override them.
    """
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


for command in (broker, worker, dev, topics, demo, publish, tail, detect, memory):
    main.add_command(command)

__all__ = ["main"]
