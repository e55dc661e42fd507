"""The bounds of memory files, and so of what one memory-tool command may cost.

A file holds at most ``MAX_FILE_BYTES`` and one change writes at most ``MAX_CHANGE_BYTES``
(a rename of a directory writes every file in it again). A text parameter of a command
(``file_text``, ``old_str``, ``new_str``, ``insert_text``, the text of a whole-file write)
longer than a file may be is refused before anything is read: it could only make a file
too large, or find nothing. With these, every command reads at most one file (a rename at
most ``MAX_CHANGE_BYTES`` of files) and its work is linear in what it reads; a refusal of
a ``str_replace`` lists the lines of at most ``MAX_REPORTED_OCCURRENCES`` occurrences, and
a ``view`` answers the file with at most seven characters more a line.

Each limit is refused with ``MemoryFileTooLarge``: an invalid input (the API's 400, naming
the parameter) and a refusal the model reads as the tool result.
"""

from __future__ import annotations

from collections.abc import Mapping

from cogitator_memory.exceptions import MemoryFileTooLarge

__all__ = [
    "MAX_CHANGE_BYTES",
    "MAX_FILE_BYTES",
    "MAX_REPORTED_OCCURRENCES",
    "TEXT_PARAMETERS",
    "byte_size",
    "check_change_size",
    "check_file_size",
    "check_text_parameter",
    "check_text_parameters",
]

MAX_FILE_BYTES = 1024 * 1024
MAX_CHANGE_BYTES = 8 * 1024 * 1024
# The lines a refusal of a str_replace lists, as the memory tool lists them (one per
# occurrence, overlapping ones included); past this many it says there are more. A
# one-character old_str would otherwise list every line of the file, a few MB of answer.
MAX_REPORTED_OCCURRENCES = 100
# The parameters of the memory tool that hold texts to write or to look for.
TEXT_PARAMETERS = ("file_text", "old_str", "new_str", "insert_text")


def byte_size(content: str) -> int:
    """The size of ``content`` in bytes, as UTF-8."""
    return len(content.encode("utf-8"))


def _mib(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB ({limit} bytes)"


def check_text_parameter(name: str, value: object, *, field: str | None = None) -> None:
    """``MemoryFileTooLarge`` when ``value``, the text parameter ``name``, is longer than
    a file may be; its ``errors`` name ``field`` (``name`` by default)."""
    # A character is at most four bytes: most texts are passed without encoding them.
    if not isinstance(value, str) or len(value) * 4 <= MAX_FILE_BYTES:
        return
    size = byte_size(value)
    if size > MAX_FILE_BYTES:
        raise MemoryFileTooLarge(
            f"Invalid `{name}` parameter: it holds {size} bytes; a memory file holds at most "
            f"{_mib(MAX_FILE_BYTES)}. Nothing was changed.",
            field=field or name,
            size=size,
            limit=MAX_FILE_BYTES,
        )


def check_text_parameters(command: Mapping[str, object], *, prefix: str = "") -> None:
    """``check_text_parameter`` on each text parameter of a memory-tool command, its
    ``errors`` naming ``prefix`` and the parameter (``input.new_str`` in the API)."""
    for name in TEXT_PARAMETERS:
        check_text_parameter(name, command.get(name), field=prefix + name)


def check_file_size(path: str, content: str, *, field: str) -> int:
    """The size of ``content`` in bytes; ``MemoryFileTooLarge`` (on ``field``, the
    parameter that made it) when a file at ``path`` cannot hold it."""
    size = byte_size(content)
    if size > MAX_FILE_BYTES:
        raise MemoryFileTooLarge(
            f"The file {path} would hold {size} bytes; a memory file holds at most "
            f"{_mib(MAX_FILE_BYTES)}. Nothing was changed.",
            field=field,
            size=size,
            limit=MAX_FILE_BYTES,
            path=path,
        )
    return size


def check_change_size(size: int, *, field: str) -> None:
    """``MemoryFileTooLarge`` (on ``field``) when one change would write ``size`` bytes,
    more than ``MAX_CHANGE_BYTES``."""
    if size > MAX_CHANGE_BYTES:
        raise MemoryFileTooLarge(
            f"This change would write {size} bytes; one change writes at most "
            f"{_mib(MAX_CHANGE_BYTES)}. Nothing was changed.",
            field=field,
            size=size,
            limit=MAX_CHANGE_BYTES,
        )
