"""Who may export a user's memory: a person holding ``cogitator_memory.export_user_memory``.

An export holds everything memory keeps of a person, so it is asked for by a person: an
active user holding the permission (a superuser holds every one), within their grants. An
API key, which acts for a program and holds no Django permission, is refused. Trusted
automation (a job that answers access requests, say) runs ``manage.py export_user`` or
calls ``export.services.export_user`` in the project's code, where it acts as trusted code.
"""

from __future__ import annotations

from typing import Any

from cogitator_memory.exceptions import ExportRefused

__all__ = ["EXPORT_PERMISSION", "may_export", "require_export_permission"]

# Declared on Thread's Meta (threads/models.py).
EXPORT_PERMISSION = "cogitator_memory.export_user_memory"


def may_export(user: Any) -> bool:
    """Whether ``user`` is an active person holding ``EXPORT_PERMISSION``."""
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and getattr(user, "is_active", False)
        and user.has_perm(EXPORT_PERMISSION)
    )


def require_export_permission(user: Any, *, api_key: object | None = None) -> None:
    """Raise ``ExportRefused`` unless the caller may export: never an API key (``api_key``:
    the key a request authenticated with, if any), only a user holding the permission."""
    if api_key is not None:
        raise ExportRefused(
            "Exports are made by people: an API key cannot export a user's memory. "
            "Trusted automation runs manage.py export_user.",
            permission=EXPORT_PERMISSION,
        )
    if not may_export(user):
        raise ExportRefused(
            f"You need the permission {EXPORT_PERMISSION} to export a user's memory.",
            permission=EXPORT_PERMISSION,
        )
