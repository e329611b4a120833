"""Every seed threshold is a named setting with the seed's default."""

import pytest
from pydantic import ValidationError

from loopwarden.settings import DetectionSettings, Settings


def test_seed_defaults():
    d = DetectionSettings()
    assert (d.spin_threshold, d.iteration_threshold, d.action_window) == (3, 5, 10)
    assert (d.edit_region_lines, d.edit_small_max_lines, d.edit_spin_count) == (5, 3, 3)
    assert (d.memory_budget_standard, d.memory_budget_deep, d.memory_budget_critical) == (
        2048,
        5120,
        10240,
    )
    assert d.reflection_cache_size == 3


def test_nested_environment_variables(monkeypatch):
    monkeypatch.setenv("LOOPWARDEN_DETECTION__SPIN_THRESHOLD", "4")
    monkeypatch.setenv("LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS", "k1:9092,k2:9092")
    monkeypatch.setenv("LOOPWARDEN_TOPICS__PARTITIONS", "12")
    settings = Settings()
    assert settings.detection.spin_threshold == 4
    assert settings.kafka.bootstrap_servers == "k1:9092,k2:9092"
    assert settings.topics.partitions == 12


def test_invalid_values_are_refused(monkeypatch):
    monkeypatch.setenv("LOOPWARDEN_DETECTION__SPIN_THRESHOLD", "0")
    with pytest.raises(ValidationError, match="spin_threshold"):
        Settings()


def test_settings_are_frozen():
    with pytest.raises(ValidationError):
        Settings().app_id = "x"
