"""factory_boy factories of threads and entries.

``EntryFactory.create`` appends the way ``services.add_entry`` does: after the thread's
active leaf unless ``parent`` is given (``parent=None`` starts a new root), with the
thread's next ``seq``, and moves the active leaf to the new entry (``activate=False``
leaves it). It skips the services' validation and signals, so use it to set up state, not
to test writes. ``EntryFactory.build`` writes nothing; ``create_branch`` writes a long
branch with one bulk insert.
"""

from __future__ import annotations

from typing import Any

import factory
from django.db import transaction
from factory.django import DjangoModelFactory

from cogitator_memory.threads.models import Entry, EntryType, Role, Thread, new_entry_id
from cogitator_memory.tokens import count_entry_fields_tokens


class ThreadFactory(DjangoModelFactory[Thread]):
    class Meta:
        model = Thread

    id = factory.Sequence(lambda n: f"thread-{n}")
    agent_id = "agent-1"
    metadata = factory.LazyFunction(dict)


class EntryFactory(DjangoModelFactory[Entry]):
    class Meta:
        model = Entry
        skip_postgeneration_save = True

    id = factory.LazyFunction(new_entry_id)
    thread = factory.SubFactory(ThreadFactory)
    type = EntryType.MESSAGE.value
    role = Role.USER.value
    content = factory.Sequence(lambda n: f"Message {n}")
    name = None
    tool_calls = None
    tool_results = None
    event = None
    token_count = factory.LazyAttribute(
        lambda entry: count_entry_fields_tokens(
            content=entry.content,
            name=entry.name,
            tool_calls=entry.tool_calls,
            tool_results=entry.tool_results,
            event=entry.event,
        )
    )

    @classmethod
    def _create(cls, model_class: Any, *args: Any, **kwargs: Any) -> Entry:
        thread: Thread = kwargs["thread"]
        with transaction.atomic():
            # The lock keeps seq gap-free if a test writes from several threads.
            locked = Thread.objects.select_for_update().get(pk=thread.pk)
            if kwargs.get("seq") is None:
                kwargs["seq"] = locked.next_seq + 1
            if "parent" not in kwargs and "parent_id" not in kwargs:
                kwargs["parent_id"] = locked.active_leaf_id
            entry: Entry = super()._create(model_class, *args, **kwargs)
            next_seq = max(locked.next_seq, entry.seq)
            Thread.objects.filter(pk=thread.pk).update(next_seq=next_seq)
            thread.next_seq = next_seq
        return entry

    @factory.post_generation
    def activate(entry: Entry, create: bool, extracted: bool | None, **kwargs: Any) -> None:
        if not create or extracted is False:
            return
        Thread.objects.filter(pk=entry.thread_id).update(active_leaf=entry.pk)
        entry.thread.active_leaf = entry


def create_branch(
    thread: Thread, count: int, *, parent: Entry | None = None, **fields: Any
) -> list[Entry]:
    """Write ``count`` user messages in a chain after ``parent`` (a new root when None) with
    one bulk insert, and make the last one the thread's active leaf. ``fields`` override
    the fields of every entry. Returns them oldest first.
    """
    # Entries are made directly, not through EntryFactory.build: long branches are what
    # this is for, and the factory's per-object cost would dominate the test.
    thread.refresh_from_db()
    parent_id = parent.pk if parent is not None else None
    entries: list[Entry] = []
    for offset in range(1, count + 1):
        content = f"Message {thread.next_seq + offset}"
        values: dict[str, Any] = {
            "type": EntryType.MESSAGE.value,
            "role": Role.USER.value,
            "content": content,
            "token_count": count_entry_fields_tokens(content=content),
            **fields,
        }
        entry = Entry(
            id=new_entry_id(),
            thread=thread,
            seq=thread.next_seq + offset,
            parent_id=parent_id,
            **values,
        )
        entries.append(entry)
        parent_id = entry.pk
    Entry.objects.bulk_create(entries, batch_size=500)
    if entries:
        Thread.objects.filter(pk=thread.pk).update(
            next_seq=entries[-1].seq, active_leaf=entries[-1].pk
        )
        thread.refresh_from_db()
    return entries
