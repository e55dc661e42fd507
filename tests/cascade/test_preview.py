"""Dry runs of the cascades (``cascade.preview``): the counts a confirmation page shows are
those of the cascade run for real, and a dry run leaves nothing behind: no row of any
table changed, no outbox row, no signal sent, no task enqueued, no call to a store outside
the database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from celery.app.task import Task
from django.apps import apps
from django.db import connection

from cogitator_memory import signals
from cogitator_memory.cascade import traces as cascade_traces
from cogitator_memory.cascade import users as cascade_users
from cogitator_memory.cascade.preview import dry_run, previewing
from cogitator_memory.cascade.report import CascadeReport
from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.embeddings import entry_vectors
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.exceptions import ThreadNotFound
from cogitator_memory.outbox import services as outbox_services
from cogitator_memory.outbox.models import OutboxMessage
from tests.cascade.conftest import World, build_world

Run = Callable[[MemoryCascade, World], CascadeReport]

CASCADES: dict[str, Run] = {
    "delete entries with replies": lambda c, w: c.delete_entries([w.users["ana"].entries["e1"]]),
    "delete an answer alone": lambda c, w: c.delete_entries(
        [w.users["ana"].entries["e2"]], keep_replies=True
    ),
    "redact entries with replies": lambda c, w: c.redact_entries(
        [w.users["ana"].entries["e1"], w.users["ana"].entries["e5"]], reason="asked"
    ),
    "delete a thread": lambda c, w: c.delete_thread(w.users["ana"].chat),
    "delete a user": lambda c, w: c.delete_user("ana"),
    "rewind": lambda c, w: c.rewind(w.users["ana"].chat, w.users["ana"].entries["e2"]),
}


def every_row() -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of every installed app, every column, in a stable order."""
    tables = set(connection.introspection.table_names())
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for model in apps.get_models():
        if not model._meta.managed or model._meta.proxy or model._meta.db_table not in tables:
            continue
        columns = [field.attname for field in model._meta.concrete_fields]
        rows[model._meta.db_table] = sorted(
            (
                tuple(str(value) for value in row)
                for row in model._default_manager.values_list(*columns)
            ),
        )
    return rows


@pytest.fixture
def world(db: Any) -> World:
    return build_world()


@pytest.mark.parametrize("how", sorted(CASCADES))
def test_a_dry_run_counts_what_the_cascade_then_does(world: World, how: str) -> None:
    # given
    run = CASCADES[how]
    # when
    preview = dry_run(lambda: run(MemoryCascade(), world))
    report = run(MemoryCascade(), world)
    # then: the same counts and the same ids, and it did something
    assert preview.as_dict() == report.as_dict()
    assert not report.is_empty()


@pytest.fixture
def heard() -> Iterator[list[str]]:
    """The app's signals sent, by name."""
    sent: list[str] = []
    receivers = []
    for name in (
        "entry_added",
        "entry_deleted",
        "entry_redacted",
        "thread_cleared",
        "thread_deleted",
        "item_written",
    ):
        signal = getattr(signals, name, None)
        if signal is None:
            continue

        def receiver(sender: Any, _name: str = name, **kwargs: Any) -> None:
            sent.append(_name)

        signal.connect(receiver, weak=False)
        receivers.append((signal, receiver))
    yield sent
    for signal, receiver in receivers:
        signal.disconnect(receiver)


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tasks sent (eagerly or not), by name."""
    sent: list[str] = []
    real = Task.apply_async

    def apply_async(self: Task, *args: Any, **kwargs: Any) -> Any:
        sent.append(self.name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Task, "apply_async", apply_async)
    return sent


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", sorted(CASCADES))
def test_a_dry_run_leaves_nothing_behind(
    how: str, heard: list[str], enqueued: list[str], settings: Any
) -> None:
    # given (compaction on, so that a summary that goes asks for a compaction)
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "scripted"}, "COMPACTION": {"ENABLED": True}}
    world = build_world()
    before = every_row()
    heard.clear()
    enqueued.clear()
    # when, outside any transaction: what the dry run left for after commit would run
    report = dry_run(lambda: CASCADES[how](MemoryCascade(), world))
    # then it counted something, and nothing of it stayed or was sent
    assert not report.is_empty()
    assert every_row() == before
    assert not OutboxMessage.objects.exists()
    assert heard == []
    assert enqueued == []
    assert not previewing()
    # and the cascade run for real is heard (the checks above can see what it sends)
    CASCADES[how](MemoryCascade(), world)
    assert heard or enqueued or how == "rewind"


class OutsideStore:
    """A vector store outside the database (as Qdrant is): its calls are recorded."""

    transactional = False

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if callable(attribute) and name.startswith(("delete", "set_owner", "add")):

            def recorded(*args: Any, **kwargs: Any) -> Any:
                self.calls.append(name)
                return attribute(*args, **kwargs)

            return recorded
        return attribute


@pytest.mark.django_db(transaction=True)
def test_a_dry_run_does_not_touch_a_store_outside_the_database(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a store outside the database (vectors of entries and items go through the
    # outbox), and what publishes outbox rows recorded
    build_world()
    store = OutsideStore(get_embedding_store())
    for module in (cascade_users, cascade_traces, entry_vectors):
        monkeypatch.setattr(module, "get_embedding_store", lambda: store)
    published: list[int] = []
    monkeypatch.setattr(
        outbox_services, "_publish_after_commit", lambda message_id: published.append(message_id)
    )
    # when
    report = dry_run(lambda: MemoryCascade().delete_user("ana"))
    # then the store was not called, and the outbox rows written in the dry run neither
    # stay nor are published
    assert store.calls == []
    assert report.vectors_queued > 0
    assert not OutboxMessage.objects.exists()
    assert published == []
    # and the forgetting itself does both
    MemoryCascade().delete_user("ana")
    assert "delete_by_filter" in store.calls
    assert published


def test_a_dry_run_inside_a_transaction_rolls_back_to_where_it_began(world: World) -> None:
    # given (pytest-django's test transaction is open)
    chat = world.users["ana"].chat
    # when
    report = dry_run(lambda: MemoryCascade().delete_thread(chat))
    # then the thread is still there to delete
    assert report.threads == [chat]
    assert MemoryCascade().delete_thread(chat).threads == [chat]


def test_the_errors_of_a_dry_run_are_the_cascades(world: World) -> None:
    with pytest.raises(ThreadNotFound):
        dry_run(lambda: MemoryCascade().delete_thread("no-such-thread"))
    assert not previewing()
