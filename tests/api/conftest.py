"""Principals of the API tests (users and API keys with grants), clients acting for them,
and the checks every API test module shares."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.http import HttpResponse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework_api_key.models import APIKey

from cogitator_memory.access.models import Grant
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode
from cogitator_memory.items.models import Evidence, ExtractionRun, MemoryItem
from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread

API = "/api/memory"
PASSWORD = "correct horse battery staple"

# agent id -> None (every user of the agent) or the user ids the grant is limited to
Grants = Mapping[str, Iterable[str] | None]


# --- clients and principals -------------------------------------------------------------


@pytest.fixture(autouse=True)
def fresh_throttle_counts() -> Iterator[None]:
    # The throttle counts requests in Django's cache, which no test transaction rolls back;
    # without this a principal's count would carry over into the next test.
    cache.clear()
    yield
    cache.clear()


def add_grants(grants: Grants | None, **principal: Any) -> None:
    for agent_id, user_ids in (grants or {}).items():
        Grant.objects.create(
            agent_id=agent_id,
            user_ids=None if user_ids is None else list(user_ids),
            **principal,
        )


def token_client(user: User) -> APIClient:
    """A client sending the user's DRF token, as a script or a frontend would."""
    token, _created = Token.objects.get_or_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def api_key_client(key: str) -> APIClient:
    """A client sending a service's API key."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


@dataclass
class Principal:
    """Someone the API acts for, with a client that authenticates as them."""

    label: str
    client: APIClient
    user: User | None = None
    api_key: APIKey | None = None
    key: str | None = None


@pytest.fixture
def make_user(db: None) -> Callable[..., User]:
    def make(
        username: str,
        grants: Grants | None = None,
        *,
        is_superuser: bool = False,
        is_active: bool = True,
    ) -> User:
        user = User.objects.create_user(
            username,
            password=PASSWORD,
            is_superuser=is_superuser,
            is_staff=is_superuser,
            is_active=is_active,
        )
        add_grants(grants, user=user)
        return user

    return make


@pytest.fixture
def make_api_key(db: None) -> Callable[..., tuple[APIKey, str]]:
    def make(
        name: str,
        grants: Grants | None = None,
        *,
        revoked: bool = False,
        expiry_date: datetime | None = None,
    ) -> tuple[APIKey, str]:
        api_key, key = APIKey.objects.create_key(
            name=name, revoked=revoked, expiry_date=expiry_date
        )
        add_grants(grants, api_key=api_key)
        return api_key, key

    return make


@pytest.fixture
def ana(make_user: Callable[..., User]) -> Principal:
    """A user granted every user of agent-a, sending her DRF token."""
    user = make_user("ana", {"agent-a": None})
    return Principal("user ana (agent-a)", token_client(user), user=user)


@pytest.fixture
def service_b(make_api_key: Callable[..., tuple[APIKey, str]]) -> Principal:
    """A service's API key granted every user of agent-b."""
    api_key, key = make_api_key("service-b", {"agent-b": None})
    return Principal("API key service-b (agent-b)", api_key_client(key), api_key=api_key, key=key)


@pytest.fixture
def client(ana: Principal) -> APIClient:
    """The client of most endpoint tests: ana's."""
    return ana.client


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


# --- memory to work on -----------------------------------------------------------------


@dataclass
class Conversation:
    """A thread with two branches:

    ``root -> reply -> follow_up`` (active) and ``root -> retry``, plus a label event
    after ``follow_up``. The active leaf is ``follow_up``.
    """

    thread: Thread
    root: Entry
    reply: Entry
    follow_up: Entry
    retry: Entry
    label: Entry
    entry_ids: list[str] = field(default_factory=list)

    @property
    def thread_id(self) -> str:
        return self.thread.pk


def write_conversation(
    agent_id: str, metadata: dict[str, Any] | None = None, *, tag: str = ""
) -> Conversation:
    """Write a ``Conversation``; ``tag`` is added to every text, to tell whose text leaked."""
    thread = services.create_thread(agent_id, metadata or {})
    root = services.add_entry(thread.pk, role="user", content=f"Where is my parcel?{tag}")
    reply = services.add_entry(thread.pk, role="assistant", content=f"It left the depot.{tag}")
    follow_up = services.add_entry(thread.pk, role="user", content=f"When will it arrive?{tag}")
    retry = services.add_entry(
        thread.pk,
        role="assistant",
        content=f"Let me check.{tag}",
        parent_id=root.pk,
        activate=False,
    )
    label = services.add_entry(
        thread.pk,
        type="label",
        event={"label": f"parcel{tag}"},
        parent_id=follow_up.pk,
        activate=False,
    )
    thread.refresh_from_db()
    return Conversation(
        thread=thread,
        root=root,
        reply=reply,
        follow_up=follow_up,
        retry=retry,
        label=label,
        entry_ids=[root.pk, reply.pk, follow_up.pk, retry.pk, label.pk],
    )


@pytest.fixture
def conversation(db: None) -> Conversation:
    """A conversation of agent-a (ana's)."""
    return write_conversation("agent-a", {"userId": "u1", "topic": "parcel"})


@pytest.fixture
def foreign_conversation(db: None) -> Conversation:
    """A conversation of agent-b, which ana may not see."""
    return write_conversation("agent-b", {"userId": "u9", "topic": "invoice"})


# --- checks ----------------------------------------------------------------------------


def assert_error(
    response: HttpResponse, status: int, code: str, fields: Iterable[str] = ()
) -> dict[str, Any]:
    """The response is an error of the documented shape, with this code and exactly these
    fields to blame; returns the body."""
    body: dict[str, Any] = response.json()
    assert response.status_code == status, body
    assert set(body) == {"code", "message", "errors"}, body
    assert body["code"] == code, body
    assert isinstance(body["message"], str) and body["message"], body
    assert sorted(body["errors"]) == sorted(fields), body
    for messages in body["errors"].values():
        assert messages and all(isinstance(m, str) and m for m in messages), body
    return body


def without_ids(body: Any, ids: Mapping[str, str]) -> Any:
    """``body`` with each id replaced by its placeholder, to compare the answer about one
    object with the answer about another."""
    text = repr(body)
    for object_id, placeholder in ids.items():
        text = text.replace(object_id, placeholder)
    return text


def row_counts() -> tuple[int, int]:
    return Thread.objects.count(), Entry.objects.count()


def snapshot_rows() -> dict[str, list[dict[str, Any]]]:
    """Every thread, entry, item, evidence, extraction run, memory file, session and
    graph row, every column, in a stable order."""
    return {
        "threads": list(Thread.objects.order_by("pk").values()),
        "entries": list(Entry.objects.order_by("pk").values()),
        "items": list(MemoryItem.objects.order_by("pk").values()),
        "evidence": list(Evidence.objects.order_by("pk").values()),
        "runs": list(ExtractionRun.objects.order_by("pk").values()),
        "file_versions": list(MemoryFileVersion.objects.order_by("pk").values()),
        "file_heads": list(MemoryFileHead.objects.order_by("pk").values()),
        "sessions": list(ChannelSession.objects.order_by("pk").values()),
        "graph_nodes": list(GraphNode.objects.order_by("pk").values()),
        "graph_edges": list(GraphEdge.objects.order_by("pk").values()),
        "graph_evidence": list(GraphEvidence.objects.order_by("pk").values()),
    }
