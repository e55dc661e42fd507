"""A world of two users' memory, every piece of it marked with canaries.

Each user (``ana``, ``bea``) of agent ``concierge`` gets, with a canary ``CANARY<USER><n>X``
in each text (``World.tokens`` says where each one is):

- a chat (``<user>-chat``): a user message (1) with replies, a model change (3) and a
  tool result (4) among them; a second user message (5) and its reply (6); a
  hierarchical compaction (7) covering the first turn with an atom quoting (1); a last
  user message (8);
- a fork of the chat (9, 10) and a fork of the fork (11);
- items: one standing on (1) about an entity named (20), one of the chat's own scope
  standing on (5) (21), each with a vector;
- vectors of the chat's messages;
- memory files: the user's own written at (1) (12), the chat's own (13), and one of the
  whole agent written at (1) (14);
- a channel session whose thread holds (15);
- a compaction run and an extraction run of the chat whose errors hold (16);
- an admin log entry about the item on (1) (17);
- in a group thread of ``cleo`` listing both users in ``memoryUserIds``: the user's message
  (18) and its reply (19).

``canaries(prefix)`` scans every text and JSON column of every table of every installed
app (JSON cast to text) and returns the canaries found, by table.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.db import connection, models
from django.db.models import Q, TextField
from django.db.models.functions import Cast

from cogitator_memory import dependents
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import NewEmbedding
from cogitator_memory.files.access import FileAccess, Place
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ExtractionRun, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.items.vectors import item_embedding
from cogitator_memory.jobs import RunStatus
from cogitator_memory.sessions.services import SessionManager
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry

AGENT = "concierge"
USERS = ("ana", "bea")
VECTOR = [0.1, 0.2, 0.3, 0.4]


def canary(user: str, number: int) -> str:
    """One word (the keyword index keeps it as a term of its own), ending in X so that no
    canary is the start of another."""
    return f"CANARY{user.upper()}{number}X"


@dataclass
class UserWorld:
    user: str
    chat: str
    fork: str
    fork2: str
    entries: dict[str, str] = field(default_factory=dict)  # name -> entry id
    items: dict[str, str] = field(default_factory=dict)
    session_thread: str = ""
    tokens: set[str] = field(default_factory=set)


@dataclass
class World:
    users: dict[str, UserWorld]
    group: str
    group_entries: dict[str, str]


def _vector(entry: Entry, user: str) -> NewEmbedding:
    return NewEmbedding(
        source_type="message",
        source_id=entry.pk,
        vector=VECTOR,
        content=str(entry.content),
        metadata={
            "index": "messages",
            "agentId": AGENT,
            "threadId": entry.thread_id,
            "userId": user,
        },
    )


def build_user(user: str, staff: Any) -> UserWorld:
    c = lambda n: canary(user, n)  # noqa: E731
    chat = f"{user}-chat"
    world = UserWorld(user=user, chat=chat, fork=f"{user}-fork", fork2=f"{user}-fork2")
    world.tokens = {c(n) for n in range(1, 22)}
    threads.create_thread(AGENT, {"userId": user}, thread_id=chat)
    add = lambda **kw: threads.add_entry(chat, **kw)  # noqa: E731
    e1 = add(
        role="user",
        content=f"{c(1)} I keep the spare key in the blue locker.",
        metadata={"userId": user},
    )
    e2 = add(role="assistant", content=f"{c(2)} Noted: the blue locker.")
    e3 = add(type="model_change", event={"model": f"{c(3)}-model"})
    e4 = add(
        type="tool_result", content=f"{c(4)} locker booked", tool_call_id="call-1", name="book"
    )
    e5 = add(
        role="user", content=f"{c(5)} My passport is in the drawer.", metadata={"userId": user}
    )
    e6 = add(role="assistant", content=f"{c(6)} The drawer, fine.")
    compaction = add(
        type="compaction",
        role="system",
        event={
            "strategy": "hierarchical",
            "summary": f"{c(7)} the user keeps a key in a locker.",
            "first_kept_entry_id": e5.pk,
            "covered_to_entry_id": e4.pk,
            "levels": {
                "version": 1,
                "saga": None,
                "arcs": [],
                "chapters": [
                    {
                        "from": e1.pk,
                        "to": e4.pk,
                        "atoms": [
                            {
                                "key": "fact:key",
                                "kind": "fact",
                                "status": "closed",
                                "text": f"{c(7)} key in the blue locker",
                                "verified": True,
                                "origin": "model",
                                "evidence": [
                                    {"entry": e1.pk, "quote": f"{c(1)} I keep", "verified": True}
                                ],
                            }
                        ],
                    }
                ],
            },
        },
    )
    e8 = add(role="user", content=f"{c(8)} Thanks.", metadata={"userId": user})
    world.entries = {
        "e1": e1.pk,
        "e2": e2.pk,
        "e3": e3.pk,
        "e4": e4.pk,
        "e5": e5.pk,
        "e6": e6.pk,
        "compaction": compaction.pk,
        "e8": e8.pk,
    }
    # Forks: at e6 (before the compaction), then a fork of the fork.
    threads.fork_thread(chat, e6.pk, world.fork)
    f9 = threads.add_entry(
        world.fork, role="user", content=f"{c(9)} In the fork.", metadata={"userId": user}
    )
    f10 = threads.add_entry(world.fork, role="assistant", content=f"{c(10)} Fork reply.")
    threads.fork_thread(world.fork, f10.pk, world.fork2)
    threads.add_entry(
        world.fork2, role="user", content=f"{c(11)} Deeper.", metadata={"userId": user}
    )
    world.entries.update({"f9": f9.pk, "f10": f10.pk})

    # Items, each with a vector.
    items = MemoryItems()
    scope = MemoryScope(AGENT, user_id=user)
    on_e1 = items.write(
        scope,
        NewItem(
            kind="fact",
            subject=f"{c(20)} locker",
            attribute="holds",
            value=f"{c(1)} key",
            trust="user",
            confidence=0.9,
            evidence=[NewEvidence(quote=f"{c(1)} I keep the spare key", entry_id=e1.pk)],
        ),
    ).item
    of_chat = items.write(
        MemoryScope(AGENT, user_id=user, thread_id=chat),
        NewItem(
            kind="fact",
            subject="Passport",
            attribute="place",
            value=f"{c(21)} drawer",
            trust="user",
            confidence=0.9,
            evidence=[NewEvidence(quote=f"{c(5)} My passport", entry_id=e5.pk)],
        ),
    ).item
    world.items = {"on_e1": on_e1.pk, "of_chat": of_chat.pk}
    store = get_embedding_store()
    store.add([item_embedding(on_e1, VECTOR), item_embedding(of_chat, VECTOR)])
    store.add([_vector(entry, user) for entry in (e1, e2, e4, e5, e6, e8)])

    # Memory files.
    files = MemoryFiles()
    files.run(
        FileAccess(scope=scope, place=Place(chat, e1.pk)),
        {"command": "create", "path": "/memories/locker.md", "file_text": f"{c(12)} key"},
    )
    files.run(
        FileAccess(scope=MemoryScope(AGENT, user_id=user, thread_id=chat)),
        {"command": "create", "path": "/memories/chat.md", "file_text": f"{c(13)} notes"},
    )
    files.run(
        FileAccess(scope=MemoryScope(AGENT), place=Place(chat, e1.pk)),
        {
            "command": "create",
            "path": f"/memories/{user}-shared.md",
            "file_text": f"{c(14)} for all",
        },
    )

    # A channel session.
    session, _ = SessionManager().get_or_create(user, "web", f"{user}-channel", AGENT)
    threads.add_entry(
        session.thread_id,
        role="user",
        content=f"{c(15)} Hello from the web.",
        metadata={"userId": user},
    )
    world.session_thread = session.thread_id

    # Jobs of record whose errors quote the chat.
    CompactionRun.objects.create(thread_id=chat, status=RunStatus.FAILED, error=f"{c(16)} failed")
    ExtractionRun.objects.create(thread_id=chat, status=RunStatus.FAILED, error=f"{c(16)} failed")

    # The admin log of a review of the item on e1.
    LogEntry.objects.log_actions(
        user_id=staff.pk,
        queryset=[MemoryItem.objects.get(pk=on_e1.pk)],
        action_flag=CHANGE,
        change_message=f"rejected: {c(17)} (admin)",
        single_object=False,
    )
    return world


def build_world() -> World:
    staff = get_user_model().objects.create_user("staff", is_staff=True)
    users = {user: build_user(user, staff) for user in USERS}
    group = "cleo-group"
    threads.create_thread(AGENT, {"userId": "cleo", "memoryUserIds": list(USERS)}, thread_id=group)
    entries = {}
    entries["cleo"] = threads.add_entry(
        group, role="user", content="Cleo starts.", metadata={"userId": "cleo"}
    ).pk
    for user in USERS:
        users[user].tokens |= {canary(user, 18), canary(user, 19)}
        entries[user] = threads.add_entry(
            group,
            role="user",
            content=f"{canary(user, 18)} says {user}.",
            metadata={"userId": user},
        ).pk
        entries[f"{user}-reply"] = threads.add_entry(
            group, role="assistant", content=f"{canary(user, 19)} answers {user}."
        ).pk
    threads.add_entry(group, role="user", content="Cleo ends.", metadata={"userId": "cleo"})
    return World(users=users, group=group, group_entries=entries)


@pytest.fixture
def world(db: Any) -> World:
    return build_world()


# --- the scan ------------------------------------------------------------------------------

SCANNED = (models.CharField, models.TextField, models.JSONField)
TOKEN = re.compile(r"CANARY[A-Z]+\d+X", re.IGNORECASE)


def _text_columns(model: type[models.Model]) -> Iterator[str]:
    for model_field in model._meta.concrete_fields:
        if isinstance(model_field, SCANNED):
            yield model_field.name


def canaries(
    prefix: str,
    *,
    leave_out: dict[type[models.Model], Q] | None = None,
    only: dict[type[models.Model], Q] | None = None,
) -> dict[str, set[str]]:
    """The canaries starting with ``prefix`` in every text and JSON column of every table,
    by ``<table>.<column>``; ``leave_out`` names rows of some models not to look at,
    ``only`` the only rows to look at."""
    found: dict[str, set[str]] = defaultdict(set)
    tables = set(connection.introspection.table_names())
    for model in apps.get_models():
        if not model._meta.managed or model._meta.proxy or model._meta.db_table not in tables:
            continue
        if only is not None and model not in only:
            continue
        rows = model._default_manager.all()
        if only is not None:
            rows = rows.filter(only[model])
        if leave_out and model in leave_out:
            rows = rows.exclude(leave_out[model])
        for name in _text_columns(model):
            column = rows.annotate(_as_text=Cast(name, TextField())).filter(
                _as_text__icontains=prefix
            )
            for value in column.values_list("_as_text", flat=True):
                found[f"{model._meta.db_table}.{name}"].update(
                    token.upper()
                    for token in TOKEN.findall(value or "")
                    if token.upper().startswith(prefix.upper())
                )
    return dict(found)


def tokens_in(found: dict[str, set[str]]) -> set[str]:
    return {token for tokens in found.values() for token in tokens}


class FailingDependent:
    """A dependent that raises while ``failing`` and asked to forget an entry of
    ``thread_id``: a store that fails half way through a cascade."""

    name = "failing"
    models: tuple[type[Any], ...] = ()

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.failing = True

    def entries_added(self, entries: Any) -> None:
        pass

    def forget_entries(self, entry_ids: Any, forgotten: Any) -> None:
        if (
            self.failing
            and Entry.objects.filter(pk__in=list(entry_ids), thread_id=self.thread_id).exists()
        ):
            raise RuntimeError("the store failed")

    def owner_changed(self, *args: Any) -> None:
        pass


@pytest.fixture
def failing_dependent() -> Iterator[Callable[[str], FailingDependent]]:
    def install(thread_id: str) -> FailingDependent:
        dependent = FailingDependent(thread_id)
        dependents.register(dependent)
        return dependent

    yield install
    dependents._dependents.pop(FailingDependent.name, None)
