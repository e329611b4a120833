"""``loopwarden hooks``: the Claude Code settings that send its hooks to a worker."""

from __future__ import annotations

import click

from loopwarden.schemas import codec

DEFAULT_PORT = 6066


@click.command()
@click.option(
    "--url",
    metavar="URL",
    help="The worker's hook endpoint [default: http://127.0.0.1:<LOOPWARDEN_WEB_PORT or "
    f"{DEFAULT_PORT}>/hooks/claude-code].",
)
@click.option(
    "--token-env",
    metavar="NAME",
    help="Send 'Authorization: Bearer $NAME' (for a worker with LOOPWARDEN_API__TOKEN set).",
)
def hooks(url: str | None, token_env: str | None) -> None:
    """Print the "hooks" block for Claude Code's settings.json (.claude/settings.json)."""
    from loopwarden.agents.hooks.claude_code import settings_snippet
    from loopwarden.settings import Settings

    if url is None:
        port = Settings().web_port or DEFAULT_PORT
        url = f"http://127.0.0.1:{port}/hooks/claude-code"
    click.echo(codec.dumps_indented(settings_snippet(url, token_env)))
