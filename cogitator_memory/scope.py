"""Who is asking: the agents, and the users within them, a caller may see.

Scope is the security boundary of the app. Every read or write of another caller's data
goes through a queryset method ``visible_to(scope)``; the REST API builds the scope from
the authenticated principal's grants, never from the request body.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# The thread metadata key naming the user a thread belongs to.
USER_ID_KEY = "userId"


@dataclass(frozen=True)
class Scope:
    """The agents a caller may see; within an agent, optionally only some users.

    ``agent_ids`` None means every agent (a superuser, or trusted server code).
    ``user_ids[agent]`` None, or an agent missing from ``user_ids``, means every user of
    that agent; a set limits the caller to threads whose ``metadata.userId`` is in it.
    """

    agent_ids: frozenset[str] | None
    user_ids: Mapping[str, frozenset[str] | None] = field(default_factory=dict)

    @classmethod
    def everything(cls) -> Scope:
        """The scope of trusted code: every agent and user."""
        return cls(agent_ids=None)

    @classmethod
    def nothing(cls) -> Scope:
        """The scope of a caller with no grants."""
        return cls(agent_ids=frozenset())

    @classmethod
    def for_agents(
        cls,
        agent_ids: Iterable[str],
        user_ids: Mapping[str, Iterable[str] | None] | None = None,
    ) -> Scope:
        return cls(
            agent_ids=frozenset(agent_ids),
            user_ids={
                agent: (frozenset(users) if users is not None else None)
                for agent, users in (user_ids or {}).items()
            },
        )

    @property
    def is_unrestricted(self) -> bool:
        return self.agent_ids is None

    def allows_agent(self, agent_id: str) -> bool:
        """Whether the caller may see at least some threads of this agent."""
        return self.agent_ids is None or agent_id in self.agent_ids

    def allows(self, agent_id: str, user_id: str | None) -> bool:
        """Whether the caller may see a thread of this agent and user."""
        if self.agent_ids is None:
            return True
        if agent_id not in self.agent_ids:
            return False
        users = self.user_ids.get(agent_id)
        return users is None or (user_id is not None and user_id in users)

    def allows_thread(self, thread: Any) -> bool:
        """Whether the caller may see this thread (same rule as ``visible_to``)."""
        metadata = thread.metadata if isinstance(thread.metadata, dict) else {}
        user_id = metadata.get(USER_ID_KEY)
        return self.allows(thread.agent_id, user_id if isinstance(user_id, str) else None)
