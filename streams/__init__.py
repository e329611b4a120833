"""Kafka plumbing: the Faust app, topics, publisher, subscriber, embedded broker."""
