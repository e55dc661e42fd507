"""The scope of a principal, from its grants."""

from __future__ import annotations

from typing import Any

from cogitator_memory.access.models import Grant
from cogitator_memory.grants import Grants


def _grants_of_rows(grants: Any) -> Grants:
    agent_ids: set[str] = set()
    user_ids: dict[str, frozenset[str] | None] = {}
    for agent_id, users in grants.values_list("agent_id", "user_ids"):
        agent_ids.add(agent_id)
        if users is None or (agent_id in user_ids and user_ids[agent_id] is None):
            user_ids[agent_id] = None
        else:
            user_ids[agent_id] = (user_ids.get(agent_id) or frozenset()) | frozenset(users)
    return Grants(agent_ids=frozenset(agent_ids), user_ids=user_ids)


def grants_for_user(user: Any) -> Grants:
    """Every agent for an active superuser; the user's grants otherwise; nothing for an
    inactive or anonymous user."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return Grants.nothing()
    if user.is_superuser:
        return Grants.everything()
    return _grants_of_rows(Grant.objects.for_user(user.pk))


def grants_for_api_key(api_key: Any) -> Grants:
    """The grants of an API key; nothing for a revoked or expired key."""
    if api_key is None or api_key.revoked or api_key.has_expired:
        return Grants.nothing()
    return _grants_of_rows(Grant.objects.for_api_key(api_key.pk))
