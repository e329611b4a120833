"""docker-compose.yml and the worker image: what can be checked without Docker."""

from __future__ import annotations

import json
import re
import socket
import tomllib
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from opentelemetry.metrics import Observation
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from loopwarden.agents.guardrails.api import check_api_settings
from loopwarden.cli import main
from loopwarden.settings import Settings
from loopwarden.streams.runtime.app import advertised_web_host, create_app
from loopwarden.streams.runtime.telemetry.metrics import WorkerMetrics
from loopwarden.streams.runtime.telemetry.providers import start_telemetry

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


WORKERS = ("worker-1", "worker-2")


def read_env_file(path: Path) -> dict[str, str]:
    """A compose env_file: NAME=VALUE lines, # comments."""
    lines = (line.strip() for line in path.read_text().splitlines())
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_the_tests_start_kafka_workers_with_the_compose_workers_kafka_settings(monkeypatch):
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from test_brokers import kafka_worker_settings

    compose_kafka = worker_settings(monkeypatch).kafka
    tested = kafka_worker_settings(Settings()).kafka
    assert tested.session_timeout_s == compose_kafka.session_timeout_s == 10
    assert tested.fetch_max_wait_ms == compose_kafka.fetch_max_wait_ms == 50


def worker_settings(monkeypatch, name: str = "worker-1") -> Settings:
    """The settings a compose worker runs with, read by the worker's own settings code."""
    worker = compose()["services"][name]
    supplied = {"LOOPWARDEN_API__TOKEN": "t0ken"}
    for env_file in worker.get("env_file", ()):  # environment: wins over env_file
        for variable, value in read_env_file(ROOT / env_file).items():
            monkeypatch.setenv(variable, value)
    for variable, value in worker["environment"].items():
        monkeypatch.setenv(variable, interpolate(str(value), supplied))
    dockerfile = (ROOT / "infra" / "worker.Dockerfile").read_text()
    env_line = next(line for line in dockerfile.splitlines() if line.startswith("ENV "))
    for pair in env_line.split()[1:]:  # the image's own defaults, unless compose sets them
        variable, value = pair.split("=", 1)
        if variable not in worker["environment"]:
            monkeypatch.setenv(variable, value)
    return Settings()


def test_worker_environment_is_valid_settings(monkeypatch):
    settings = worker_settings(monkeypatch)
    check_api_settings(create_app(settings))  # the API would start: a token is required
    assert settings.api.token.get_secret_value() == "t0ken"
    assert settings.analyst.base_url in (None, "")
    assert advertised_web_host(settings) == socket.gethostname()  # the container's name
    host, port = settings.kafka.bootstrap_servers.split(":")
    kafka_env = compose()["services"]["kafka"]["environment"]
    assert f"PLAINTEXT://{host}:{port}" in kafka_env["KAFKA_ADVERTISED_LISTENERS"]
    assert settings.topics.partitions == int(kafka_env["KAFKA_NUM_PARTITIONS"])
    assert settings.topics.replication_factor <= 1  # a single broker


@pytest.mark.parametrize("service", [*WORKERS, "topics"])
def test_worker_image_commands_exist(service):
    command = compose()["services"][service]["command"]
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
    worker = compose()["services"]["worker-1"]
    with pytest.raises(AssertionError, match="LOOPWARDEN_API__TOKEN"):
        interpolate(worker["environment"]["LOOPWARDEN_API__TOKEN"], {})


def mounts(service: dict) -> dict[str, str]:
    """Container path → source (a named volume or a ./ path) of a service's volumes."""
    found = {}
    for item in service.get("volumes", []):
        source, target = item.split(":")[:2]
        found[target] = source
    return found


def test_kafka_keeps_its_log_on_the_volume():
    kafka = compose()["services"]["kafka"]
    log_dirs = kafka["environment"]["KAFKA_LOG_DIRS"]
    assert mounts(kafka)[log_dirs] in compose()["volumes"]


def test_each_worker_has_its_own_data_volume_and_all_share_the_memories(monkeypatch):
    services = compose()["services"]
    data_volumes, memory_volumes, published = set(), set(), set()
    for name in WORKERS:
        settings = worker_settings(monkeypatch, name)
        volumes = mounts(services[name])
        data_volumes.add(volumes[settings.data_dir])
        memory_volumes.add(volumes[settings.memory.uri])
        (port,) = services[name]["ports"]
        host, container = port.split(":")
        assert int(container) == settings.web_port
        published.add(host)
        assert services[name]["depends_on"]["topics"]["condition"] == (
            "service_completed_successfully"
        )
    assert len(data_volumes) == len(WORKERS)  # no two workers share Faust's data directory
    assert len(memory_volumes) == 1 and len(published) == len(WORKERS)
    assert data_volumes | memory_volumes <= set(compose()["volumes"])


def test_every_long_running_service_has_a_health_check():
    services = compose()["services"]
    # topics runs once; the collector's image has no shell (its health_check extension's
    # port is published instead)
    without = {name for name, s in services.items() if "test" not in s.get("healthcheck", {})}
    assert without == {"topics", "otel-collector"}
    collector = services["otel-collector"]
    assert any(p.endswith(":13133") for p in collector["ports"])
    assert load_infra("otel-collector.yaml")["extensions"]["health_check"]["endpoint"].endswith(
        ":13133"
    )


def test_every_mounted_infra_file_exists():
    for service in compose()["services"].values():
        for target, source in mounts(service).items():
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{source} (mounted at {target})"


def load_infra(name: str) -> dict:
    return yaml.safe_load((ROOT / "infra" / name).read_text())


def test_collector_pipelines_use_defined_components_and_reach_jaeger(monkeypatch):
    config = load_infra("otel-collector.yaml")
    for pipeline in config["service"]["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            assert set(pipeline.get(kind, [])) <= set(config[kind]), (kind, pipeline)
    assert set(config["service"]["extensions"]) <= set(config["extensions"])
    jaeger_host = config["exporters"]["otlp/jaeger"]["endpoint"].split(":")[0]
    assert jaeger_host in compose()["services"]
    assert compose()["services"]["jaeger"]["environment"]["COLLECTOR_OTLP_ENABLED"] == "true"
    settings = worker_settings(monkeypatch)
    assert settings.telemetry.traces_exporter == "otlp"
    endpoint = settings.telemetry.otlp_endpoint.removeprefix("http://")
    host, port = endpoint.split(":")
    assert host == "otel-collector"
    http = config["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
    assert http.endswith(f":{port}")


def test_prometheus_scrapes_every_worker_at_its_metrics_endpoint(monkeypatch):
    (job,) = load_infra("prometheus.yml")["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    (targets,) = [c["targets"] for c in job["static_configs"]]
    settings = worker_settings(monkeypatch)
    assert sorted(targets) == [f"{name}:{settings.web_port}" for name in WORKERS]
    for name in WORKERS:
        assert compose()["services"][name]["hostname"] == name
    assert settings.telemetry.prometheus


def test_grafana_is_provisioned_with_prometheus_and_the_dashboard():
    services = compose()["services"]
    grafana = services["grafana"]
    volumes = mounts(grafana)
    (source,) = yaml.safe_load(
        (ROOT / "infra/grafana/provisioning/datasources/prometheus.yml").read_text()
    )["datasources"]
    assert source["url"] == "http://prometheus:9090" and "prometheus" in services
    (provider,) = yaml.safe_load(
        (ROOT / "infra/grafana/provisioning/dashboards/loopwarden.yml").read_text()
    )["providers"]
    host_folder = volumes[provider["options"]["path"]]
    assert (ROOT / host_folder / "loop-health.json").is_file()
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"{provider['options']['path']}/loop-health.json"


def exported_metric_names() -> tuple[set[str], set[str]]:
    """The Prometheus sample and label names a worker serves, from its own metrics code."""
    telemetry = start_telemetry(Settings(web_port=6066))
    lag = Observation(
        1, {"messaging.destination.name": "t", "messaging.destination.partition.id": "0"}
    )
    metrics = WorkerMetrics(telemetry.meter, lambda options: [lag])
    metrics.events("monitor_actions")
    metrics.processed("monitor_actions", 0.001)
    metrics.warning("action_type_spin", "minimal")
    metrics.warning_latency("action_type_spin", 0.01)
    metrics.fleet_warning("delegation_cycle", "stop")
    metrics.dead_letter("decode")
    metrics.memory_rows(1)
    samples = [
        sample
        for family in text_string_to_metric_families(generate_latest(telemetry.registry).decode())
        for sample in family.samples
    ]
    telemetry.shutdown()
    return {s.name for s in samples}, {label for s in samples for label in s.labels}


def test_dashboard_queries_only_metrics_the_worker_exports():
    dashboard = json.loads((ROOT / "infra/grafana/dashboards/loop-health.json").read_text())
    queried = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\bloopwarden_[a-z_]+", target["expr"])
    }
    names, labels = exported_metric_names()
    assert queried and queried - labels <= names, queried - labels - names
    grouped = {
        label
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for group in re.findall(r"by \(([^)]*)\)", target["expr"])
        for label in re.split(r",\s*", group)
    }
    assert grouped - {"le"} <= labels, grouped - labels
    assert {p["datasource"]["uid"] for p in dashboard["panels"]} == {"prometheus"}


def test_agents_tool_spans_reach_the_otlp_role_through_kafka(monkeypatch):
    config = load_infra("otel-collector.yaml")
    pipeline = config["service"]["pipelines"]["traces/tool_spans"]
    (exporter,) = pipeline["exporters"]
    kafka = config["exporters"][exporter]
    settings = worker_settings(monkeypatch)
    assert "otlp" in settings.roles
    assert kafka["topic"] == settings.topics.otlp_spans
    assert kafka["encoding"] in ("otlp_proto", "otlp_json")
    host, port = kafka["brokers"][0].split(":")
    assert f"{host}:{port}" == settings.kafka.bootstrap_servers
    (condition,) = config["processors"]["filter/tool_spans"]["traces"]["span"]
    assert '"gen_ai.operation.name"' in condition and '"execute_tool"' in condition
    # the topic is created by the topics service before the collector starts
    from loopwarden.agents.capabilities import CAPABILITIES
    from loopwarden.streams.tools.topics import topic_names

    assert settings.topics.otlp_spans in topic_names(settings, CAPABILITIES)
    depends = compose()["services"]["otel-collector"]["depends_on"]
    assert depends["topics"]["condition"] == "service_completed_successfully"
