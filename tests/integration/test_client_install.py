"""``pip install loopwarden`` alone, in a fresh venv: an agent publishes and is warned.

The sdist and the wheel are built as a release builds them (``python -m build``); the
venv gets the wheel without extras (the client and its few libraries, from
the package registry or pip's cache); the worker runs from the test venv
(``loopwarden[worker]``). The client venv must not hold a worker library, and the
tour's agent — publish a repeated call, read the warning — must work there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import uuid
import venv
import zipfile
from pathlib import Path

import pytest

from loopwarden.settings import settings_env

from .conftest import isolated_settings

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
WORKER_ONLY = ("faust-streaming", "lancedb", "numpy", "pyarrow", "opentelemetry-sdk", "aiohttp")
AGENT = """
import asyncio, sys

from loopwarden import AsyncPublisher, Settings, WarningSubscriber


async def main(loop_id: str) -> None:
    settings = Settings()
    async with WarningSubscriber(settings, loop_id=loop_id) as warnings:
        async with AsyncPublisher(settings) as publisher:
            for _ in range(3):
                await publisher.publish(
                    loop_id, "web_search", params={"q": "flaky test"}, result="No results"
                )
        async with asyncio.timeout(120):
            async for warning in warnings:
                print("WARNING", warning.kind, warning.loop_id)
                break
    print("MODULES", ",".join(sorted(m for m in sys.modules if "." not in m)))


asyncio.run(main(sys.argv[1]))
"""


SKIPPED_IN_COPY = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "site",
    "*.egg-info",
    "__pycache__",
    "results",
    ".*cache",
    "*.so",
    "_textscan.c",  # the in-place build of the editable install
)


SHIPPED = """
from importlib.util import find_spec
print(f"client:{find_spec('loopwarden.streams.client.publisher') is not None}")
print(f"faults:{find_spec('loopwarden.faults') is not None}")
print(f"corpus:{find_spec('loopwarden.testing') is not None}")
"""


@pytest.fixture(scope="module")
def distributions(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel, as a release builds them: ``python -m build`` on a copy
    of the tree (setuptools builds in the source folder), the wheel built from the
    sdist, so a file the sdist forgets breaks the wheel."""
    where = tmp_path_factory.mktemp("dist")
    source = where / "source"
    shutil.copytree(ROOT, source, ignore=SKIPPED_IN_COPY)
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(where / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    (sdist,) = (where / "dist").glob("loopwarden-*.tar.gz")
    (wheel,) = (where / "dist").glob("loopwarden-*.whl")  # this platform's: it holds the scan
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def client_python(tmp_path_factory, distributions) -> Path:
    """A venv with the wheel installed and nothing else: ``pip install loopwarden``."""
    where = tmp_path_factory.mktemp("client-venv")
    venv.create(where / "venv", with_pip=True)
    python = where / "venv" / "bin" / "python"
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(distributions["wheel"]),
        ],
        check=True,
        cwd=where,
        timeout=600,
    )
    return python


def test_the_sdist_and_the_wheel_hold_what_a_user_needs(distributions):
    """Issue 47, item 4: packaging is built in ``make test``. The sdist carries the
    sources and the project's files; the wheel every package of the fixed folders,
    mapped into one namespace (no top-level ``agents`` or ``schemas``)."""
    with tarfile.open(distributions["sdist"]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "agents/spin/meaning.py"} <= names
    assert "agents/spin/_textscan.pyx" in names  # the extension is built from the sdist
    assert "agents/spin/_tokens.pxi" in names  # with the token readers it includes
    with zipfile.ZipFile(distributions["wheel"]) as wheel:
        files = set(wheel.namelist())
    assert {
        "loopwarden/cli/__init__.py",
        "loopwarden/agents/spin/repeated_outcome.py",
        "loopwarden/schemas/events.py",
        "loopwarden/streams/client/publisher.py",
        "loopwarden/storage/__init__.py",
    } <= files
    assert not {name.split("/", 1)[0] for name in files} & {"agents", "schemas", "streams"}
    scan = [n for n in files if n.startswith("loopwarden/agents/spin/_textscan.")]
    assert [n for n in scan if n.endswith(".so")], scan  # compiled for this platform
    entry_points = next(n for n in files if n.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(distributions["wheel"]) as wheel:
        assert "loopwarden = loopwarden.cli:main" in wheel.read(entry_points).decode()


def test_a_script_in_the_clones_root_imports_the_client(client_python, distributions):
    """Found walking the README on a fresh clone: the tour saved in the clone's root and
    run with a client venv failed with "No module named 'loopwarden.streams'" (the
    script's folder puts the source ``loopwarden/`` first, without the mapped folders)."""
    source = distributions["sdist"].parent.parent / "source"
    script = source / "probe_client.py"
    script.write_text(
        "from loopwarden import AsyncPublisher, Settings\n"
        "import loopwarden.streams.client.publisher as p\n"
        "print(AsyncPublisher.__module__, Settings().topics.warnings)\n"
    )
    done = subprocess.run(
        [str(client_python), str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd="/",
        env={**os.environ, "PYTHONPATH": ""},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["loopwarden.streams.client.publisher", "loopwarden.warnings"]


def test_the_client_installs_without_the_worker_libraries(client_python):
    listed = subprocess.run(
        [str(client_python), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    installed = {line.split("==")[0] for line in listed.splitlines()}
    assert "loopwarden" in installed and "aiokafka" in installed
    assert not installed & set(WORKER_ONLY), sorted(installed & set(WORKER_ONLY))
    shipped = subprocess.run(
        [str(client_python), "-c", SHIPPED], capture_output=True, text=True, check=True, cwd="/"
    ).stdout.split()
    assert shipped == ["client:True", "faults:False", "corpus:False"]  # test support stays out


def test_an_agent_with_the_client_alone_is_warned_by_a_worker(
    client_python, broker, worker_factory, tmp_path
):
    settings = isolated_settings(broker, "client-only")
    settings = settings.model_copy(update={"roles": frozenset({"monitor"})})
    worker_factory(settings)
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    loop_id = f"client-only-{uuid.uuid4().hex[:6]}"
    done = subprocess.run(
        [str(client_python), str(script), loop_id],
        env={**os.environ, **settings_env(settings), "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,  # not the project root: the installed package is used
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    warned = [line.split() for line in lines if line.startswith("WARNING ")]
    assert warned and warned[0][2] == loop_id, done.stdout  # the seed profile's kind
    modules = next(line for line in lines if line.startswith("MODULES")).split()[1].split(",")
    assert not {"faust", "lancedb", "numpy", "pyarrow"} & set(modules)
    assert sys.executable != str(client_python)


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("dev", "[worker,embedded]"),
        ("demo", "[worker,embedded]"),
        ("worker", "[worker]"),
        ("broker", "[embedded]"),
    ],
)
def test_the_light_client_names_the_extras_a_command_needs(client_python, command, named):
    """Issue 47, item 5, in a real client-only venv: one message naming every extra,
    not a ModuleNotFoundError after a first message naming one of them."""
    loopwarden = client_python.parent / "loopwarden"
    version = subprocess.run(
        [str(loopwarden), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert version.returncode == 0 and "loopwarden" in version.stdout.lower(), version
    done = subprocess.run(
        [str(loopwarden), command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": ""},
        cwd="/",
    )
    assert done.returncode == 1, done.stderr
    assert named in done.stderr and "No module named" not in done.stderr, done.stderr
