"""Output sinks from the ``sinks`` setting and the ``loopwarden.sinks`` entry points."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from loopwarden.errors import ConfigurationError
from loopwarden.settings import Settings
from loopwarden.streams.runtime.output_sinks import build_sink, sink_factories

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class Printer:
    outputs = frozenset({"warnings"})

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict]] = []

    def deliver(self, output: str, value: dict) -> None:
        self.seen.append((output, value))


def printer(settings: Settings) -> Printer:
    return Printer()


def not_a_sink(settings: Settings) -> object:
    return object()


def broken(settings: Settings) -> Printer:
    raise RuntimeError("no such channel")


def built(settings: Settings) -> dict[str, object]:
    sinks = {}
    for factory in sink_factories(settings):
        sink = build_sink(factory, settings)
        if sink is not None:
            sinks[factory.name] = sink
    return sinks


def test_a_sink_named_in_the_setting_is_built():
    sinks = built(Settings(sinks=(f"{__name__}:printer",)))
    assert isinstance(sinks[f"{__name__}:printer"], Printer)
    assert "webhook" not in sinks  # built in, but not asked for


def test_the_example_sink_writes_what_it_is_given(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.setenv("WARNINGS_FILE", str(tmp_path / "w.jsonl"))
    (sink,) = built(Settings(sinks=("jsonl_sink:warnings_to_file",))).values()
    sink.deliver("warnings", {"loop_id": "L", "kind": "repeated_outcome"})
    assert (tmp_path / "w.jsonl").read_text() == (
        '{"output": "warnings", "loop_id": "L", "kind": "repeated_outcome"}\n'
    )
    monkeypatch.delenv("WARNINGS_FILE")
    assert built(Settings(sinks=("jsonl_sink:warnings_to_file",))) == {}  # not asked for


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("no_such_module_here:factory", "cannot be imported"),
        (f"{__name__}:no_such_factory", "cannot be imported"),
        (f"{__name__}:EXAMPLES", "is not a factory"),
        (f"{__name__}:not_a_sink", "which is not a sink: it needs `outputs`"),
        (f"{__name__}:broken", "failed to build: RuntimeError('no such channel')"),
    ],
)
def test_a_sink_that_cannot_be_made_stops_the_worker_saying_which(path, says):
    with pytest.raises(ConfigurationError) as caught:
        built(Settings(sinks=(path,)))
    assert f"output sink {path!r} (setting sinks)" in str(caught.value)
    assert says in str(caught.value)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A distribution installed on the path, as pip leaves one: its module and a
    ``dist-info`` with an ``entry_points.txt``."""

    def install(entry_points: str) -> None:
        (tmp_path / "team_sinks.py").write_text(
            "class Chat:\n"
            "    outputs = frozenset({'warnings'})\n"
            "    def deliver(self, output, value):\n        pass\n"
            "def make(settings):\n    return Chat()\n"
        )
        info = tmp_path / "team_sinks-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: team-sinks\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
        monkeypatch.syspath_prepend(str(tmp_path))

    return install


def test_an_installed_package_registers_a_sink_by_entry_point(installed):
    installed("[loopwarden.sinks]\nteam = team_sinks:make\n")
    factories = {f.name: f for f in sink_factories(Settings())}
    assert factories["team"].origin == "entry point 'team_sinks:make' of team-sinks"
    assert type(built(Settings())["team"]).__name__ == "Chat"


def test_a_broken_entry_point_names_its_distribution(installed):
    installed("[loopwarden.sinks]\nteam = team_sinks:missing\n")
    with pytest.raises(
        ConfigurationError,
        match=r"'team' \(entry point 'team_sinks:missing' of "
        r"team-sinks\) cannot be imported",
    ):
        built(Settings())


def test_two_sinks_of_one_name_are_refused(installed):
    installed("[loopwarden.sinks]\nwebhook = team_sinks:make\n")
    with pytest.raises(ConfigurationError, match="two output sinks are named 'webhook'"):
        sink_factories(Settings())
