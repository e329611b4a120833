"""Nothing left behind: the broker and worker a process starts die with it, however
it ends (issue 46, item 6: a ``make test`` stopped by a timeout left its brokers and
workers running for good with parent 1)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid``, None when it no longer exists."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], int(fields[1])


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) and stat[1] == parent:
            found.append(int(entry.name))
    return found


def _wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.1)  # polling a condition with a deadline, not standing in for one
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_dev_takes_its_broker_and_worker_with_it():
    dev = subprocess.Popen(
        [sys.executable, "-m", "loopwarden", "dev", "--web-port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if not k.startswith("LOOPWARDEN_")},
    )
    children: list[int] = []
    try:
        children = _wait_for(
            lambda: (found := _children(dev.pid)) and len(found) >= 2 and found,
            60,
            "dev's broker and worker",
        )
        dev.send_signal(signal.SIGKILL)  # no handler runs: only the kernel can help
        dev.wait(10)

        def all_gone() -> bool:
            return all((s := _stat(pid)) is None or s[0] == "Z" for pid in children)

        _wait_for(all_gone, 30, f"children {children} to stop after their parent was killed")
    finally:
        for pid in children:
            if (s := _stat(pid)) is not None and s[0] != "Z":
                os.kill(pid, signal.SIGKILL)
        if dev.poll() is None:
            dev.kill()
            dev.wait(10)
