"""GET /api/memory/search/ never returns the text of what was forgotten: a purged memory
item's vector goes with the item, and a vector whose source went behind the services'
back (an item or an entry deleted by hand, a restored backup) is left out of every mode
until the pruner deletes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from rest_framework.test import APIClient

from cogitator_memory.embeddings import message_index
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.pruning import prune_vectors
from cogitator_memory.items.models import Evidence, MemoryItem
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry
from tests.api.conftest import API
from tests.lineage_support import SECRET_WORD, tell_a_secret
from tests.search.support import CONCEPT_PROVIDER, embeddings_settings

if TYPE_CHECKING:
    from pytest_django.fixtures import Settings as SettingsWrapper

pytestmark = pytest.mark.django_db

SEARCH = f"{API}/search/"
MODES = ["keyword", "vector", "hybrid"]


@pytest.fixture(autouse=True)
def with_concepts(settings: SettingsWrapper) -> None:
    settings.COGITATOR_MEMORY = embeddings_settings(CONCEPT_PROVIDER)


def found(client: APIClient, mode: str, query: str) -> list[tuple[str, str]]:
    response = client.get(SEARCH, {"q": query, "mode": mode, "limit": 50})
    assert response.status_code == 200, response.json()
    return sorted((hit["source_type"], hit["source_id"]) for hit in response.json()["results"])


def texts_found(client: APIClient) -> dict[str, Any]:
    """What each mode finds of the secret: by its word, and by its meaning ("puppy")."""
    return {
        mode: sorted(
            {*found(client, mode, SECRET_WORD), *found(client, mode, "puppy")}
            if mode != "keyword"
            else found(client, mode, SECRET_WORD)
        )
        for mode in MODES
    }


@pytest.mark.parametrize("how", ["delete_entry", "redact_entry", "clear_thread", "delete_thread"])
def test_a_purged_items_vector_is_found_by_no_mode(client: APIClient, how: str) -> None:
    # given the item "u1 pet: dog PEANUTSECRET", embedded, and found by every mode
    told = tell_a_secret()
    item = ("item", told.item.pk)
    assert all(item in hits for hits in texts_found(client).values())
    # when its entry goes
    change: Callable[[], Any] = {
        "delete_entry": lambda: threads.delete_entry(told.entry.pk),
        "redact_entry": lambda: threads.redact_entry(told.entry.pk, reason="asked"),
        "clear_thread": lambda: threads.clear_thread(told.thread.pk),
        "delete_thread": lambda: threads.delete_thread(told.thread.pk),
    }[how]
    change()
    # then the item is purged, its vector with it, and no mode finds its text
    assert not MemoryItem.objects.filter(pk=told.item.pk).exists()
    assert not Embedding.objects.filter(source_id=told.item.pk).exists()
    assert not Embedding.objects.filter(content__icontains=SECRET_WORD).exists()
    assert texts_found(client) == {mode: [] for mode in MODES}


def test_vectors_whose_source_went_behind_the_services_back_are_found_by_no_mode(
    client: APIClient,
) -> None:
    # given the item's vector and the entry's message vector, then the item and the entry
    # removed without their services (as a restored backup or a hand edit would)
    told = tell_a_secret()
    message_index.index_entries([told.entry.pk])
    assert ("message", told.entry.pk) in found(client, "keyword", SECRET_WORD)
    Evidence.objects.filter(item_id=told.item.pk).delete()
    MemoryItem.objects.filter(pk=told.item.pk).delete()
    Entry.objects.filter(pk=told.entry.pk).update(redaction={"at": "2026-01-01T00:00:00+00:00"})
    assert Embedding.objects.filter(content__icontains=SECRET_WORD).count() == 2
    # then no mode returns them, though their rows are still there
    assert texts_found(client) == {mode: [] for mode in MODES}
    # and the pruner deletes both, each by its own source type
    result = prune_vectors()
    assert dict(result.deleted_by_type) == {"message": 1, "item": 1}
    assert not Embedding.objects.filter(content__icontains=SECRET_WORD).exists()
