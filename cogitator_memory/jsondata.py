"""What may be stored as JSON or text: the same on PostgreSQL and SQLite.

PostgreSQL's jsonb and text refuse NUL characters and lone surrogates, which SQLite stores
and then fails to read back; NaN and infinities are not JSON at all; very deep nesting
exhausts Python's recursion. Checking input against these rules first turns each of them
into a clear error on both databases instead of a database error (or a poisoned row).
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 64


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None."""
    if "\x00" in text:
        return "Texts cannot contain the NUL character."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "Texts must be valid Unicode (no lone surrogates)."
    return None


def json_problem(value: Any, *, depth: int = 0) -> str | None:
    """Why ``value`` cannot be stored as JSON, or None."""
    if depth > MAX_DEPTH:
        return f"JSON nested deeper than {MAX_DEPTH} levels."
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "Numbers must be finite (no NaN or infinity)."
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, list):
        for item in value:
            problem = json_problem(item, depth=depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return "Object keys must be texts."
            problem = text_problem(key) or json_problem(item, depth=depth + 1)
            if problem:
                return problem
        return None
    return f"{type(value).__name__} is not JSON data."
