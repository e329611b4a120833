"""Kafka plumbing in three parts: ``client`` (what an agent author imports),
``runtime`` (the worker: Faust app, runner, sink, telemetry) and ``tools`` (the
embedded broker, topic creation, audit replay)."""
