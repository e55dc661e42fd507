"""The answers of the memory tool (``memory_20250818``), word for word.

A model trained on Anthropic's memory tool reads these texts; they follow the reference
implementation shipped with the ``anthropic`` SDK (``BetaLocalFilesystemMemoryTool``), so
a model sees the same answers whether its memory is a directory or this database.
"""

from __future__ import annotations

from collections.abc import Sequence

from cogitator_memory.exceptions import MemoryFileError

MAX_LINES = 999_999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))
# A file system shows a directory's own size, not its contents'; ext4 shows 4K.
DIRECTORY_SIZE = 4096


def file_size(size: int) -> str:
    """Bytes as the memory tool shows them: 0B, 512B, 1.5K, 2M."""
    if size <= 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    power = min((size.bit_length() - 1) // 10, len(units) - 1)
    scaled = size / 1024**power
    if scaled == int(scaled):
        return f"{int(scaled)}{units[power]}"
    return f"{scaled:.1f}{units[power]}"


def numbered(lines: Sequence[str], first: int) -> str:
    """Lines with their numbers, right-aligned in six columns and a tab."""
    return "\n".join(
        f"{str(first + offset).rjust(LINE_NUMBER_WIDTH)}\t{line}"
        for offset, line in enumerate(lines)
    )


def directory_view(path: str, entries: Sequence[tuple[int, str]]) -> str:
    """A directory and what lies in it two levels deep: ``entries`` are (size, path
    relative to ``path``, a directory ending in ``/``) in the order shown."""
    lines = [f"{file_size(DIRECTORY_SIZE)}\t{path}"]
    lines.extend(f"{file_size(size)}\t{path}/{relative}" for size, relative in entries)
    return (
        f"Here're the files and directories up to 2 levels deep in {path}, "
        "excluding hidden items:\n" + "\n".join(lines)
    )


def check_view_range(view_range: object) -> tuple[int, int] | None:
    """The (first, last) lines asked for, or None; ``MemoryFileError`` when the range is
    not two whole numbers."""
    if view_range is None:
        return None
    if (
        not isinstance(view_range, list | tuple)
        or len(view_range) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
    ):
        raise MemoryFileError(
            f"Invalid `view_range` parameter: {view_range!r:.80}. "
            "It should be a list of two integers, [start_line, end_line] (-1 for the end)."
        )
    return view_range[0], view_range[1]


def file_view(path: str, content: str, view_range: tuple[int, int] | None) -> str:
    """A file with line numbers, whole or the lines of ``view_range`` (end -1: to the
    end)."""
    lines = content.split("\n")
    if len(lines) > MAX_LINES:
        raise MemoryFileError(
            f"File {path} exceeds maximum line limit of 999,999 lines.", path=path
        )
    first = 1
    if view_range is not None:
        start = max(1, view_range[0]) - 1
        end = len(lines) if view_range[1] == -1 else view_range[1]
        lines = lines[start:end]
        first = start + 1
    return f"Here's the content of {path} with line numbers:\n" + numbered(lines, first)


def edit_snippet(new_content: str, changed_line_index: int) -> str:
    """The answer to a replacement: the changed line and two lines around it."""
    lines = new_content.split("\n")
    start = max(0, changed_line_index - 2)
    end = min(len(lines), changed_line_index + 3)
    return (
        "The memory file has been edited. Here is the snippet showing the change "
        "(with line numbers):\n" + numbered(lines[start:end], start + 1)
    )


def created(path: str) -> str:
    return f"File created successfully at: {path}"


def inserted(path: str) -> str:
    return f"The file {path} has been edited."


def deleted(path: str) -> str:
    return f"Successfully deleted {path}"


def renamed(old_path: str, new_path: str) -> str:
    return f"Successfully renamed {old_path} to {new_path}"


# --- refusals ----------------------------------------------------------------------------


def no_such_path(path: str) -> MemoryFileError:
    return MemoryFileError(
        f"The path {path} does not exist. Please provide a valid path.", path=path
    )


def no_such_path_short(path: str) -> MemoryFileError:
    """The shorter wording delete and rename use."""
    return MemoryFileError(f"The path {path} does not exist", path=path)


def not_a_file(path: str) -> MemoryFileError:
    return MemoryFileError(f"The path {path} is not a file.", path=path)


def already_exists(path: str) -> MemoryFileError:
    return MemoryFileError(f"File {path} already exists", path=path)


def destination_exists(path: str) -> MemoryFileError:
    return MemoryFileError(f"The destination {path} already exists", path=path)


def under_a_file(path: str, file_path: str) -> MemoryFileError:
    return MemoryFileError(
        f"Cannot write {path}: {file_path} is a file, not a directory.", path=path
    )


def into_itself(old_path: str, new_path: str) -> MemoryFileError:
    return MemoryFileError(f"Cannot move {old_path} into itself ({new_path}).", path=old_path)


def root_refused(action: str) -> MemoryFileError:
    return MemoryFileError(f"Cannot {action} the /memories directory itself", path="/memories")


def not_found_verbatim(old_str: str, path: str) -> MemoryFileError:
    return MemoryFileError(
        f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.",
        path=path,
    )


def several_found(
    old_str: str, line_numbers: Sequence[int], path: str, *, more: bool = False
) -> MemoryFileError:
    """The refusal of an old_str found more than once; ``more`` when ``line_numbers``
    holds only the first occurrences."""
    listed = ", ".join(map(str, line_numbers))
    if more:
        listed += f" and more (the first {len(line_numbers)} occurrences are listed)"
    return MemoryFileError(
        f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
        f"{listed}. Please ensure it is unique",
        path=path,
    )


def bad_insert_line(insert_line: object, line_count: int, path: str) -> MemoryFileError:
    return MemoryFileError(
        f"Invalid `insert_line` parameter: {insert_line}. "
        f"It should be within the range [0, {line_count}].",
        path=path,
    )


def bad_text(name: str, problem: str) -> MemoryFileError:
    return MemoryFileError(f"Invalid `{name}` parameter: {problem}")


def unknown_command(command: object) -> MemoryFileError:
    return MemoryFileError(
        f"Unknown command: {command!r:.80}. Use one of: view, create, str_replace, insert, "
        "delete, rename."
    )


def missing_parameter(command: str, name: str) -> MemoryFileError:
    return MemoryFileError(f"Parameter `{name}` is required for command: {command}")
