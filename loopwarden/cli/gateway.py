"""``loopwarden gateway``: the model gateway any agent points its base URL at."""

from __future__ import annotations

import click


@click.command()
@click.option(
    "--port", type=int, help="Port to listen on [default: LOOPWARDEN_GATEWAY__PORT, 4100]."
)
@click.option("--bind", help="Interface to listen on [default: 127.0.0.1].")
@click.option("--openai-base-url", metavar="URL", help="Upstream of the OpenAI-compatible APIs.")
@click.option("--anthropic-base-url", metavar="URL", help="Upstream of Anthropic Messages.")
def gateway(
    port: int | None, bind: str | None, openai_base_url: str | None, anthropic_base_url: str | None
) -> None:
    """Watch every step of any agent between it and its model (docs/gateway.md).

    Point the agent at it — OPENAI_BASE_URL=http://127.0.0.1:4100/v1 or
    ANTHROPIC_BASE_URL=http://127.0.0.1:4100 — and it publishes each tool call, result
    and turn, puts loopwarden's warnings in front of the model, and at the ladder's end
    answers in the model's place."""
    import uvicorn

    from loopwarden.gateway.server import create_app
    from loopwarden.settings import Settings

    settings = Settings()
    given = {
        "port": port,
        "bind": bind,
        "openai_base_url": openai_base_url,
        "anthropic_base_url": anthropic_base_url,
    }
    updates = {name: value for name, value in given.items() if value is not None}
    cfg = settings.gateway.model_copy(update=updates)
    settings = settings.model_copy(update={"gateway": cfg})
    click.echo(
        f"loopwarden gateway on http://{cfg.bind}:{cfg.port} "
        f"(OpenAI → {cfg.openai_base_url}, Anthropic → {cfg.anthropic_base_url}; "
        f"broker {settings.kafka.bootstrap_servers})",
        err=True,
    )
    uvicorn.run(create_app(settings), host=cfg.bind, port=cfg.port, log_level="warning")
