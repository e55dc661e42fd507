"""System checks of the ``COGITATOR_MEMORY`` setting, run by ``manage.py check``."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register

from cogitator_memory.conf import DEFAULTS, SETTING_TYPES, SETTINGS_NAME


@register(Tags.compatibility)
def check_memory_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Report unknown names, wrong types and bad values in ``COGITATOR_MEMORY``."""
    value = getattr(settings, SETTINGS_NAME, None)
    if value is None:
        return []
    if not isinstance(value, dict):
        return [
            Error(
                f"{SETTINGS_NAME} must be a dict, not {type(value).__name__}.",
                hint="Set COGITATOR_MEMORY = {...} in your settings, or remove it.",
                id="cogitator_memory.E000",
            )
        ]
    errors: list[CheckMessage] = []
    for name, given in value.items():
        if name not in DEFAULTS:
            errors.append(
                Error(
                    f"{SETTINGS_NAME} has an unknown key {name!r}.",
                    hint=f"Known keys: {', '.join(sorted(DEFAULTS))}.",
                    id="cogitator_memory.E001",
                )
            )
            continue
        expected = SETTING_TYPES[name]
        if isinstance(given, bool) or not isinstance(given, expected):
            wanted = (
                f"an {expected.__name__}"
                if expected is int
                else (f"a {expected.__name__}" if isinstance(expected, type) else "a number")
            )
            errors.append(
                Error(
                    f"{SETTINGS_NAME}[{name!r}] must be {wanted}, not {type(given).__name__}.",
                    id="cogitator_memory.E002",
                )
            )
            continue
        default = DEFAULTS[name]
        if isinstance(default, dict) and isinstance(given, dict):
            for key in given:
                if key not in default:
                    errors.append(
                        Error(
                            f"{SETTINGS_NAME}[{name!r}] has an unknown key {key!r}.",
                            hint=f"Known keys: {', '.join(sorted(default))}.",
                            id="cogitator_memory.E003",
                        )
                    )
        elif isinstance(given, int | float) and given <= 0:
            errors.append(
                Error(
                    f"{SETTINGS_NAME}[{name!r}] must be greater than 0, not {given!r}.",
                    id="cogitator_memory.E004",
                )
            )
    merged_default = value.get("LIST_THREADS_DEFAULT_LIMIT", DEFAULTS["LIST_THREADS_DEFAULT_LIMIT"])
    merged_max = value.get("LIST_THREADS_MAX_LIMIT", DEFAULTS["LIST_THREADS_MAX_LIMIT"])
    if (
        isinstance(merged_default, int)
        and isinstance(merged_max, int)
        and merged_default > merged_max
    ):
        errors.append(
            Error(
                f"{SETTINGS_NAME}['LIST_THREADS_DEFAULT_LIMIT'] ({merged_default}) is larger "
                f"than LIST_THREADS_MAX_LIMIT ({merged_max}).",
                id="cogitator_memory.E005",
            )
        )
    return errors
