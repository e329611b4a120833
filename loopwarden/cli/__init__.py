"""The ``loopwarden`` command line.

Subcommands are imported when they run (``loopwarden --help`` and ``publish``
never import LanceDB or Faust), failures are one line with a documented exit
code (:mod:`loopwarden.cli.exits`), and the connection options work before or
after the subcommand.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
import threading
from typing import Any

import click

from loopwarden.cli.exits import Exit, classify
from loopwarden.version import VERSION

# name → (module, attribute, one-line help shown by `loopwarden --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "broker": ("loopwarden.cli.runtime", "broker", "Run the embedded Tansu broker on loopback."),
    "worker": ("loopwarden.cli.runtime", "worker", "Run a worker: detect spins, send warnings."),
    "dev": ("loopwarden.cli.runtime", "dev", "Embedded broker plus one worker, for development."),
    "topics": ("loopwarden.cli.runtime", "topics", "Create loopwarden's topics."),
    "demo": ("loopwarden.cli.demo", "demo", "Broker, worker and simulated agents, end to end."),
    "publish": ("loopwarden.cli.io", "publish", "Publish action events from JSON lines."),
    "tail": ("loopwarden.cli.io", "tail", "Follow warnings, reflection requests or dead letters."),
    "detect": ("loopwarden.cli.detect", "detect", "Run the detectors offline over JSON lines."),
    "schema": (
        "loopwarden.cli.schema",
        "schema",
        "JSON Schema of each topic's records (types for other languages).",
    ),
    "replay": (
        "loopwarden.cli.replay",
        "replay",
        "Audit: re-run the decisions over recorded topics and compare.",
    ),
    "hooks": (
        "loopwarden.cli.hooks",
        "hooks",
        "Claude Code: its settings.json hooks block for a worker.",
    ),
    "gateway": (
        "loopwarden.cli.gateway",
        "gateway",
        "Model gateway: any agent watched, no code change.",
    ),
    "memory": ("loopwarden.cli.memory", "memory", "Agent memory in LanceDB, directly."),
    "experience": (
        "loopwarden.cli.experience",
        "experience",
        "Task experience in LanceDB: list, show, match, stats, maintain.",
    ),
}


class LoopwardenGroup(click.Group):
    """Lazily loaded subcommands, and one error style for all of them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        spec = COMMANDS.get(name)
        if spec is None:
            return None
        module, attribute, _ = spec
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    @staticmethod
    def _require_extras(ctx: click.Context) -> None:
        """The subcommand's extras, all named at once before it starts (not for help)."""
        rest = [*getattr(ctx, "_protected_args", ()), *ctx.args]  # subcommand, its arguments
        if rest and not ctx.resilient_parsing and not {"--help", "-h"} & set(rest):
            from loopwarden.cli.extras import require

            require(rest[0], rest[1:])

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, summary) for name, (_, _, summary) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            self._require_extras(ctx)
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            raise click.exceptions.Exit(Exit.INTERRUPTED) from None
        except BrokenPipeError:
            # the reader went away (`loopwarden tail | head`): stop quietly, as `cat` does
            _drop_stdout()
            raise click.exceptions.Exit(Exit.OK) from None
        except Exception as exc:
            if ctx.meta.get("loopwarden.debug"):
                raise
            failure = classify(exc)
            if failure is None:
                click.echo(
                    f"Error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
                    err=True,
                )
                raise click.exceptions.Exit(Exit.ERROR) from None
            raise failure from None


@click.group(
    cls=LoopwardenGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(VERSION, "-V", "--version", prog_name="loopwarden")
@click.option(
    "--bootstrap-servers",
    "-b",
    metavar="HOST:PORT[,…]",
    help="Kafka bootstrap servers for every subcommand [env LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS].",
)
@click.option("--verbose", "-v", is_flag=True, help="Log at INFO level.")
@click.option("--debug", is_flag=True, help="Log at DEBUG level and show tracebacks.")
@click.pass_context
def main(ctx: click.Context, bootstrap_servers: str | None, verbose: bool, debug: bool) -> None:
    """loopwarden: watch agents' actions on Kafka, detect spins, push warnings back.

    Settings come from LOOPWARDEN_* environment variables (nested with "__", e.g.
    LOOPWARDEN_DETECTION__SPIN_THRESHOLD=4); options override them. Exit codes:
    0 ok, 1 error, 2 usage, 3 broker unreachable, 4 bad input, 5 nothing received
    before --timeout, 6 replay differs. Shell completion:
    eval "$(_LOOPWARDEN_COMPLETE=bash_source loopwarden)"
    (zsh_source, fish_source for other shells).
    """
    _unwind_on_signals()
    if bootstrap_servers:  # subcommands (and the workers they start) read it from here
        os.environ["LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS"] = bootstrap_servers
    ctx.meta["loopwarden.debug"] = debug
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not (verbose or debug) and ctx.invoked_subcommand not in ("worker", "dev"):
        # a client command reports an unreachable broker in its own one line
        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


def _drop_stdout() -> None:
    """Point stdout at /dev/null: the interpreter's last flush then has nowhere to fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (a test's capture)
        pass
    finally:
        os.close(devnull)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _unwind_on_signals() -> None:
    """SIGTERM (``timeout``, a service manager) and SIGHUP (a closed terminal) end a
    command as Ctrl-C does: by unwinding, so every process it started (the demo's and
    `dev`'s broker and worker) is stopped by its pid on the way out. Commands that wait
    for a signal set their own handler."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on_signal)


__all__ = ["COMMANDS", "main"]
