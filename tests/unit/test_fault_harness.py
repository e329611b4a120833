"""The fault suite's cluster settings: a scenario's overrides never undo its isolation."""

from __future__ import annotations

from faultsuite.harness import cluster_settings

from loopwarden.settings import Settings


def test_a_memory_override_keeps_the_clusters_own_store_and_embedder(tmp_path):
    settings = cluster_settings(
        Settings(), str(tmp_path), {"memory": {"maintenance_interval_s": 0}, "web_port": 7}
    )
    # the secrets scenario's override once reset the store to ./.loopwarden/memory, which
    # then grew across runs (913 MB here) and was scanned by every later run
    assert settings.memory.uri == f"{tmp_path}/memory"
    assert settings.memory.embedder == "hashing"
    assert settings.memory.maintenance_interval_s == 0
    assert settings.data_dir == str(tmp_path) and settings.web_port == 7
