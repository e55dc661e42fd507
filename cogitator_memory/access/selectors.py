"""The scope of a principal, from its grants."""

from __future__ import annotations

from typing import Any

from cogitator_memory.access.models import Grant
from cogitator_memory.scope import Scope


def _scope_from_grants(grants: Any) -> Scope:
    agent_ids: set[str] = set()
    user_ids: dict[str, frozenset[str] | None] = {}
    for agent_id, users in grants.values_list("agent_id", "user_ids"):
        agent_ids.add(agent_id)
        if users is None or (agent_id in user_ids and user_ids[agent_id] is None):
            user_ids[agent_id] = None
        else:
            user_ids[agent_id] = (user_ids.get(agent_id) or frozenset()) | frozenset(users)
    return Scope(agent_ids=frozenset(agent_ids), user_ids=user_ids)


def scope_for_user(user: Any) -> Scope:
    """Every agent for an active superuser; the user's grants otherwise; nothing for an
    inactive or anonymous user."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return Scope.nothing()
    if user.is_superuser:
        return Scope.everything()
    return _scope_from_grants(Grant.objects.for_user(user.pk))


def scope_for_api_key(api_key: Any) -> Scope:
    """The grants of an API key; nothing for a revoked or expired key."""
    if api_key is None or api_key.revoked or api_key.has_expired:
        return Scope.nothing()
    return _scope_from_grants(Grant.objects.for_api_key(api_key.pk))
