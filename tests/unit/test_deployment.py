"""docker-compose.yml and the worker image: what can be checked without Docker."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml
from click.testing import CliRunner

from loopwarden.cli import main
from loopwarden.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_worker_environment_is_valid_settings(monkeypatch):
    worker = compose()["services"]["worker"]
    for name, value in worker["environment"].items():
        monkeypatch.setenv(name, str(value))
    settings = Settings()
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
