"""Who may call the API at all: a logged-in user or a valid API key."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from cogitator_memory.api.grants import request_api_key


class IsPrincipal(BasePermission):
    """An authenticated, active user, or a request authenticated by an API key. What the
    principal may see is decided by its grants (``api/scope.py``), not here."""

    message = "Log in, send a token, or send an API key."

    def has_permission(self, request: Request, view: Any) -> bool:
        if request_api_key(request) is not None:
            return True
        user = request.user
        return bool(user and user.is_authenticated and user.is_active)
