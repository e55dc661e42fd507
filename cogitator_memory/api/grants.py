"""The scope of the principal a request acts for."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework_api_key.models import APIKey

from cogitator_memory.access.selectors import grants_for_api_key, grants_for_user
from cogitator_memory.grants import Grants


def request_grants(request: Request) -> Grants:
    """The scope of the request's principal: its API key's grants, or its user's.

    Cached on the request: one query per request, however many objects it touches.
    """
    cached = getattr(request, "_cogitator_grants", None)
    if isinstance(cached, Grants):
        return cached
    if isinstance(request.auth, APIKey):
        grants = grants_for_api_key(request.auth)
    else:
        grants = grants_for_user(request.user)
    request._cogitator_grants = grants  # type: ignore[attr-defined]
    return grants


def principal_key(request: Request) -> str | None:
    """A stable id of the principal, for throttling: ``user:<pk>`` or ``key:<id>``."""
    if isinstance(request.auth, APIKey):
        return f"key:{request.auth.pk}"
    if request.user and request.user.is_authenticated:
        return f"user:{request.user.pk}"
    return None
