"""Paths of memory files: every path the memory tool names is checked here first.

A path is ``/memories`` or ``/memories/<name>/<name>...``: repeated slashes, ``.`` parts
and a trailing slash are dropped as a file system would; ``..`` is refused (a path that
climbs is never needed to name a file under ``/memories``), and so are control
characters (NUL among them), lone surrogates, names longer than 255 characters and paths
longer than ``MAX_PATH_BYTES``. Nothing here reads the database.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable

from cogitator_memory.exceptions import InvalidMemoryPath, MemoryFileReserved

ROOT = "/memories"
MAX_NAME_LENGTH = 255
# The (scope, path, sequence) index must hold a path: a btree entry holds about 2.7 kB on
# PostgreSQL.
MAX_PATH_BYTES = 2048


def shown(path: object) -> str:
    """A path as an error message may show it: as given, unless it holds characters a
    message should not carry (then JSON-escaped), cut when very long."""
    text = path if isinstance(path, str) else repr(path)
    if any(unicodedata.category(char) in ("Cc", "Cs") for char in text):
        text = json.dumps(text)[1:-1]
    return text if len(text) <= 300 else text[:300] + "…"


def normalize(path: object) -> str:
    """The canonical form of a memory path; ``InvalidMemoryPath`` (with the text a model
    reads) for anything that is not a path under ``/memories``."""
    if not isinstance(path, str) or not path.startswith(ROOT):
        raise InvalidMemoryPath(f"Path must start with /memories, got: {shown(path)}")
    for char in path:
        category = unicodedata.category(char)
        if category == "Cc":
            raise InvalidMemoryPath(
                f"Path {shown(path)} contains a control character; "
                "memory paths hold printable characters only."
            )
        if category == "Cs":
            raise InvalidMemoryPath(f"Path {shown(path)} is not valid Unicode.")
    rest = path[len(ROOT) :]
    if rest and not rest.startswith("/"):
        # "/memoriesX" names a sibling of /memories, not a file in it.
        raise InvalidMemoryPath(f"Path must start with /memories, got: {shown(path)}")
    names = [name for name in rest.split("/") if name not in ("", ".")]
    for name in names:
        if name == "..":
            raise InvalidMemoryPath(f"Path {shown(path)} would escape /memories directory")
        if len(name) > MAX_NAME_LENGTH:
            raise InvalidMemoryPath(
                f"Path {shown(path)} has a name longer than {MAX_NAME_LENGTH} characters."
            )
    canonical = "/".join([ROOT, *names])
    if len(canonical.encode("utf-8")) > MAX_PATH_BYTES:
        raise InvalidMemoryPath(
            f"Path {shown(path)} is longer than {MAX_PATH_BYTES} bytes; use a shorter path."
        )
    return canonical


def parents(path: str) -> list[str]:
    """The directories above ``path``, nearest first, ``/memories`` excluded."""
    found: list[str] = []
    while True:
        path = path.rsplit("/", 1)[0]
        if path == ROOT or not path.startswith(ROOT + "/"):
            return found
        found.append(path)


def is_at_or_under(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or lies under it (case counts)."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def moved(path: str, old: str, new: str) -> str:
    """``path`` (at or under ``old``) as it is after ``old`` moves to ``new``."""
    return new + path[len(old) :]


def reserved_paths(paths: Iterable[str]) -> tuple[str, ...]:
    """The canonical form of each reserved path (a trailing slash, naming a directory,
    changes nothing: a reserved path covers everything under it)."""
    return tuple(normalize(path) for path in paths)


def check_not_reserved(paths: Iterable[str], reserved: Iterable[str]) -> None:
    """``MemoryFileReserved`` when a path changed is, or lies under, a reserved path, or
    a directory changed holds one."""
    reserved = list(reserved)
    for path in paths:
        for kept in reserved:
            if is_at_or_under(path, kept):
                raise MemoryFileReserved(path)
            if is_at_or_under(kept, path):
                raise MemoryFileReserved(kept)
