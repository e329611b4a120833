"""Where a LanceDB failure is understood (storage/boundary.py), on a real LanceDB directory."""

from __future__ import annotations

import os

import pytest

from loopwarden.errors import StorageError, StorageUnavailableError, is_retriable, pauses
from loopwarden.storage.boundary import StorageBoundary, boundary_for
from loopwarden.storage.lancedb_tables import connect, open_or_create


@pytest.fixture
def table(tmp_path):
    import pyarrow as pa

    uri = str(tmp_path / "db")
    schema = pa.schema([("id", pa.int64()), ("vector", pa.list_(pa.float32(), 2))])
    db = connect(uri, None)
    table = open_or_create(db, "m", schema, set(db.list_tables().tables))
    table.add([{"id": 1, "vector": [1.0, 2.0]}])
    table.add([{"id": 2, "vector": [2.0, 1.0]}])
    return uri, table


def test_a_bad_call_on_a_storage_that_answers_is_not_retriable(table):
    uri, handle = table
    boundary = boundary_for(uri)
    with pytest.raises(StorageError) as caught, boundary.calls("add"):
        handle.add([{"id": "not a number", "vector": [1.0, 2.0]}])
    assert type(caught.value) is StorageError
    assert not is_retriable(caught.value) and not pauses(caught.value)
    assert "Cannot cast string" in str(caught.value)  # LanceDB's own words kept


def test_an_error_whose_text_says_not_found_is_not_taken_for_an_away_storage(table):
    uri, _ = table
    with pytest.raises(StorageError) as caught, boundary_for(uri).calls("look-up"):
        raise RuntimeError("lance error: Not found: no row with id 7")
    assert type(caught.value) is StorageError and not is_retriable(caught.value)


def test_a_directory_moved_away_is_unavailable_and_pauses(table):
    uri, handle = table
    os.rename(uri, uri + ".away")
    with pytest.raises(StorageUnavailableError) as caught, boundary_for(uri).calls("search"):
        handle.search([1.0, 2.0]).limit(2).to_list()  # its data files are gone
    assert is_retriable(caught.value) and pauses(caught.value)
    assert "is not there" in str(caught.value)
    os.rename(uri + ".away", uri)
    assert boundary_for(uri).unavailable() is None  # back: the same directory answers


def test_a_directory_replaced_by_another_is_unavailable(table):
    uri, handle = table
    os.rename(uri, uri + ".away")
    handle.add([{"id": 3, "vector": [1.0, 1.0]}])  # LanceDB makes a new directory there
    assert os.path.isdir(uri)
    away = pytest.raises(StorageUnavailableError, match="no longer the directory")
    with away, boundary_for(uri).calls("search"):
        handle.search([1.0, 2.0]).limit(3).to_list()


def test_a_table_without_its_version_log_is_unavailable(table):
    import shutil

    uri, _ = table
    shutil.rmtree(os.path.join(uri, "m.lance", "_versions"))
    assert "lost its version log" in boundary_for(uri).unavailable()


def test_an_os_error_at_the_boundary_means_unavailable_without_a_look(tmp_path):
    boundary = StorageBoundary(str(tmp_path))
    with pytest.raises(StorageUnavailableError, match="No space left"), boundary.calls("add"):
        raise OSError(28, "No space left on device")


def test_one_boundary_per_directory_however_it_is_spelt(tmp_path):
    assert boundary_for(str(tmp_path)) is boundary_for(f"{tmp_path}/")
    assert boundary_for(str(tmp_path)) is boundary_for(f"file://{tmp_path}")
