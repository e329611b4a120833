"""Telemetry: spans across Kafka, metrics, health endpoints and the loop-health page.

- :mod:`.propagation` — W3C trace context in Kafka headers and inside events (client
  SDK and worker);
- :mod:`.publishing` — the publisher's ``create`` span per event;
- :mod:`.providers` — the worker's OpenTelemetry SDK from ``telemetry.*`` settings;
- :mod:`.spans` — the worker's ``process`` span per event and its child spans;
- :mod:`.metrics` — counters, histograms and consumer lag;
- :mod:`.sensor` — rebalance log lines (a Faust sensor);
- :mod:`.summary` — the periodic one-line summary;
- :mod:`.loop_health` and :mod:`.web` — ``/health``, ``/ready``, ``/metrics``, ``/loops``.
"""
