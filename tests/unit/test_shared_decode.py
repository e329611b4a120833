"""An actions record is decoded once for the monitor and the fleet of one worker."""

from __future__ import annotations

from one_record import process_one

from loopwarden.agents.fleet import FleetProcessor
from loopwarden.agents.fleet.declaration import FAMILY_STATES as FLEET_FAMILIES
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.shared_decode import SharedActionDecodes
from loopwarden.settings import Settings

SECRET = "AKIAIOSFODNN7EXAMPLE"


def action(n: int, **payload: object) -> dict:
    return {
        "event_id": f"shared-{n}",
        "loop_id": "shared-loop",
        "occurred_at": 1000.0 + n,
        "payload": {"action_type": "run", "params": {"cmd": "make"}, **payload},
    }


def sharing(settings: Settings) -> tuple[SharedActionDecodes, RecordProcessor, FleetProcessor]:
    """A monitor and a fleet given one cache, as a worker gives them its own."""
    cache = SharedActionDecodes(size=8)
    monitor = RecordProcessor.for_settings(settings, decodes=cache)
    return cache, monitor, FleetProcessor.for_settings(settings, decodes=cache)


def test_the_fleet_reads_what_the_monitor_decoded_and_only_the_monitor_redacts():
    settings = Settings()
    cache, monitor, fleet = sharing(settings)
    value = codec.dumps(action(1, success=False, error_message=f"key {SECRET} refused"))
    source = SourcePosition("actions", 0, 0)
    monitored = process_one(monitor, LOOP_STATES, value, b"shared-loop", source)
    assert cache.decoded == 1 and monitored.events == 1
    (events,) = [cache.clean(value, settings.limits.max_event_bytes)]
    assert events is not None and SECRET in events[0][1].payload.error_message  # unredacted
    (lesson,) = monitored.lessons  # what the monitor wrote of it: redacted
    assert "refused" in codec.dumps(lesson).decode() and SECRET not in codec.dumps(lesson).decode()
    read = process_one(fleet, FLEET_FAMILIES, value, b"shared-loop", source)
    assert cache.decoded == 1 and read.events == 1  # not decoded again
    # the other way round: the fleet first, then the monitor finds it
    second = codec.dumps(action(2, result="ok"))
    process_one(fleet, FLEET_FAMILIES, second, b"shared-loop", SourcePosition("actions", 0, 1))
    process_one(monitor, LOOP_STATES, second, b"shared-loop", SourcePosition("actions", 0, 1))
    assert cache.decoded == 2


def test_a_record_with_a_bad_element_is_read_by_each_reader_its_own_way():
    settings = Settings()
    cache, monitor, fleet = sharing(settings)
    value = codec.dumps([action(3, result="fine"), {"loop_id": "shared-loop", "payload": 7}])
    source = SourcePosition("actions", 0, 2)
    monitored = process_one(monitor, LOOP_STATES, value, b"shared-loop", source)
    read = process_one(fleet, FLEET_FAMILIES, value, b"shared-loop", source)
    assert len(monitored.dead_letters) == 1 and monitored.events == 1  # the owner's letter
    assert read.dead_letters == [] and read.passed_over == 1 and read.events == 1
    assert cache.clean(value, settings.limits.max_event_bytes) is None  # not kept
    assert cache.decoded == 2  # each decoded it


def test_processors_made_apart_keep_caches_of_their_own():
    """No process-global cache: two workers' processors (or a test's) do not share."""
    settings = Settings()
    value = codec.dumps(action(5, result="ok"))
    source = SourcePosition("actions", 0, 4)
    first, second = RecordProcessor.for_settings(settings), RecordProcessor.for_settings(settings)
    process_one(first, LOOP_STATES, value, b"shared-loop", source)
    process_one(second, LOOP_STATES, value, b"shared-loop", source)
    assert first.decodes is not second.decodes
    assert (first.decodes.decoded, second.decodes.decoded) == (1, 1)


def test_the_monitor_redacts_its_copy_of_a_shared_event():
    cache = SharedActionDecodes(size=4)
    value = codec.dumps(action(4, result=f"token {SECRET}"))
    source = SourcePosition("actions", 0, 3)
    [(_, redacted)] = cache.decode(value, None, source, 1 << 20, lambda e: e.redacted()).events
    [(_, as_is)] = cache.decode(value, None, source, 1 << 20, lambda e: e).events
    assert SECRET not in (redacted.payload.result or "")
    assert SECRET in (as_is.payload.result or "")
    assert cache.decoded == 1
