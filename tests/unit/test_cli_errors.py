"""One error style for the CLI (issue 7): a one-line message and a documented exit code.

"No broker" is a real closed loopback port: the Kafka client really fails to
connect, nothing is mocked.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest
from click.testing import CliRunner

from loopwarden import __version__
from loopwarden.cli import COMMANDS, main
from loopwarden.streams.tools.broker import free_port


@pytest.fixture
def nowhere() -> str:
    return f"127.0.0.1:{free_port()}"  # nothing listens there


@pytest.mark.parametrize(
    "args",
    [["publish", "-"], ["tail", "--timeout", "5"], ["topics"]],
    ids=["publish", "tail", "topics"],
)
def test_no_broker_is_one_line_and_exit_code_3(nowhere, args):
    done = subprocess.run(
        [sys.executable, "-m", "loopwarden", "-b", nowhere, *args],
        input='{"loop_id": "l", "action_type": "a"}\n',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # no traceback, no client log lines
    assert lines[0].startswith(f"Error: cannot reach a Kafka broker at {nowhere}")
    # a broker alone warns nothing: the command that starts one and a worker is named
    assert "start `loopwarden dev`" in lines[0] and "loopwarden broker" not in lines[0]


def test_the_option_also_works_after_the_subcommand(nowhere):
    result = CliRunner().invoke(main, ["topics", "-b", nowhere])
    assert result.exit_code == 3 and nowhere in result.stderr


def test_debug_shows_the_traceback(nowhere):
    result = CliRunner().invoke(main, ["--debug", "-b", nowhere, "topics"])
    assert result.exit_code != 0
    assert result.exc_info is not None  # re-raised for the traceback
    assert type(result.exception).__name__ == "BrokerUnavailableError"


def test_version_and_help():
    runner = CliRunner()
    installed = importlib.metadata.version("loopwarden")  # pyproject.toml's, as installed
    assert __version__ == installed
    assert runner.invoke(main, ["-V"]).output.strip() == f"loopwarden, version {installed}"
    listed = runner.invoke(main, ["--help"]).output
    for name, (_, _, summary) in COMMANDS.items():
        assert f"{name}  " in listed and summary in listed
        assert runner.invoke(main, [name, "--help"]).exit_code == 0


def test_usage_errors_exit_2():
    assert CliRunner().invoke(main, ["tail", "--topic", "nope"]).exit_code == 2
    assert CliRunner().invoke(main, ["no-such-command"]).exit_code == 2


def test_help_and_publish_do_not_import_lancedb_or_faust():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from loopwarden.cli import main\n"
        "for args in (['--help'], ['publish', '--help'], ['tail', '--help'],"
        " ['detect', '--help']):\n"
        "    assert CliRunner().invoke(main, args).exit_code == 0\n"
        "print(sorted(m for m in ('lancedb', 'faust', 'pyarrow') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_bad_memory_score_is_a_usage_error():
    result = CliRunner().invoke(main, ["memory", "write", "x", "--score", "r"])
    assert result.exit_code == 2 and "--score" in result.output


async def test_a_publisher_without_broker_raises_a_publish_error(nowhere):
    """Issue 7: aiokafka's KafkaConnectionError leaked out of the publisher."""
    from loopwarden import AsyncPublisher, BrokerUnavailableError, Publisher, PublishError

    with pytest.raises(PublishError) as caught:
        async with AsyncPublisher(bootstrap_servers=nowhere):
            pass
    assert isinstance(caught.value, BrokerUnavailableError)
    assert nowhere in str(caught.value)
    with pytest.raises(PublishError), Publisher(bootstrap_servers=nowhere):
        pass


async def test_a_subscriber_without_broker_raises_broker_unavailable(nowhere):
    from loopwarden import BrokerUnavailableError, Settings, WarningSubscriber

    settings = Settings(kafka={"bootstrap_servers": nowhere})
    with pytest.raises(BrokerUnavailableError):
        async with WarningSubscriber(settings):
            pass


def test_a_list_setting_that_is_not_json_says_how_to_write_it(monkeypatch):
    """It was a bare `SettingsError: error parsing value for field "sinks"`."""
    monkeypatch.setenv("LOOPWARDEN_SINKS", "my_team.sinks:jsonl_sink")
    result = CliRunner().invoke(main, ["topics", "--plan"])
    assert result.exit_code == 1
    assert "setting sinks [LOOPWARDEN_SINKS] is not JSON" in result.stderr
    assert """LOOPWARDEN_SINKS='["my_team.sinks:jsonl_sink"]'""" in result.stderr
    monkeypatch.delenv("LOOPWARDEN_SINKS")
    monkeypatch.setenv("LOOPWARDEN_DETECTION__TOOLS", "kubectl:poll")
    result = CliRunner().invoke(main, ["topics", "--plan"])
    assert result.exit_code == 1
    assert "LOOPWARDEN_DETECTION__TOOLS is not JSON" in result.stderr
