"""A worker runs the agents of its roles (no broker needed to build the app)."""

import ast
import logging
import subprocess
import sys

import pytest

from loopwarden.errors import ConfigurationError
from loopwarden.settings import Settings
from loopwarden.worker import build_worker_app


def agents_of(**changes):
    return set(build_worker_app(Settings().model_copy(update=changes)).agents)


def test_all_roles_by_default():
    names = {name.rsplit(".", 1)[-1] for name in agents_of()}
    assert names == {
        "monitor_actions",
        "apply_guardrails",
        "watch_fleet",
        "analyze_reflections",
        "store_memories",
        "store_lessons",
        "replay_experience",
    }


def test_the_memory_role_stores_clients_writes_and_lessons_with_their_own_windows():
    app = build_worker_app(Settings().model_copy(update={"roles": frozenset({"memory"})}))
    names = {name.rsplit(".", 1)[-1] for name in app.agents}
    assert names == {"store_memories", "store_lessons"}
    topics = app.loopwarden.topics
    assert topics.memory_lessons != topics.memory_writes
    memory = app.loopwarden.memory
    assert memory.lessons_within_s == 2.0 > memory.batch_within_s == 0.5


def test_a_single_role():
    names = {name.rsplit(".", 1)[-1] for name in agents_of(roles=frozenset({"analyst"}))}
    assert names == {"analyze_reflections"}


def test_the_experience_role_alone():
    names = {name.rsplit(".", 1)[-1] for name in agents_of(roles=frozenset({"experience"}))}
    assert names == {"replay_experience"}


def test_no_agents_is_a_configuration_error():
    settings = Settings()
    with pytest.raises(ConfigurationError, match="LOOPWARDEN_ROLES"):
        agents_of(
            roles=frozenset({"analyst"}),
            analyst=settings.analyst.model_copy(update={"enabled": False}),
        )


def test_roles_from_the_environment(monkeypatch):
    monkeypatch.setenv("LOOPWARDEN_ROLES", '["monitor", "guardrails"]')
    assert Settings().roles == {"monitor", "guardrails"}


def worker_logger_levels(settings_args: str, loggers: tuple[str, ...]) -> list[int]:
    """The effective levels of ``loggers`` in a fresh interpreter (logging is global)
    once a Faust worker for ``Settings(<settings_args>)`` has set up its logging."""
    script = (
        "import logging, sys\n"
        "from loopwarden.settings import Settings\n"
        "from loopwarden.streams.runtime.worker import new_faust_worker\n"
        "from loopwarden.worker import build_worker_app\n"
        f"settings = Settings({settings_args})\n"
        "worker = new_faust_worker(build_worker_app(settings), settings)\n"
        "worker._setup_logging()\n"
        f"levels = [logging.getLogger(n).getEffectiveLevel() for n in {loggers!r}]\n"
        "sys.__stdout__.write(f'{levels}\\n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


def test_the_worker_logs_at_its_level_and_builds_no_debug_records():
    # Faust's terminal spinner set the root logger to DEBUG for good: every debug call
    # of aiokafka built a record nobody printed.
    levels = worker_logger_levels("", ("aiokafka.consumer.fetcher",))
    assert levels == [logging.WARNING]


def test_library_loggers_named_for_a_post_mortem_stay_at_info():
    loggers = ("faust.tables.recovery", "faust.transport.consumer")
    levels = worker_logger_levels("log_library_info=['faust.tables.recovery']", loggers)
    assert levels == [logging.INFO, logging.WARNING]
