"""What only the Qdrant store does: point ids, the payload, the collection's size, the
embedded mode's folder, and the optional dependency."""

from __future__ import annotations

import sys
import threading
import uuid
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from qdrant_client import QdrantClient

from cogitator_memory.conf import memory_settings
from cogitator_memory.embeddings.registry import embedding_store_from_settings
from cogitator_memory.embeddings.stores.qdrant import QdrantEmbeddingStore, point_id
from cogitator_memory.embeddings.stores.qdrant_payload import POINT_ID_NAMESPACE
from cogitator_memory.embeddings.types import EmbeddingFilter, VectorStatus
from cogitator_memory.exceptions import InvalidInput
from tests.embeddings.conftest import MakeEmbedding

X = [1.0, 0.0, 0.0]


@pytest.fixture
def folder(tmp_path: Path) -> str:
    return str(tmp_path / "qdrant")


def read_points(folder: str, collection: str = "cogitator_memory") -> dict[str, dict]:
    """Every point of a closed store's folder, read with the plain client: id -> payload."""
    client = QdrantClient(path=folder)
    try:
        records, _ = client.scroll(collection, limit=100, with_payload=True)
        return {str(record.id): dict(record.payload or {}) for record in records}
    finally:
        client.close()


# --- point ids and payload --------------------------------------------------------------


def test_point_ids_are_uuid5_of_the_embedding_id() -> None:
    # when
    first, again, other = point_id("emb_1"), point_id("emb_1"), point_id("emb_2")
    # then
    assert first == str(uuid.uuid5(POINT_ID_NAMESPACE, "emb_1"))
    assert first == again
    assert first != other
    assert uuid.UUID(first).version == 5


def test_a_point_is_stored_under_the_uuid_of_its_embedding_id(
    folder: str, new: MakeEmbedding
) -> None:
    # given
    store = QdrantEmbeddingStore(path=folder)
    store.add([new("m1", X, id="emb_chosen")])
    store.close()
    # when
    points = read_points(folder)
    # then
    assert list(points) == [point_id("emb_chosen")]
    assert points[point_id("emb_chosen")]["embeddingId"] == "emb_chosen"


def test_the_payload_holds_the_source_scope_and_metadata(folder: str, new: MakeEmbedding) -> None:
    # given
    store = QdrantEmbeddingStore(path=folder)
    [added] = store.add(
        [
            new(
                "m1",
                X,
                content="hello",
                agentId="a1",
                threadId="t1",
                userId="u1",
                index="messages",
                kind="doc",
            )
        ]
    )
    store.close()
    # when
    payload = read_points(folder)[point_id(added.id)]
    # then
    assert payload["embeddingId"] == added.id
    assert (payload["source_type"], payload["source_id"], payload["index"]) == (
        "message",
        "m1",
        "messages",
    )
    assert payload["content"] == "hello"
    assert payload["metadata"] == {
        "agentId": "a1",
        "threadId": "t1",
        "userId": "u1",
        "index": "messages",
        "kind": "doc",
    }
    assert (payload["agentId"], payload["threadId"], payload["userId"]) == ("a1", "t1", "u1")
    assert added.created_at is not None
    assert payload["created_at"] == added.created_at.isoformat()


def test_the_payload_of_an_unscoped_embedding_has_null_scopes(
    folder: str, new: MakeEmbedding
) -> None:
    # given
    store = QdrantEmbeddingStore(path=folder)
    [added] = store.add([new("shared", X)])
    store.close()
    # when
    payload = read_points(folder)[point_id(added.id)]
    # then
    assert (payload["agentId"], payload["threadId"], payload["userId"]) == (None, None, None)
    assert payload["index"] == ""


def test_search_returns_the_embedding_id_not_the_point_id(new: MakeEmbedding) -> None:
    # given
    store = QdrantEmbeddingStore(path=":memory:")
    [added] = store.add([new("m1", X)])
    # when
    [hit] = store.search(X)
    # then
    assert hit.embedding.id == added.id
    assert hit.embedding.id.startswith("emb_")


def test_the_collection_is_the_one_named(folder: str, new: MakeEmbedding) -> None:
    # given
    store = QdrantEmbeddingStore(path=folder, collection="notes")
    store.add([new("m1", X, id="emb_1")])
    store.close()
    # when
    points = read_points(folder, collection="notes")
    # then
    assert list(points) == [point_id("emb_1")]


# --- the embedded mode's folder ---------------------------------------------------------


def test_reopening_a_folder_keeps_its_embeddings(folder: str, new: MakeEmbedding) -> None:
    # given
    first = QdrantEmbeddingStore(path=folder)
    [added] = first.add([new("m1", [2.0, 0.0, 0.0], agentId="a1")])
    first.close()
    # when
    reopened = QdrantEmbeddingStore(path=folder)
    # then
    [hit] = reopened.search(X, filter=EmbeddingFilter(agent_id="a1"))
    assert hit.embedding.id == added.id
    assert reopened.get_by_sources(["m1"])[0].vector == pytest.approx([2.0, 0.0, 0.0])
    assert reopened.vector_status() == VectorStatus(available=True, dimensions=3)
    reopened.close()


def test_a_store_in_a_folder_serves_other_threads(folder: str, new: MakeEmbedding) -> None:
    # given
    store = QdrantEmbeddingStore(path=folder)
    errors: list[BaseException] = []

    def add_elsewhere() -> None:
        try:
            store.add([new("m1", X)])
        except BaseException as exc:  # reported by the test's own thread
            errors.append(exc)

    # when
    worker = threading.Thread(target=add_elsewhere)
    worker.start()
    worker.join()
    # then
    assert errors == []
    assert [hit.embedding.source_id for hit in store.search(X)] == ["m1"]
    store.close()


# --- the collection's size --------------------------------------------------------------


def test_the_first_vector_sets_the_size_of_the_collection(new: MakeEmbedding) -> None:
    # given
    store = QdrantEmbeddingStore(path=":memory:")
    assert store.vector_status() == VectorStatus(available=True, dimensions=None)
    # when
    store.add([new("m1", [1.0, 0.0, 0.0, 0.0])])
    # then
    assert store.vector_status() == VectorStatus(available=True, dimensions=4)


def test_a_vector_of_another_size_than_the_collections_is_refused(new: MakeEmbedding) -> None:
    # given
    store = QdrantEmbeddingStore(path=":memory:")
    store.add([new("m1", [1.0, 0.0, 0.0, 0.0])])
    # when
    with pytest.raises(InvalidInput) as caught:
        store.add([new("m2", X)])
    # then
    assert str(caught.value) == "vector: Expected 4 dimensions, got 3."
    assert store.get_by_sources(["m2"]) == []


def test_a_first_batch_of_mixed_sizes_is_refused_whole(new: MakeEmbedding) -> None:
    # given
    store = QdrantEmbeddingStore(path=":memory:")
    # when
    with pytest.raises(InvalidInput) as caught:
        store.add([new("m1", X), new("m2", [1.0, 0.0])])
    # then
    assert str(caught.value) == "vector: Expected 3 dimensions, got 2."
    assert store.vector_status() == VectorStatus(available=True, dimensions=None)


def test_search_refuses_a_vector_of_another_size(new: MakeEmbedding) -> None:
    # given
    store = QdrantEmbeddingStore(path=":memory:")
    store.add([new("m1", X)])
    # when
    with pytest.raises(InvalidInput) as caught:
        store.search([1.0, 0.0])
    # then
    assert str(caught.value) == "vector: Expected 3 dimensions, got 2."


def test_vector_status_reports_a_collection_of_another_size(
    folder: str, new: MakeEmbedding
) -> None:
    # given a collection of 3 dimensions
    first = QdrantEmbeddingStore(path=folder)
    first.add([new("m1", X)])
    first.close()
    # when
    store = QdrantEmbeddingStore(path=folder, dimensions=4)
    # then
    assert store.vector_status() == VectorStatus(
        available=False,
        dimensions=4,
        reason="Qdrant collection 'cogitator_memory' has 3 dimensions; the store is "
        "configured for 4",
    )
    store.close()


def test_a_store_configured_for_another_size_refuses_to_add(
    folder: str, new: MakeEmbedding
) -> None:
    # given a collection of 3 dimensions
    first = QdrantEmbeddingStore(path=folder)
    first.add([new("m1", X)])
    first.close()
    store = QdrantEmbeddingStore(path=folder, dimensions=4)
    # when
    with pytest.raises(InvalidInput) as caught:
        store.add([new("m2", [1.0, 0.0, 0.0, 0.0])])
    # then
    assert str(caught.value) == "vector: Expected 3 dimensions, got 4."
    store.close()


def test_reads_and_deletes_before_the_collection_exists_find_nothing() -> None:
    # given
    store = QdrantEmbeddingStore(path=":memory:")
    # when
    found = (
        store.search(X),
        store.get_by_sources(["m1"]),
        store.delete(["emb_1"]),
        store.delete_by_sources(["m1"]),
        store.delete_by_filter(EmbeddingFilter(agent_id="a1")),
    )
    # then
    assert found == ([], [], 0, 0, 0)


def test_delete_by_filter_refuses_an_empty_filter_before_the_collection_exists() -> None:
    # given
    store = QdrantEmbeddingStore(path=":memory:")
    # when
    with pytest.raises(InvalidInput) as caught:
        store.delete_by_filter(EmbeddingFilter())
    # then
    assert str(caught.value) == "filter: delete_by_filter needs at least one condition."


# --- configuration ----------------------------------------------------------------------


def test_a_store_without_qdrant_client_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given qdrant_client cannot be imported
    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    # when
    with pytest.raises(ImproperlyConfigured) as caught:
        QdrantEmbeddingStore(path=":memory:")
    # then
    assert str(caught.value) == (
        "The Qdrant embedding store needs the qdrant-client package: "
        "pip install 'cogitator-memory[qdrant]'"
    )


@pytest.mark.parametrize(
    "where", [{}, {"url": "http://127.0.0.1:6333", "path": ":memory:"}], ids=["neither", "both"]
)
def test_a_store_needs_either_a_url_or_a_path(where: dict[str, str]) -> None:
    # when
    with pytest.raises(ImproperlyConfigured) as caught:
        QdrantEmbeddingStore(**where)
    # then
    assert str(caught.value) == (
        "The Qdrant embedding store needs either url (a Qdrant server) or path (a folder, "
        "or ':memory:', for the embedded mode), not both or neither."
    )


def test_vector_status_reports_a_server_that_cannot_be_reached() -> None:
    # given a port on loopback where nothing listens (9: discard)
    store = QdrantEmbeddingStore(url="http://127.0.0.1:9", dimensions=3)
    # when
    status = store.vector_status()
    # then
    assert (status.available, status.dimensions) == (False, 3)
    assert status.reason is not None
    assert status.reason.startswith("Qdrant is unavailable: ")
    store.close()


def test_settings_choose_the_qdrant_store() -> None:
    # given
    embeddings = {
        "STORE": "qdrant",
        "DIMENSIONS": 8,
        "QDRANT_PATH": ":memory:",
        "QDRANT_COLLECTION": "memories",
    }
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": embeddings}):
        # when
        store = embedding_store_from_settings(memory_settings.EMBEDDINGS)
    # then
    assert isinstance(store, QdrantEmbeddingStore)
    assert (store.dimensions, store.collection, store.is_local) == (8, "memories", True)
    store.close()
