"""The one rule of a whole number given by a caller or a setting, and the one check of a
limit, page size or batch size.

``is_whole_number`` is the predicate every such check uses (a boolean is not a number);
``check_limit`` raises the usual ``InvalidInput``; ``page_limit`` is the size of one page
of a list (threads, entries, items, sessions): the default for None, within the
configured maximum.
"""

from __future__ import annotations

from typing import Any

from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import InvalidInput

__all__ = ["check_limit", "is_whole_number", "page_limit", "whole_number_bounds"]


def is_whole_number(value: Any, *, minimum: int = 0, maximum: int | None = None) -> bool:
    """Whether ``value`` is an int (not a boolean) from ``minimum`` to ``maximum``."""
    return (
        not isinstance(value, bool)
        and isinstance(value, int)
        and value >= minimum
        and (maximum is None or value <= maximum)
    )


def whole_number_bounds(minimum: int, maximum: int | None = None) -> str:
    """The bounds as an error message says them: "from 1 to 500", "of 0 or more"."""
    return f"from {minimum} to {maximum}" if maximum is not None else f"of {minimum} or more"


def check_limit(
    value: Any, *, field: str = "limit", minimum: int = 1, maximum: int | None = None
) -> int:
    """``value`` if it is a whole number (not a boolean) from ``minimum`` to ``maximum``;
    ``InvalidInput`` on ``field`` otherwise."""
    if not is_whole_number(value, minimum=minimum, maximum=maximum):
        bounds = whole_number_bounds(minimum, maximum)
        raise InvalidInput({field: f"{field} must be a whole number {bounds}."})
    return int(value)


def page_limit(limit: Any) -> int:
    """The size of one page of a list: ``LIST_THREADS_DEFAULT_LIMIT`` for None, else
    ``limit`` from 1 to ``LIST_THREADS_MAX_LIMIT``; ``InvalidInput`` otherwise."""
    if limit is None:
        return int(memory_settings.LIST_THREADS_DEFAULT_LIMIT)
    return check_limit(limit, maximum=int(memory_settings.LIST_THREADS_MAX_LIMIT))
