"""`loopwarden demo` (what `make demo` runs) shows real warnings and exits by itself."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


DEV_ONLY = ("langchain", "langgraph", "pydantic_ai", "agents", "pytest", "mkdocs", "mypy")
"""Top-level modules only the dev extra installs (`make demo` installs worker and
embedded: issue 59 found it installing the whole dev extra, 1.3 GB)."""

BLOCK_DEV_ONLY = f"""
import sys

class _DevOnly:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {DEV_ONLY!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (dev extra only)", name=name)
        return None

sys.meta_path.insert(0, _DevOnly())
"""


def test_demo_runs_start_to_finish(tmp_path):
    temp = Path(tempfile.gettempdir())
    before = set(temp.glob("loopwarden-demo-*"))
    # the demo and the worker it starts see none of the dev extra's packages
    (tmp_path / "sitecustomize.py").write_text(BLOCK_DEV_ONLY)
    result = subprocess.run(
        [sys.executable, "-m", "loopwarden", "demo", "--timeout", "60"],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    # the spinner's four ladder steps, the failing deploy, the edit spin, and the family
    # of delegated runs (five loops warned then stopped, a sixth stopped): all as offline
    # (issue 69, the gated profile: the edit-looper's edit → same test result cycle is
    # warned, escalated and made final: three warnings where Layer 3 alone gave one)
    assert "19/19 detector warnings received, each as the detectors give it offline" in out
    assert "family-planner: 2 warning(s), delegation_cycle: warn → stop; as expected" in out
    assert "family-researcher-5: 1 warning(s), delegation_cycle: stop; as expected" in out
    assert "2 dead letters" in out
    # the analyst's logic_spin warnings are waited for, shown and counted (issue 32, item 5)
    shown = out.count("(from the reflection analyst, not compared offline)")
    assert shown >= 1
    assert f"; {shown} from the reflection analyst ({shown} expected without a model);" in out
    # one closing line per loop, and no warning printed whole (its first lines only)
    assert "healthy-research: no warnings, as expected" in out
    assert "spinner: 4 warning(s), repeated_outcome: warn → escalate → final → stop" in out
    assert "more line(s) in its timeline_message" in out
    assert len(out.splitlines()) < 90
    assert "logs and data kept in" not in out
    assert set(temp.glob("loopwarden-demo-*")) == before  # its temporary folder is removed
    # what repeated: the call that identifies it, and the line that says why it failed
    assert (
        "⚠️ [LOOP] Since action 1 you have called web_search (`latest release notes`) 3 times" in out
    )
    assert "STOP NOW" in out  # the ladder's last step, said in words
    assert (
        "you have called shell (`./deploy.sh --prod`) 3 times and it failed the same way each "
        "time: “permission denied: ./deploy.sh”"
    ) in out
    # the edit-looper: its edit → the same test result cycle is seen before the third
    # small edit of the region (Layer 3), so the ladder's first step names the cycle
    assert "a cycle of 2 calls repeated 3 times: modify_code → run_tests" in out
    assert "dead letter (validation)" in out and "dead letter (too_large)" in out
    # issue 47 item 12: the header's words are explained, and a family finding every live
    # loop of the family hears is said once per step, not once per loop (11 lines)
    assert "level: how deep a reflection the agent is asked for" in out
    assert "step: how far up the ladder the loop is" in out
    told = [line for line in out.splitlines() if "delegation_cycle (step" in line]
    assert len(told) == 2 and all("told to every live loop of the family" in t for t in told)


async def test_publishing_to_a_missing_topic_is_a_clear_error(broker):
    from loopwarden import AsyncPublisher, PublishError, Settings

    base = Settings()
    settings = base.model_copy(
        update={
            "kafka": base.kafka.model_copy(update={"bootstrap_servers": broker.bootstrap_servers})
        }
    )
    publisher = AsyncPublisher(settings, topic="no-such-topic-here")
    with pytest.raises(PublishError, match="does not exist"):
        await publisher.start()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_the_demo_stopped_by_a_signal_stops_what_it_started(signum):
    """`timeout make demo` sends SIGTERM; a closed terminal SIGHUP (issue 47, item 11):
    the broker and the worker it started are stopped too, by their pids."""
    demo = subprocess.Popen(
        [sys.executable, "-m", "loopwarden", "demo", "--timeout", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    broker = worker = None
    try:
        assert demo.stdout is not None
        for line in demo.stdout:  # the demo prints both before it publishes
            if line.startswith("embedded broker (Tansu) on "):
                broker = line.rsplit(" ", 1)[1].strip()
            found = re.search(r"worker started \(pid (\d+)\)", line)
            if found:
                worker = int(found.group(1))
                break
        assert broker and worker, "the demo did not start its broker and worker"
        demo.send_signal(signum)
        assert demo.wait(60) != 0
    finally:
        if demo.poll() is None:
            demo.kill()
    host, port = broker.rsplit(":", 1)
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2).close()
    assert (
        not Path(f"/proc/{worker}").exists()
        or "zombie" in Path(f"/proc/{worker}/status").read_text().lower()
    )
