"""The one check of a limit, page size or batch size given by a caller."""

from __future__ import annotations

from typing import Any

from cogitator_memory.exceptions import InvalidInput


def check_limit(
    value: Any, *, field: str = "limit", minimum: int = 1, maximum: int | None = None
) -> int:
    """``value`` if it is a whole number (not a boolean) from ``minimum`` to ``maximum``;
    ``InvalidInput`` on ``field`` otherwise."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        bounds = f"from {minimum} to {maximum}" if maximum is not None else f"of {minimum} or more"
        raise InvalidInput({field: f"{field} must be a whole number {bounds}."})
    return value
