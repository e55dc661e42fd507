"""The scope of the principal a request acts for."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework_api_key.models import APIKey

from cogitator_memory.access.selectors import scope_for_api_key, scope_for_user
from cogitator_memory.scope import Scope


def request_scope(request: Request) -> Scope:
    """The scope of the request's principal: its API key's grants, or its user's.

    Cached on the request: one query per request, however many objects it touches.
    """
    cached = getattr(request, "_memory_scope", None)
    if isinstance(cached, Scope):
        return cached
    if isinstance(request.auth, APIKey):
        scope = scope_for_api_key(request.auth)
    else:
        scope = scope_for_user(request.user)
    request._memory_scope = scope  # type: ignore[attr-defined]
    return scope


def principal_key(request: Request) -> str | None:
    """A stable id of the principal, for throttling: ``user:<pk>`` or ``key:<id>``."""
    if isinstance(request.auth, APIKey):
        return f"key:{request.auth.pk}"
    if request.user and request.user.is_authenticated:
        return f"user:{request.user.pk}"
    return None
