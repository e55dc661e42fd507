"""What every part of ``MemoryItems`` shares: the activation threshold, the clock, and the
lock that serializes one agent's changes of items."""

from collections.abc import Callable, Iterable
from datetime import datetime

from django.db import connections, router
from django.utils import timezone

from cogitator_memory.conf import memory_settings
from cogitator_memory.items.models import (
    MemoryItem,
)
from cogitator_memory.items.write_sql import AGENT_LOCK, agent_lock_key


class ItemRules:
    """What the parts of ``MemoryItems`` share. ``activation_confidence``: the confidence
    at which a user's item whose quotes are grounded (they hold, and one says its value)
    becomes active on its own (``ITEMS`` setting, 0.7 by default). ``clock`` gives "now"
    (tests pass their own)."""

    def __init__(
        self,
        *,
        activation_confidence: float | None = None,
        clock: Callable[[], datetime] = timezone.now,
    ) -> None:
        self.activation_confidence = (
            float(memory_settings.ITEMS["ACTIVATION_CONFIDENCE"])
            if activation_confidence is None
            else activation_confidence
        )
        self.clock = clock

    # --- the write lock and the clock ----------------------------------------------------

    def _lock_agent(self, agent_id: str) -> None:
        """Serialize the writes of one agent until the transaction ends."""
        connection = connections[router.db_for_write(MemoryItem)]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(AGENT_LOCK, [agent_lock_key(agent_id)])
        # SQLite: the IMMEDIATE transaction holds the database's write lock already.

    def lock_agents(self, agent_ids: Iterable[str]) -> None:
        """Serialize with the writes of these agents until the transaction ends (in one
        order, so two lockers of the same agents never wait on each other)."""
        for agent_id in sorted(set(agent_ids)):
            self._lock_agent(agent_id)
