"""What the context builder tests share: conversations written through the services."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry

AGENT = "concierge"
USER = "ana"
START = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


def new_thread(thread_id: str = "ana-1", *, user: str | None = USER) -> str:
    metadata = {"userId": user} if user else {}
    return services.create_thread(AGENT, metadata, thread_id=thread_id).pk


def say(thread_id: str, role: str, content: Any, **fields: Any) -> Entry:
    return services.add_entry(thread_id, role=role, content=content, **fields)


def conversation(
    thread_id: str, turns: int, *, words: int = 8, start: datetime = START
) -> list[Entry]:
    """``turns`` exchanges of a user message and a reply, an hour apart, each message
    ``words`` words long."""
    entries = []
    for turn in range(turns):
        at = start + timedelta(hours=turn)
        filler = " ".join(["word"] * (words - 2))
        entries.append(say(thread_id, "user", f"question {turn} {filler}", created_at=at))
        entries.append(
            say(
                thread_id,
                "assistant",
                f"answer {turn} {filler}",
                created_at=at + timedelta(minutes=1),
            )
        )
    return entries


def contents(messages: list[dict[str, Any]]) -> list[Any]:
    return [message["content"] for message in messages]
