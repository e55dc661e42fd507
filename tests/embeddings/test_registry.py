"""The store settings choose: which store, and its HNSW search breadth."""

import pytest
from django.test import override_settings

from cogitator_memory.embeddings.registry import embedding_store_from_settings
from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore

pytestmark = pytest.mark.django_db


def test_exact_store_is_chosen_by_name():
    # when
    store = embedding_store_from_settings({"STORE": "exact", "DIMENSIONS": 3})
    # then
    assert isinstance(store, ExactEmbeddingStore)
    assert store.dimensions == 3


def test_pgvector_store_takes_its_hnsw_search_breadth_from_settings():
    # when
    store = embedding_store_from_settings({"STORE": "pgvector", "HNSW_EF_SEARCH": 120})
    # then
    assert isinstance(store, PgVectorEmbeddingStore)
    assert store.min_ef_search == 120


@override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {"HNSW_EF_SEARCH": 0}})
def test_a_search_breadth_out_of_range_is_refused_by_name():
    from cogitator_memory.conf import memory_settings
    from cogitator_memory.exceptions import InvalidInput

    # when / then
    with pytest.raises(InvalidInput) as caught:
        embedding_store_from_settings({**memory_settings.EMBEDDINGS, "STORE": "pgvector"})
    assert "min_ef_search" in caught.value.errors
