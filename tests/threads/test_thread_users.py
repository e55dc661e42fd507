"""``metadata.memoryUserIds``: the other users of a thread, kept as rows (``ThreadUser``)."""

from __future__ import annotations

import pytest

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Thread, ThreadUser

pytestmark = pytest.mark.django_db


def users_of(thread_id: str) -> list[str]:
    return sorted(ThreadUser.objects.filter(thread_id=thread_id).values_list("user_id", flat=True))


def test_the_rows_follow_the_metadata_on_every_write() -> None:
    services.create_thread("a", {"userId": "cleo", "memoryUserIds": ["ana", "bea"]}, thread_id="g")
    assert users_of("g") == ["ana", "bea"]

    services.update_thread("g", {"memoryUserIds": ["bea", "dan", "bea"]})
    assert users_of("g") == ["bea", "dan"]

    services.update_thread("g", {"userId": "cleo"}, replace=True)
    assert users_of("g") == []


def test_a_fork_lists_the_users_of_its_origin() -> None:
    services.create_thread("a", {"memoryUserIds": ["ana"]}, thread_id="g")
    entry = services.add_entry("g", role="user", content="hi")

    services.fork_thread("g", entry.pk, "f")

    assert users_of("f") == ["ana"]


def test_the_rows_go_with_the_thread() -> None:
    services.create_thread("a", {"memoryUserIds": ["ana"]}, thread_id="g")

    services.delete_thread("g")

    assert not ThreadUser.objects.exists()


@pytest.mark.parametrize("value", ["ana", [1], [""], ["x" * 256], {"ana": True}])
def test_a_list_of_anything_but_user_ids_is_refused(value: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        services.create_thread("a", {"memoryUserIds": value}, thread_id="g")

    assert "metadata.memoryUserIds" in refused.value.errors
    assert not Thread.objects.exists()


def test_null_lists_none() -> None:
    services.create_thread("a", {"memoryUserIds": None}, thread_id="g")

    assert users_of("g") == []
