"""What a caller may change: the write rules, in one place.

Every writing service takes an optional ``scope``. Trusted code passes none and may change
anything; the REST API passes the scope of the authenticated principal, the admin the
scope of the staff user, and a task the scope it was given. The services call these
functions inside their transaction, after locking what they change, so a check and the
write it allows see the same row. The rules:

- A thread the caller cannot see answers as a missing one (``ThreadNotFound``,
  ``EntryNotFound``), so ids of others cannot be told from ids never used.
- A change that would leave a thread where the caller's grants do not reach (an agent it
  is not granted; under a grant that names users, a user it is not granted, or none) is
  refused with ``NoGrant`` (403), before anything is looked up by id.
- A new thread with a client-chosen id that a thread the caller cannot see already holds
  is refused with ``ThreadIdUnavailable`` (409): ids share one namespace, so a caller that
  holds a grant learns that such an id is taken, and nothing else about it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cogitator_memory.exceptions import NoGrant
from cogitator_memory.grants import USER_ID_KEY, Grants


def require_write(
    grants: Grants | None,
    agent_id: str,
    user_id: str | None,
    *,
    user_field: str = f"metadata.{USER_ID_KEY}",
) -> None:
    """Refuse (``NoGrant``) putting a thread of ``agent_id`` owned by ``user_id`` where
    ``grants`` do not reach; trusted code (``grants`` None) may do anything. ``user_field``:
    where the request gave the user, named by the refusal (a thread's ``metadata.userId``
    by default)."""
    if grants is not None and not grants.allows(agent_id, user_id):
        raise NoGrant(
            agent_id,
            user_id,
            agent_granted=grants.allows_agent(agent_id),
            user_field=user_field,
        )


def require_create(grants: Grants | None, agent_id: str, metadata: Mapping[str, Any]) -> None:
    """The check made before an explicit id is looked up: the caller must be granted the
    agent, and the user the request names, if it names one. An upsert that names no user
    is checked again once the stored thread's user is known (``require_write``)."""
    if grants is None:
        return
    user_id = metadata.get(USER_ID_KEY)
    if not grants.allows_agent(agent_id) or (
        isinstance(user_id, str) and not grants.allows(agent_id, user_id)
    ):
        raise NoGrant(
            agent_id,
            user_id if isinstance(user_id, str) else None,
            agent_granted=grants.allows_agent(agent_id),
        )


def can_see(grants: Grants | None, agent_id: str, user_id: str | None) -> bool:
    """Whether the caller may see (and so change) a thread of this agent and user."""
    return grants is None or grants.allows(agent_id, user_id)


def require_read(
    grants: Grants | None, agent_id: str, user_id: str | None, *, user_field: str = "user_id"
) -> None:
    """Refuse (``NoGrant``) reading the memory of ``agent_id`` and ``user_id`` (items,
    files, recall) named by id where ``grants`` do not reach: the same rule as a write,
    since a grant is for an agent's memory of its users, to read and to change.
    ``user_field``: where the request gave the user (``user_id`` by default)."""
    require_write(grants, agent_id, user_id, user_field=user_field)
