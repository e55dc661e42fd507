"""Whose memory a row is, and who may reach it: the two words of tenancy, in one module.

**Grants** are who is asking: the agents, and the users within them, a caller may reach.
They are the security boundary of the app, and they have one rule, written once here:

- unrestricted grants (trusted code, a superuser) reach everything;
- otherwise a row is visible when its agent is granted and the grant names no users,
  or names the row's user (a row of no user is then not visible).

``grants_condition`` turns that rule into a database condition on an (agent, user) pair of
columns; every ``visible_to(grants)`` (threads, entries, items, files, sessions,
embeddings, and what is built on them) is made from it by ``GrantedQuerySet``.
``Grants.allows`` answers the same question in Python by the same rule. The user a thread
belongs to is ``Thread.user_id``, a real indexed column kept equal to ``metadata.userId``
(``thread_owner`` says what a metadata dict names).

A **MemoryScope** is whose memory a row is: an agent, and optionally a user, a project and
a thread. A run of a scope sees its own rows and those shared wider in its agent
(``memory_scope_q``, ``ScopedQuerySet.seen_from``); a slot is laid out within one exact
scope (``exact_scope_sql``, the raw SQL of the hot write path of items).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

from django.db import models
from django.db.models import Q

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.jsondata import storable_text, text_problem

# The thread metadata key naming the user a thread belongs to.
USER_ID_KEY = "userId"
USER_ID_MAX_LENGTH = 255
# The thread metadata key listing the other users whose words the thread holds (a thread
# of several people): forgetting a user finds their messages there.
MEMORY_USERS_KEY = "memoryUserIds"
MAX_MEMORY_USERS = 1000

_M = TypeVar("_M", bound=models.Model)


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


def memory_users(metadata: Mapping[str, Any] | None, *, field: str = "metadata") -> list[str]:
    """The users a thread with this metadata lists in ``metadata.memoryUserIds``: the
    other people whose messages it holds (each such message names its author in its own
    ``metadata.userId``). Absent or null lists none; otherwise a list of at most
    ``MAX_MEMORY_USERS`` user ids (the rule of ``thread_owner``), kept in order, each
    once. Anything else raises ``InvalidInput`` on ``<field>.memoryUserIds``."""
    if not metadata:
        return []
    value = metadata.get(MEMORY_USERS_KEY)
    if value is None:
        return []
    where = f"{field}.{MEMORY_USERS_KEY}"
    if not isinstance(value, list) or len(value) > MAX_MEMORY_USERS:
        raise InvalidInput(
            {where: f"A list of at most {MAX_MEMORY_USERS} user ids (or null for none)."}
        )
    users: list[str] = []
    for user in value:
        if not isinstance(user, str) or not 0 < len(user) <= USER_ID_MAX_LENGTH:
            raise InvalidInput(
                {
                    where: "Each user id is a non-empty text of at most "
                    f"{USER_ID_MAX_LENGTH} characters, not {user!r:.40}."
                }
            )
        if problem := text_problem(user):
            raise InvalidInput({where: problem})
        if user not in users:
            users.append(user)
    return users


@dataclass(frozen=True)
class Grants:
    """The agents a caller may see; within an agent, optionally only some users.

    ``agent_ids`` None means every agent (a superuser, or trusted server code).
    ``user_ids[agent]`` None, or an agent missing from ``user_ids``, means every user of
    that agent; a set limits the caller to rows of those users.
    """

    agent_ids: frozenset[str] | None
    user_ids: Mapping[str, frozenset[str] | None] = field(default_factory=dict)

    @classmethod
    def everything(cls) -> Grants:
        """The grants of trusted code: every agent and user."""
        return cls(agent_ids=None)

    @classmethod
    def nothing(cls) -> Grants:
        """The grants of a caller granted nothing."""
        return cls(agent_ids=frozenset())

    @classmethod
    def for_agents(
        cls,
        agent_ids: Iterable[str],
        user_ids: Mapping[str, Iterable[str] | None] | None = None,
    ) -> Grants:
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
        ``grants_condition``)."""
        if self.agent_ids is None:
            return True
        if agent_id is None or agent_id not in self.agent_ids:
            return False
        users = self.user_ids.get(agent_id)
        return users is None or (user_id is not None and user_id in users)

    def covers(self, agent_id: str | None, user_ids: Iterable[str] | None) -> bool:
        """Whether a grant of ``agent_id`` to ``user_ids`` (None: every user of the agent)
        reaches nothing beyond these grants: the agent is granted, and when these grants
        name its users, the grant names only some of them. Staff hand on grants only
        within their own by this rule."""
        if self.agent_ids is None:
            return True
        if agent_id is None or agent_id not in self.agent_ids:
            return False
        users = self.user_ids.get(agent_id)
        return users is None or (user_ids is not None and set(user_ids) <= users)

    def allows_thread(self, thread: Any) -> bool:
        """Whether the caller may see this thread (its agent and ``user_id``)."""
        return self.allows(thread.agent_id, thread.user_id)


def grants_condition(grants: Grants, *, agent_field: str, user_field: str) -> Q | None:
    """The database condition that a row whose agent is at ``agent_field`` and whose user
    is at ``user_field`` is visible to ``grants``: ``Q()`` for unrestricted grants, None
    when the grants reach nothing (callers then return an empty queryset)."""
    if grants.agent_ids is None:
        return Q()
    parts: list[Q] = []
    every_user = sorted(a for a in grants.agent_ids if grants.user_ids.get(a) is None)
    if every_user:
        parts.append(Q(**{f"{agent_field}__in": every_user}))
    for agent_id in sorted(grants.agent_ids):
        users = grants.user_ids.get(agent_id)
        if users:
            parts.append(Q(**{agent_field: agent_id, f"{user_field}__in": sorted(users)}))
    if not parts:
        return None
    condition = parts[0]
    for part in parts[1:]:
        condition |= part
    return condition


SCOPE_FIELDS = ("agent_id", "user_id", "project_id", "thread_id")
MAX_SCOPE_ID_LENGTH = 255


@dataclass(frozen=True)
class MemoryScope:
    """An agent, and optionally a user, a project and a thread: whose memory a row is.

    A row written in a scope belongs to exactly that scope; a run of a scope sees the
    rows of its scope and those shared wider in its agent (a row of no user is seen by
    every user of the agent, a row of no thread in every thread).
    """

    agent_id: str
    user_id: str | None = None
    project_id: str | None = None
    thread_id: str | None = None

    def __post_init__(self) -> None:
        errors: dict[str, str] = {}
        for name in SCOPE_FIELDS:
            value = getattr(self, name)
            if value is None and name != "agent_id":
                continue
            if not storable_text(value) or not value.strip() or len(value) > MAX_SCOPE_ID_LENGTH:
                errors[f"scope.{name}"] = (
                    f"A {name.replace('_', ' ')} is a non-empty text of at most "
                    f"{MAX_SCOPE_ID_LENGTH} characters."
                )
        if errors:
            raise InvalidInput(errors)

    def as_fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in SCOPE_FIELDS}

    @classmethod
    def of(cls, row: Any) -> MemoryScope:
        """The exact scope of a row with the four scope columns (an item, an entity, a
        file version)."""
        return cls(**{name: getattr(row, name) for name in SCOPE_FIELDS})


def memory_scope_q(scope: MemoryScope, *, prefix: str = "") -> Q:
    """Rows a ``MemoryScope`` sees: its agent's, of its user or of no user, of its project
    or of none, of its thread or of none (a narrower scope sees what is shared wider)."""
    condition = Q(**{f"{prefix}agent_id": scope.agent_id})
    for name in SCOPE_FIELDS[1:]:
        value = getattr(scope, name)
        shared = Q(**{f"{prefix}{name}__isnull": True})
        condition &= shared if value is None else shared | Q(**{f"{prefix}{name}": value})
    return condition


def exact_scope_q(scope: MemoryScope, *, prefix: str = "") -> Q:
    """Rows of exactly ``scope``: neither those shared wider nor those of a narrower scope
    (a user's rows within an agent-wide scope, a thread's within a user's)."""
    condition = Q()
    for name, value in scope.as_fields().items():
        column = f"{prefix}{name}"
        condition &= Q(**{f"{column}__isnull": True}) if value is None else Q(**{column: value})
    return condition


def memory_scope_sql(scope: MemoryScope, *, table: str = "") -> tuple[list[str], list[Any]]:
    """``memory_scope_q`` as raw SQL conditions on the scope columns (of ``table``, an alias,
    where given), and their parameters."""
    column = f"{table}." if table else ""
    conditions = [f'{column}"agent_id" = %s']
    params: list[Any] = [scope.agent_id]
    for name in SCOPE_FIELDS[1:]:
        value = getattr(scope, name)
        if value is None:
            conditions.append(f'{column}"{name}" IS NULL')
        else:
            conditions.append(f'({column}"{name}" IS NULL OR {column}"{name}" = %s)')
            params.append(value)
    return conditions, params


def exact_scope_sql(scope: MemoryScope, *, table: str = "") -> tuple[list[str], list[Any]]:
    """The rows of exactly this scope, as raw SQL conditions on the scope columns (of
    ``table``, an alias such as ``i``, where given), and their parameters: the form the
    hot write path of items sends itself."""
    column = f"{table}." if table else ""
    conditions: list[str] = []
    params: list[Any] = []
    for name, value in scope.as_fields().items():
        if value is None:
            conditions.append(f'{column}"{name}" IS NULL')
        else:
            conditions.append(f'{column}"{name}" = %s')
            params.append(value)
    return conditions, params


class GrantedQuerySet(models.QuerySet[_M]):
    """A queryset whose rows carry an owner (agent, user): ``visible_to(grants)``.

    ``grants_agent_field`` and ``grants_user_field`` name where the owner is, for models
    that hold it through a relation (an entry's thread)."""

    grants_agent_field = "agent_id"
    grants_user_field = "user_id"

    def visible_to(self, grants: Grants) -> Self:
        """The rows ``grants`` reach (``grants_condition`` on the row's owner)."""
        condition = grants_condition(
            grants, agent_field=self.grants_agent_field, user_field=self.grants_user_field
        )
        return self.none() if condition is None else self.filter(condition)


def visible_rows_q(grants: Grants, *, include_shared: bool = False) -> Q | None:
    """The condition on rows with ``agent_id``, ``user_id`` and ``thread_id`` columns that
    may also be shared (embeddings, the keyword index's corpora of embeddings) of what
    ``grants`` reach: the one rule (``grants_condition``) on the rows' agent and user,
    plus, when ``include_shared``, the rows of no agent, user or thread. ``Q()`` for
    unrestricted grants, None when they reach nothing.

    A row of no agent that names a user or a thread is never shared: the id of a thread or
    user of someone else is not everybody's to see.
    """
    condition = grants_condition(grants, agent_field="agent_id", user_field="user_id")
    if grants.agent_ids is None or not include_shared:
        return condition
    shared = Q(agent_id__isnull=True, user_id__isnull=True, thread_id__isnull=True)
    return shared if condition is None else condition | shared


class SharedRowsQuerySet(GrantedQuerySet[_M]):
    """A queryset of rows that belong to an owner or to nobody (a shared document):
    ``visible_to(grants, include_shared=)`` by ``visible_rows_q``."""

    def visible_to(self, grants: Grants, *, include_shared: bool = False) -> Self:
        """The rows ``grants`` reach; with ``include_shared``, also the shared ones (of no
        agent, user or thread)."""
        condition = visible_rows_q(grants, include_shared=include_shared)
        return self.none() if condition is None else self.filter(condition)


class ScopedQuerySet(GrantedQuerySet[_M]):
    """A queryset of rows that belong to a ``MemoryScope`` (the four scope columns):
    ``visible_to(grants)`` and ``seen_from(memory_scope)``."""

    def seen_from(self, scope: MemoryScope) -> Self:
        """The rows a run of ``scope`` sees: its own and those shared wider in its agent."""
        return self.filter(memory_scope_q(scope))

    def of_exact_scope(self, scope: MemoryScope) -> Self:
        """The rows of exactly ``scope`` (``exact_scope_q``)."""
        return self.filter(exact_scope_q(scope))
