"""What only the exact in-process store does: batched scans, ties, thresholds across
batches, and the sizes it finds stored."""

from __future__ import annotations

import numpy as np
import pytest

from cogitator_memory.embeddings.stores import exact
from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.types import VectorStatus
from tests.embeddings.conftest import MakeEmbedding

pytestmark = pytest.mark.django_db

QUERY = [1.0, 0.0, 0.0]


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> int:
    """Batches of two rows, so a handful of rows spans several batches."""
    monkeypatch.setattr(exact, "SCAN_BATCH_SIZE", 2)
    return 2


def angle_vector(degrees: float) -> list[float]:
    """A vector at ``degrees`` from QUERY: its cosine is cos(degrees)."""
    radians = np.radians(degrees)
    return [float(np.cos(radians)), float(np.sin(radians)), 0.0]


# --- batches ----------------------------------------------------------------------------


def test_search_finds_the_best_rows_of_every_batch(
    exact_store: ExactEmbeddingStore, new: MakeEmbedding, small_batches: int
) -> None:
    # given seven rows, three batches and a half, the best ones first, last and in between
    angles = {"first": 1, "a": 50, "b": 60, "middle": 5, "c": 70, "d": 80, "last": 3}
    exact_store.add([new(name, angle_vector(angle)) for name, angle in angles.items()])
    # when
    hits = exact_store.search(QUERY, limit=3)
    # then
    assert [hit.embedding.source_id for hit in hits] == ["first", "last", "middle"]
    assert [hit.score for hit in hits] == pytest.approx(
        [np.cos(np.radians(angle)) for angle in (1, 3, 5)]
    )


def test_search_scores_a_table_of_whole_batches(
    exact_store: ExactEmbeddingStore, new: MakeEmbedding, small_batches: int
) -> None:
    # given four rows: two full batches and no remainder
    exact_store.add([new(f"m{angle}", angle_vector(angle)) for angle in (10, 20, 30, 40)])
    # when
    hits = exact_store.search(QUERY, limit=10)
    # then
    assert [hit.embedding.source_id for hit in hits] == ["m10", "m20", "m30", "m40"]


def test_search_agrees_with_a_scan_of_every_row(
    exact_store: ExactEmbeddingStore, new: MakeEmbedding, small_batches: int
) -> None:
    # given
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(25, 3))
    exact_store.add([new(f"m{i}", vector.tolist()) for i, vector in enumerate(vectors)])
    query = rng.normal(size=3)
    cosines = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    expected = [f"m{i}" for i in np.argsort(-cosines)[:5]]
    # when
    hits = exact_store.search(query.tolist(), limit=5)
    # then
    assert [hit.embedding.source_id for hit in hits] == expected
    assert [hit.score for hit in hits] == pytest.approx(sorted(cosines, reverse=True)[:5])


def test_search_applies_the_threshold_in_every_batch(
    exact_store: ExactEmbeddingStore, new: MakeEmbedding, small_batches: int
) -> None:
    # given rows alternating above and below a threshold of 0.5 (60 degrees)
    angles = [10, 80, 20, 85, 30, 89]
    exact_store.add([new(f"m{angle}", angle_vector(angle)) for angle in angles])
    # when
    hits = exact_store.search(QUERY, limit=10, threshold=0.5)
    # then
    assert [hit.embedding.source_id for hit in hits] == ["m10", "m20", "m30"]


def test_search_with_a_threshold_above_every_row_finds_nothing(
    exact_store: ExactEmbeddingStore, new: MakeEmbedding, small_batches: int
) -> None:
    # given
    exact_store.add([new(f"m{angle}", angle_vector(angle)) for angle in (40, 50, 60)])
    # when
    hits = exact_store.search(QUERY, threshold=0.9)
    # then
    assert hits == []


# --- ties -------------------------------------------------------------------------------


def test_tied_scores_are_ordered_by_id(
    exact_store: ExactEmbeddingStore, new: MakeEmbedding
) -> None:
    # given three identical vectors, added out of id order
    exact_store.add([new(f"m{name}", QUERY, id=f"emb_{name}") for name in ("c", "a", "b")])
    # when
    hits = exact_store.search(QUERY, limit=3)
    # then
    assert [hit.embedding.id for hit in hits] == ["emb_a", "emb_b", "emb_c"]


def test_ties_cut_by_the_limit_keep_the_lowest_ids(
    exact_store: ExactEmbeddingStore, new: MakeEmbedding, small_batches: int
) -> None:
    # given five identical vectors, added in descending id order, over three batches
    exact_store.add([new(f"m{name}", QUERY, id=f"emb_{name}") for name in "edcba"])
    # when
    hits = exact_store.search(QUERY, limit=2)
    # then the order of the table does not decide which ties are kept
    assert [hit.embedding.id for hit in hits] == ["emb_a", "emb_b"]


# --- sizes ------------------------------------------------------------------------------


def test_search_passes_over_rows_of_another_size(new: MakeEmbedding) -> None:
    # given a store of no configured size, holding vectors of two sizes
    store = ExactEmbeddingStore()
    store.add([new("three", [1.0, 0.0, 0.0]), new("two", [1.0, 0.0])])
    # when
    hits = store.search([1.0, 0.0])
    # then
    assert [hit.embedding.source_id for hit in hits] == ["two"]


def test_vector_status_reports_a_stored_size_other_than_the_configured_one(
    new: MakeEmbedding,
) -> None:
    # given rows of 3 dimensions
    ExactEmbeddingStore().add([new("m1", [1.0, 0.0, 0.0])])
    # when
    status = ExactEmbeddingStore(dimensions=4).vector_status()
    # then
    assert status == VectorStatus(
        available=False,
        dimensions=4,
        reason="stored embeddings have 3 dimensions; the store is configured for 4",
    )


def test_vector_status_names_the_other_size_when_sizes_are_mixed(new: MakeEmbedding) -> None:
    # given rows of the configured size and rows of another
    ExactEmbeddingStore().add(
        [new("m1", [1.0, 0.0, 0.0]), new("m2", [0.0, 1.0, 0.0]), new("m3", [1.0, 0.0])]
    )
    # when
    status = ExactEmbeddingStore(dimensions=3).vector_status()
    # then
    assert status == VectorStatus(
        available=False,
        dimensions=3,
        reason="stored embeddings have 2 dimensions; the store is configured for 3",
    )


def test_vector_status_without_a_configured_size_reports_the_stored_one(
    new: MakeEmbedding,
) -> None:
    # given
    store = ExactEmbeddingStore()
    store.add([new("m1", [1.0, 0.0, 0.0, 0.0])])
    # when
    status = store.vector_status()
    # then
    assert status == VectorStatus(available=True, dimensions=4, reason=None)


def test_vector_status_of_an_empty_store_without_a_configured_size(db: None) -> None:
    # when
    status = ExactEmbeddingStore().vector_status()
    # then
    assert status == VectorStatus(available=True, dimensions=None, reason=None)
