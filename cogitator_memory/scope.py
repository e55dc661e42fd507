"""Who is asking: the agents, and the users within them, a caller may see.

Scope is the security boundary of the app, and it has one rule, written once here:

- a caller of an unrestricted scope sees everything;
- otherwise a row is visible when its agent is granted and the grant names no users,
  or names the row's user (a row of no user is then not visible).

``scope_condition`` turns that rule into a database condition on an (agent, user) pair of
columns; every ``visible_to(scope)`` (threads, entries, embeddings, and what is built on
them) is made from it. ``Scope.allows`` answers the same question in Python by the same
rule. The user a thread belongs to is ``Thread.user_id``, a real indexed column kept equal
to ``metadata.userId`` (``thread_owner`` says what a metadata dict names).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.jsondata import text_problem

# The thread metadata key naming the user a thread belongs to.
USER_ID_KEY = "userId"
USER_ID_MAX_LENGTH = 255


def thread_owner(metadata: Mapping[str, Any] | None, *, field: str = "metadata") -> str | None:
    """The user a thread with this metadata belongs to: ``metadata.userId``.

    The one rule for the value: absent or null means no user; otherwise it must be a
    non-empty text of at most 255 characters. Anything else (a number, a list, ``""``)
    raises ``InvalidInput`` on ``<field>.userId``: a user id of another JSON type would be
    compared differently by different readers, so it is refused rather than converted.
    """
    if not metadata:
        return None
    value = metadata.get(USER_ID_KEY)
    if value is None:
        return None
    if isinstance(value, str) and 0 < len(value) <= USER_ID_MAX_LENGTH:
        problem = text_problem(value)
        if problem is None:
            return value
        raise InvalidInput({f"{field}.{USER_ID_KEY}": problem})
    raise InvalidInput(
        {
            f"{field}.{USER_ID_KEY}": "A user id is a non-empty text of at most "
            f"{USER_ID_MAX_LENGTH} characters (or null for no user), "
            f"not {type(value).__name__} {value!r:.40}."
        }
    )


@dataclass(frozen=True)
class Scope:
    """The agents a caller may see; within an agent, optionally only some users.

    ``agent_ids`` None means every agent (a superuser, or trusted server code).
    ``user_ids[agent]`` None, or an agent missing from ``user_ids``, means every user of
    that agent; a set limits the caller to rows of those users.
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
        """Whether the caller may see at least some rows of this agent."""
        return self.agent_ids is None or agent_id in self.agent_ids

    def allows(self, agent_id: str | None, user_id: str | None) -> bool:
        """Whether the caller may see a row of this agent and user (the rule of
        ``scope_condition``)."""
        if self.agent_ids is None:
            return True
        if agent_id is None or agent_id not in self.agent_ids:
            return False
        users = self.user_ids.get(agent_id)
        return users is None or (user_id is not None and user_id in users)

    def allows_thread(self, thread: Any) -> bool:
        """Whether the caller may see this thread (its agent and ``user_id``)."""
        return self.allows(thread.agent_id, thread.user_id)


def scope_condition(scope: Scope, *, agent_field: str, user_field: str) -> Q | None:
    """The database condition that a row whose agent is at ``agent_field`` and whose user
    is at ``user_field`` is visible to ``scope``: ``Q()`` for an unrestricted scope, None
    when the scope sees nothing (callers then return an empty queryset)."""
    if scope.agent_ids is None:
        return Q()
    parts: list[Q] = []
    every_user = sorted(a for a in scope.agent_ids if scope.user_ids.get(a) is None)
    if every_user:
        parts.append(Q(**{f"{agent_field}__in": every_user}))
    for agent_id in sorted(scope.agent_ids):
        users = scope.user_ids.get(agent_id)
        if users:
            parts.append(Q(**{agent_field: agent_id, f"{user_field}__in": sorted(users)}))
    if not parts:
        return None
    condition = parts[0]
    for part in parts[1:]:
        condition |= part
    return condition
