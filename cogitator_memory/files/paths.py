"""Paths of memory files: the one rule of what a path may be, for the memory tool, the
REST API and the admin alike. Every path a command names is checked here first.

A path is ``/memories`` or ``/memories/<name>/<name>...``, at most ``MAX_PATH_CHARACTERS``
characters as given. Repeated slashes, ``.`` parts and a trailing slash are dropped as a
file system would, and each name is put in Unicode's composed form (NFC), so a name
typed with a combining accent (``cafe`` and U+0301) and the same name with the accented
letter (``caf`` and U+00E9) are one file. Refused, with a message the model reads: ``..``
(a path that climbs is never needed to name a file under ``/memories``), control
characters (NUL among them), lone surrogates, the bidirectional controls that make a name
read otherwise than it is (``BIDI_CONTROLS``: embeddings, overrides, isolates and the
marks), a name that begins or ends with a space of any kind (``a.md `` would look like
``a.md`` and be another file; it is refused rather than trimmed, so nothing is written
under a name the caller did not give), and names longer than ``MAX_NAME_LENGTH``
characters. ``PATH_PATTERN`` is the same rule as the API's schema publishes it; nothing
here reads the database.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable

from cogitator_memory.exceptions import InvalidMemoryPath, MemoryFileReserved

ROOT = "/memories"
# What memory writes itself (the between-runs work): read-only for the memory tool and
# the API's file commands, which take ``MEMORY_RESERVED_PATHS`` as their ``reserved``.
PLAYBOOK_PATH = "/memories/playbook.md"
PLAYBOOK_DRAFT_PATH = "/memories/playbook.next.md"
OBSERVATIONS_DIRECTORY = "/memories/observations"
MEMORY_RESERVED_PATHS = (PLAYBOOK_PATH, PLAYBOOK_DRAFT_PATH, OBSERVATIONS_DIRECTORY)
MAX_NAME_LENGTH = 255
# Characters, as given: the API's schema can say it (maxLength), and 512 characters are
# within the 2048 bytes the index holds, whatever the characters (at most 4 bytes each).
MAX_PATH_CHARACTERS = 512
# The (scope, path, sequence) index must hold a path: a btree entry holds about 2.7 kB on
# PostgreSQL. Only a path whose composed form is longer than given (a few characters
# decompose under NFC) can reach it within MAX_PATH_CHARACTERS.
MAX_PATH_BYTES = 2048
# Arabic letter mark, left-to-right and right-to-left marks, the embeddings and overrides
# (U+202A-U+202E) and the isolates (U+2066-U+2069).
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
# The spaces a name may not begin or end with: what str.isspace() calls a space, control
# characters aside (refused anywhere).
SPACES = frozenset(
    " \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

# The rule as a pattern (Python's, and ECMA 262's once ``\Z`` is written ``$``), for the
# API's schema. It says all but what NFC changes: the length of a name is counted as given.
_CONTROL = r"\x00-\x1f\x7f-\x9f"
_BIDI = r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_SPACE = r" \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
PATH_PATTERN = (
    rf"^{ROOT}"
    r"(?![\s\S]*/\.\.(?:/|\Z))"  # no name is ..
    rf"(?![\s\S]*[^/]{{{MAX_NAME_LENGTH + 1}}})"  # no name is longer than 255
    rf"(?![\s\S]*/[{_SPACE}])"  # no name begins with a space
    rf"(?![\s\S]*[{_SPACE}](?:/|\Z))"  # nor ends with one
    rf"(?:/[^{_CONTROL}{_BIDI}]*)?\Z"
)
PATH_MESSAGE = (
    f"A path under /memories (or /memories itself) of at most {MAX_PATH_CHARACTERS} "
    "characters: no control or bidirectional control characters, no .., no name that "
    f"begins or ends with a space and no name longer than {MAX_NAME_LENGTH} characters."
)


def shown(path: object) -> str:
    """A path as an error message may show it: as given, unless it holds characters a
    message should not carry (then JSON-escaped), cut when very long."""
    text = path if isinstance(path, str) else repr(path)
    if any(unicodedata.category(char) in ("Cc", "Cs") or char in BIDI_CONTROLS for char in text):
        text = json.dumps(text)[1:-1]
    return text if len(text) <= 300 else text[:300] + "…"


def normalize(path: object) -> str:
    """The canonical form of a memory path; ``InvalidMemoryPath`` (with the text a model
    reads) for anything that is not a path under ``/memories`` (see the module)."""
    if not isinstance(path, str) or not path.startswith(ROOT):
        raise InvalidMemoryPath(f"Path must start with /memories, got: {shown(path)}")
    if len(path) > MAX_PATH_CHARACTERS:
        raise InvalidMemoryPath(
            f"Path {shown(path)} is longer than {MAX_PATH_CHARACTERS} characters; "
            "use a shorter path."
        )
    for char in path:
        category = unicodedata.category(char)
        if category == "Cc":
            raise InvalidMemoryPath(
                f"Path {shown(path)} contains a control character; "
                "memory paths hold printable characters only."
            )
        if category == "Cs":
            raise InvalidMemoryPath(f"Path {shown(path)} is not valid Unicode.")
        if char in BIDI_CONTROLS:
            raise InvalidMemoryPath(
                f"Path {shown(path)} contains a bidirectional control character "
                f"(U+{ord(char):04X}), which makes a name read otherwise than it is; "
                "memory paths cannot hold one."
            )
    rest = path[len(ROOT) :]
    if rest and not rest.startswith("/"):
        # "/memoriesX" names a sibling of /memories, not a file in it.
        raise InvalidMemoryPath(f"Path must start with /memories, got: {shown(path)}")
    names = [name for name in rest.split("/") if name not in ("", ".")]
    for name in names:
        if name == "..":
            raise InvalidMemoryPath(f"Path {shown(path)} would escape /memories directory")
        if name[0] in SPACES or name[-1] in SPACES:
            raise InvalidMemoryPath(
                f"Path {shown(path)} has a name that begins or ends with a space "
                f"({json.dumps(name)}); remove the space."
            )
        if len(name) > MAX_NAME_LENGTH:
            raise InvalidMemoryPath(
                f"Path {shown(path)} has a name longer than {MAX_NAME_LENGTH} characters."
            )
    canonical = "/".join([ROOT, *(unicodedata.normalize("NFC", name) for name in names)])
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
