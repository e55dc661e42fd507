"""Search tests run on the exact store, with no embedding service unless they ask."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.types import StoredEmbedding
from tests.search.support import CONCEPT_PROVIDER, embeddings_settings, write_text

if TYPE_CHECKING:
    from pytest_django.fixtures import Settings as SettingsWrapper

IndexText = Callable[..., StoredEmbedding]


@pytest.fixture(autouse=True)
def exact_store(settings: SettingsWrapper) -> ExactEmbeddingStore:
    """The exact store on both databases, and no embedding service unless a test says so."""
    settings.COGITATOR_MEMORY = embeddings_settings(None)
    return ExactEmbeddingStore()


@pytest.fixture
def with_concepts(settings: SettingsWrapper) -> None:
    """The concept embedder as the configured embedding service."""
    settings.COGITATOR_MEMORY = embeddings_settings(CONCEPT_PROVIDER)


@pytest.fixture
def index_text(db: None) -> IndexText:
    return write_text
