"""What the tests of extractions racing a forgetting share: a conversation of ana's whose
first message goes while the model answers, the model's answer (an item standing on that
message alone, one standing on it and on more, one standing elsewhere), the cascades that
take it, and the check that nothing is left standing on what went."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Evidence, ExtractionWindow, MemoryItem
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry

ANA = MemoryScope("concierge", user_id="ana")
SAID_AT = datetime(2026, 3, 4, 15, 20, tzinfo=UTC)
MOVED = "I moved to Lisbon last May."


def element(value: str, attribute: str, *quotes: tuple[int, str]) -> dict[str, Any]:
    return {
        "kind": "fact",
        "subject": "Ana",
        "attribute": attribute,
        "value": value,
        "confidence": 0.9,
        "quotes": [{"message": message, "text": text} for message, text in quotes],
    }


# Message 1 is the one that goes: the home city stands on it alone, the neighbour city on
# it and on message 2, the seat on message 3 alone.
ANSWER = json.dumps(
    [
        element("Lisbon", "home city", (1, "I moved to Lisbon")),
        element("Porto", "city nearby", (1, "moved to Lisbon"), (2, "Porto is an hour away")),
        element("aisle", "seat", (3, "aisle seat, always")),
    ]
)


def conversation(thread_id: str = "ana-chat") -> list[Entry]:
    thread = threads.create_thread("concierge", {"userId": "ana"}, thread_id=thread_id)
    said = [
        ("user", MOVED),
        ("assistant", "Lovely! Porto is an hour away by train."),
        ("user", "Book me an aisle seat, always."),
    ]
    return [
        threads.add_entry(
            thread.pk, role=role, content=text, created_at=SAID_AT + timedelta(minutes=n)
        )
        for n, (role, text) in enumerate(said)
    ]


def assert_nothing_stands_on_what_went() -> None:
    """No quote without its entry or on a redacted one, no item without a quote, no
    forgotten words in a quote, no window naming an entry that is gone or redacted."""
    assert not Evidence.objects.filter(entry__isnull=True).exists()
    assert not Evidence.objects.filter(entry__redaction__isnull=False).exists()
    assert not MemoryItem.objects.filter(evidence__isnull=True).exists()
    assert not Evidence.objects.filter(quote__contains="moved to Lisbon").exists()
    standing = set(Entry.objects.filter(redaction__isnull=True).values_list("pk", flat=True))
    for first, last in ExtractionWindow.objects.values_list("first_entry_id", "last_entry_id"):
        assert {first, last} <= standing


def values() -> dict[str, list[str]]:
    """Each item's value with the quotes it stands on."""
    return {
        item.value: sorted(item.evidence.values_list("quote", flat=True))
        for item in MemoryItem.objects.all()
    }


Forget = Callable[[list[Entry]], object]

FORGETTINGS: dict[str, tuple[Forget, dict[str, list[str]]]] = {
    # (the cascade, what is left written)
    "delete": (
        lambda said: MemoryCascade().delete_entries([said[0].pk], keep_replies=True),
        {"Porto": ["Porto is an hour away"], "aisle": ["aisle seat, always"]},
    ),
    "delete with replies": (
        lambda said: MemoryCascade().delete_entries([said[0].pk]),
        {"aisle": ["aisle seat, always"]},
    ),
    "redact": (
        lambda said: MemoryCascade().redact_entries(
            [said[0].pk], reason="asked", keep_replies=True
        ),
        {"Porto": ["Porto is an hour away"], "aisle": ["aisle seat, always"]},
    ),
    "delete user": (lambda said: MemoryCascade().delete_user("ana"), {}),
}
