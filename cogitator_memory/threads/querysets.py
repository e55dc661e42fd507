"""Named filters of threads and entries."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from cogitator_memory.grants import GrantedQuerySet
from cogitator_memory.jsondata import filter_json_values

if TYPE_CHECKING:
    from cogitator_memory.threads.models import Entry, Thread  # noqa: F401


class ThreadQuerySet(GrantedQuerySet["Thread"]):
    def with_metadata(self, metadata: dict[str, Any]) -> ThreadQuerySet:
        """Threads whose metadata holds each key with an equal value of the same JSON
        type (1 matches neither "1" nor true). Values are texts, numbers, booleans or
        None; raises ``InvalidInput`` for others and for keys outside [A-Za-z0-9_:@-]."""
        return filter_json_values(self, "metadata", metadata, error_field="metadata")

    def for_agents(self, agent_ids: Iterable[str]) -> ThreadQuerySet:
        """Threads of any of these agents."""
        return self.filter(agent_id__in=list(agent_ids))

    def newest_first(self) -> ThreadQuerySet:
        """Most recently updated first; ties broken by id, so paging is stable."""
        return self.order_by("-updated_at", "-id")


class EntryQuerySet(GrantedQuerySet["Entry"]):
    # An entry's owner is its thread's.
    grants_agent_field = "thread__agent_id"
    grants_user_field = "thread__user_id"

    def of_thread(self, thread_id: str) -> EntryQuerySet:
        """Entries of one thread, every branch."""
        return self.filter(thread_id=thread_id)

    def of_types(self, types: Iterable[str] | None) -> EntryQuerySet:
        """Entries of these types; None means message and tool_result only."""
        from cogitator_memory.threads.models import CONVERSATION_TYPES

        return self.filter(type__in=sorted(CONVERSATION_TYPES if types is None else types))

    def in_time_order(self) -> EntryQuerySet:
        """Oldest first; entries of one created_at keep their order of insertion."""
        return self.order_by("created_at", "seq")
