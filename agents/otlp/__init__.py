"""OTLP ingest: tool spans of agents already traced with OpenTelemetry become action events."""
