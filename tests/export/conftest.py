"""A user's memory to export, and others' memory that must stay out of it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ExtractionRun, MemoryItem, RunStatus
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread

# The API tests' principals: users and API keys with grants, and throttle counts cleared.
from tests.api.conftest import fresh_throttle_counts, make_api_key, make_user  # noqa: F401

AGENT = "support"
OTHER_AGENT = "sales"
USER = "u1"
OTHER_USER = "u2"
# Written into every text of the other user's memory: it must never come out.
CANARY = "canary-7f3a"
FILE_PATH = "/memories/user.md"


@dataclass
class Memory:
    """What memory keeps of one user in one agent."""

    agent_id: str
    user_id: str
    first: Thread
    second: Thread
    # Every entry of each thread, in seq order.
    entries: dict[str, list[str]]
    root: Entry
    branch: Entry
    redacted: Entry
    fact: MemoryItem
    preference: MemoryItem
    session: ChannelSession
    extraction_run: ExtractionRun
    compaction_run: CompactionRun
    texts: list[str] = field(default_factory=list)


def remember(agent_id: str, user_id: str, *, tag: str = "") -> Memory:
    """Two threads of the user (one with a second branch and a redacted entry, one with a
    tool call, its result and a label), a fact with evidence and a preference let go,
    two versions of a memory file, a channel session, and a run of each kind. ``tag`` is
    written into every text."""
    first = services.create_thread(agent_id, {"userId": user_id, "topic": f"parcel{tag}"})
    root = services.add_entry(first.pk, role="user", content=f"My parcel code is 4711{tag}.")
    reply = services.add_entry(first.pk, role="assistant", content=f"Noted{tag}.")
    card = services.add_entry(first.pk, role="user", content=f"My card is card-5555-visa{tag}.")
    branch = services.add_entry(
        first.pk,
        role="assistant",
        content=f"Let me check{tag}.",
        parent_id=root.pk,
        activate=False,
    )
    services.redact_entry(card.pk, reason="a card number")
    second = services.create_thread(agent_id, {"userId": user_id, "topic": f"tea{tag}"})
    ask = services.add_entry(second.pk, role="user", content=f"I drink green tea{tag}.")
    call = services.add_entry(
        second.pk,
        role="assistant",
        tool_calls=[{"id": "call-1", "name": "lookup", "arguments": {"q": f"tea{tag}"}}],
    )
    result = services.add_entry(
        second.pk,
        type="tool_result",
        role="tool",
        content=f"sencha{tag}",
        tool_call_id="call-1",
    )
    label = services.add_entry(second.pk, type="label", event={"label": f"tea{tag}"})
    scope = MemoryScope(agent_id, user_id=user_id)
    items = MemoryItems()
    fact = items.write(
        scope,
        NewItem(
            kind="fact",
            subject=f"Parcel{tag}",
            attribute="code",
            value=f"4711{tag}",
            trust="user",
            evidence=[NewEvidence(quote="My parcel code is 4711", entry_id=root.pk)],
        ),
    ).item
    preference = items.write(
        scope,
        NewItem(
            kind="preference",
            subject=f"Tea{tag}",
            attribute="favourite",
            value=f"green tea{tag}",
            trust="user",
            evidence=[NewEvidence(quote="I drink green tea", entry_id=ask.pk)],
        ),
    ).item
    items.let_go([preference.pk])
    preference.refresh_from_db()
    files = MemoryFiles()
    access = FileAccess(scope=scope)
    version = files.put(access, FILE_PATH, f"Likes tea{tag}.")
    files.put(access, FILE_PATH, f"Likes green tea{tag}.", expected_sha256=version.sha256)
    session = ChannelSession.objects.create(
        thread=second,
        agent_id=agent_id,
        user_id=user_id,
        channel_type="telegram",
        channel_id=f"chat{tag}",
    )
    extraction_run = ExtractionRun.objects.create(
        thread=first,
        status=RunStatus.DONE,
        windows_done=1,
        windows_total=1,
        items_written=1,
        error=f"worker trace{tag}",
    )
    compaction_run = CompactionRun.objects.create(
        thread=second, status=RunStatus.FAILED, attempts=3, error=f"provider said no{tag}"
    )
    first.refresh_from_db()
    second.refresh_from_db()
    return Memory(
        agent_id=agent_id,
        user_id=user_id,
        first=first,
        second=second,
        entries={
            first.pk: [root.pk, reply.pk, card.pk, branch.pk],
            second.pk: [ask.pk, call.pk, result.pk, label.pk],
        },
        root=root,
        branch=branch,
        redacted=Entry.objects.get(pk=card.pk),
        fact=fact,
        preference=preference,
        session=session,
        extraction_run=extraction_run,
        compaction_run=compaction_run,
    )


@pytest.fixture
def memory(db: None) -> Memory:
    """The user's memory in AGENT."""
    return remember(AGENT, USER)


@pytest.fixture
def others(db: None) -> list[Memory]:
    """What must stay out of the user's export: another user of the same agent, the user's
    id in no scope of its own (a shared file of the agent), all tagged with CANARY."""
    other = remember(AGENT, OTHER_USER, tag=CANARY)
    MemoryFiles().put(FileAccess(scope=MemoryScope(AGENT)), "/memories/agent.md", CANARY)
    return [other]


def document(pieces: Iterable[str]) -> dict[str, Any]:
    """The export's pieces joined and read as JSON."""
    loaded: dict[str, Any] = json.loads("".join(pieces))
    return loaded
