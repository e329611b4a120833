"""docker-compose.yml and the worker image: what can be checked without Docker."""

from __future__ import annotations

import re
import socket
import tomllib
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from loopwarden.agents.guardrails.api import check_api_settings
from loopwarden.cli import main
from loopwarden.settings import Settings
from loopwarden.streams.app import advertised_web_host, create_app

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def interpolate(value: str, env: dict[str, str]) -> str:
    """Docker Compose's ${NAME:-default} and ${NAME:?error} for one value."""

    def replace(match: re.Match[str]) -> str:
        name, op, rest = match.group(1), match.group(2), match.group(3)
        if name in env:
            return env[name]
        if op == ":?":
            raise AssertionError(f"compose requires {name}: {rest}")
        return rest

    return re.sub(r"\$\{(\w+)(:-|:\?)([^}]*)\}", replace, value)


def test_worker_environment_is_valid_settings(monkeypatch):
    worker = compose()["services"]["worker"]
    supplied = {"LOOPWARDEN_API__TOKEN": "t0ken"}
    for name, value in worker["environment"].items():
        monkeypatch.setenv(name, interpolate(str(value), supplied))
    settings = Settings()
    check_api_settings(create_app(settings))  # the API would start: a token is required
    assert settings.api.token.get_secret_value() == "t0ken"
    assert settings.analyst.base_url in (None, "")
    assert advertised_web_host(settings) == socket.gethostname()  # the container's name
    host, port = settings.kafka.bootstrap_servers.split(":")
    kafka_env = compose()["services"]["kafka"]["environment"]
    assert f"PLAINTEXT://{host}:{port}" in kafka_env["KAFKA_ADVERTISED_LISTENERS"]
    assert settings.topics.partitions == int(kafka_env["KAFKA_NUM_PARTITIONS"])
    assert settings.topics.replication_factor <= 1  # a single broker


def test_worker_command_exists():
    command = compose()["services"]["worker"]["command"]
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, result.output


def test_kraft_listeners_are_consistent():
    env = compose()["services"]["kafka"]["environment"]
    names = {item.split(":")[0] for item in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")}
    listeners = {item.split("://")[0] for item in env["KAFKA_LISTENERS"].split(",")}
    assert listeners <= names
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] in listeners
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] in listeners
    node_id = env["KAFKA_NODE_ID"]
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{node_id}@kafka:")


def test_image_copies_every_mapped_package_folder():
    package_dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    dockerfile = (ROOT / "infra" / "worker.Dockerfile").read_text()
    for folder in package_dirs.values():
        assert f"COPY {folder} ./{folder}" in dockerfile


def test_the_token_is_required_by_compose():
    worker = compose()["services"]["worker"]
    with pytest.raises(AssertionError, match="LOOPWARDEN_API__TOKEN"):
        interpolate(worker["environment"]["LOOPWARDEN_API__TOKEN"], {})
