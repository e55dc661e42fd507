"""The principal a request acts for, and its scope.

djangorestframework-api-key's model is imported when a request is read, not when the API's
modules are: a project that mounts the API's URLs without that app installed then gets
``manage.py check``'s error naming the app (``cogitator_memory.E008``), not a traceback
from importing the URLconf (Django refuses a model of an app that is not installed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.request import Request

from cogitator_memory.access.selectors import grants_for_api_key, grants_for_user
from cogitator_memory.grants import Grants

if TYPE_CHECKING:
    from rest_framework_api_key.models import APIKey


def request_api_key(request: Request) -> APIKey | None:
    """The API key the request authenticated with, if it did (None for a user)."""
    from rest_framework_api_key.models import APIKey

    auth = request.auth
    return auth if isinstance(auth, APIKey) else None


def request_grants(request: Request) -> Grants:
    """The scope of the request's principal: its API key's grants, or its user's.

    Cached on the request: one query per request, however many objects it touches.
    """
    cached = getattr(request, "_cogitator_grants", None)
    if isinstance(cached, Grants):
        return cached
    api_key = request_api_key(request)
    grants = grants_for_user(request.user) if api_key is None else grants_for_api_key(api_key)
    request._cogitator_grants = grants  # type: ignore[attr-defined]
    return grants


def principal_key(request: Request) -> str | None:
    """A stable id of the principal, for throttling: ``user:<pk>`` or ``key:<id>``."""
    api_key = request_api_key(request)
    if api_key is not None:
        return f"key:{api_key.pk}"
    if request.user and request.user.is_authenticated:
        return f"user:{request.user.pk}"
    return None
