"""The list of unit tests the no-extension run leaves out (tests/support/extension_calls.py)."""

from __future__ import annotations

import collections
import importlib.util
from pathlib import Path

SUPPORT = Path(__file__).resolve().parents[1] / "support" / "extension_calls.py"
_spec = importlib.util.spec_from_file_location("extension_calls", SUPPORT)
assert _spec is not None and _spec.loader is not None
extension_calls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(extension_calls)


def _module(tmp_path: Path, name: str, text: str = "def test(): pass\n") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_file_none_of_whose_tests_reach_a_pass_is_listed_whole(tmp_path):
    free = _module(tmp_path, "test_free.py")
    counts = collections.Counter({f"{free}::test_a": 0, f"{free}::test_b[1]": 0})
    assert extension_calls.extension_free(counts) == [free]


def test_only_the_tests_that_reach_no_pass_are_listed_by_node_id(tmp_path):
    mixed = _module(tmp_path, "test_mixed.py")
    counts = collections.Counter({f"{mixed}::test_scans": 3, f"{mixed}::test_plain": 0})
    assert extension_calls.extension_free(counts) == [f"{mixed}::test_plain"]


def test_a_pass_reached_while_fixtures_were_set_up_keeps_the_whole_file(tmp_path):
    shared = _module(tmp_path, "test_shared_fixture.py")
    counts = collections.Counter(
        {f"{shared}::test_first": 0, f"{shared}::test_second": 0, shared + extension_calls.SETUP: 2}
    )
    assert extension_calls.extension_free(counts) == []


def test_a_file_that_names_the_switch_always_runs_both_ways(tmp_path):
    switch = _module(tmp_path, "test_switch.py", "LOOPWARDEN_NO_EXTENSIONS = 1\n")
    assert extension_calls.extension_free(collections.Counter({f"{switch}::test": 0})) == []


def test_the_checked_in_list_names_tests_that_exist():
    listed = Path(__file__).resolve().parents[2] / "tests" / "support" / "extension_free.txt"
    root = listed.parents[2]
    for line in listed.read_text().splitlines():
        if line.startswith("#"):
            continue
        module, _, test = line.partition("::")
        assert (root / module).is_file(), line
        if test:
            name = test.split("[")[0].split("::")[-1]
            assert f"def {name}(" in (root / module).read_text(), line
