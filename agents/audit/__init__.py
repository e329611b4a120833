"""Audit replay: re-run the record processors over recorded topics and compare."""
