"""The commands of the memory tool, as changes to make on what an access sees.

Each command reads through a ``Reader`` and answers an ``Outcome``: the text the model
reads, the versions to write (none for ``view``) and the versions it showed. Nothing here
writes; ``services.MemoryFiles`` runs an outcome's writes in one transaction and makes
the command again when another writer got there first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cogitator_memory.exceptions import MemoryFileError
from cogitator_memory.files import texts
from cogitator_memory.files.limits import (
    MAX_REPORTED_OCCURRENCES,
    check_change_size,
    check_text_parameter,
)
from cogitator_memory.files.paths import ROOT, normalize, parents
from cogitator_memory.files.store import FileState, Reader, Write, sha256_of
from cogitator_memory.jsondata import text_problem

COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
# Commands that add paths: they run under the agent's path lock (store.lock_paths_of_agent).
ADDS_PATHS = frozenset({"create", "rename"})


@dataclass
class Outcome:
    answer: str
    writes: list[Write] = field(default_factory=list)
    # (path, sha256) of each version shown; the written ones are heard once kept.
    shown: list[tuple[str, str | None]] = field(default_factory=list)
    # (path, state the change was made on) for each path the change replaces or removes.
    changed: list[tuple[str, FileState | None]] = field(default_factory=list)


def _text(command: Mapping[str, Any], name: str, *, required: bool = True) -> str:
    value = command.get(name)
    if value is None:
        if required:
            raise texts.missing_parameter(str(command.get("command")), name)
        return ""
    if not isinstance(value, str):
        raise texts.bad_text(name, f"a text is expected, not {type(value).__name__}.")
    check_text_parameter(name, value)
    problem = text_problem(value)
    if problem is not None:
        raise texts.bad_text(name, problem)
    return value


def _path(command: Mapping[str, Any], name: str = "path") -> str:
    if command.get(name) is None:
        raise texts.missing_parameter(str(command.get("command")), name)
    return normalize(command[name])


def _file(reader: Reader, path: str) -> FileState:
    """The file at ``path``: refusals as the memory tool words them."""
    state = reader.state(path)
    if state is not None and state.exists:
        return state
    if path == ROOT or _has_files_under(reader, path):
        raise texts.not_a_file(path)
    raise texts.no_such_path(path)


def _files_under(reader: Reader, directory: str) -> dict[str, FileState]:
    return {path: state for path, state in reader.states(under=[directory]).items() if state.exists}


def _has_files_under(reader: Reader, directory: str) -> bool:
    return bool(_files_under(reader, directory))


def file_above(reader: Reader, path: str) -> str | None:
    """The nearest directory of ``path`` that is a file, if any."""
    above = parents(path)
    if not above:
        return None
    states = reader.states(at=above)
    for parent in above:
        state = states.get(parent)
        if state is not None and state.exists:
            return parent
    return None


# --- view --------------------------------------------------------------------------------


def view(reader: Reader, command: Mapping[str, Any]) -> Outcome:
    path = _path(command)
    view_range = texts.check_view_range(command.get("view_range"))
    state = None if path == ROOT else reader.state(path)
    if state is not None and state.exists:
        content = reader.content(state)
        return Outcome(
            answer=texts.file_view(path, content, view_range), shown=[(path, state.sha256)]
        )
    files = _files_under(reader, path)
    if path != ROOT and not files:
        raise texts.no_such_path(path)
    return Outcome(answer=texts.directory_view(path, _two_levels(path, files)))


def _two_levels(directory: str, files: Mapping[str, FileState]) -> list[tuple[int, str]]:
    """What a directory view lists: names one and two levels down, each directory before
    what it holds, names in order, hidden names (a leading dot) and what they hold left
    out."""
    tree: dict[str, Any] = {}
    for path, state in files.items():
        names = path[len(directory) + 1 :].split("/")
        if any(name.startswith(".") for name in names[:2]):
            continue
        node = tree
        for name in names[:-1]:
            child = node.setdefault(name, {})
            if not isinstance(child, dict):
                break  # a file under a file cannot be written; never shown if found
            node = child
        else:
            node.setdefault(names[-1], state.size)
    listed: list[tuple[int, str]] = []

    def walk(node: dict[str, Any], prefix: str, depth: int) -> None:
        for name in sorted(node):
            child = node[name]
            if isinstance(child, dict):
                listed.append((texts.DIRECTORY_SIZE, f"{prefix}{name}/"))
                if depth < 2:
                    walk(child, f"{prefix}{name}/", depth + 1)
            else:
                listed.append((child, f"{prefix}{name}"))

    walk(tree, "", 1)
    return listed


# --- create ------------------------------------------------------------------------------


def create(reader: Reader, command: Mapping[str, Any]) -> Outcome:
    path = _path(command)
    text = _text(command, "file_text")
    if path == ROOT:
        raise texts.already_exists(path)
    state = reader.state(path)
    if (state is not None and state.exists) or _has_files_under(reader, path):
        raise texts.already_exists(path)
    above = file_above(reader, path)
    if above is not None:
        raise texts.under_a_file(path, above)
    return Outcome(
        answer=texts.created(path),
        writes=[Write(path=path, content=text, base=state)],
        changed=[(path, state)],
    )


# --- str_replace -------------------------------------------------------------------------


def str_replace(reader: Reader, command: Mapping[str, Any]) -> Outcome:
    path = _path(command)
    old = _text(command, "old_str")
    new = _text(command, "new_str", required=False)
    state = _file(reader, path)
    content = reader.content(state)
    position = content.find(old) if old else -1
    if position == -1:
        raise texts.not_found_verbatim(old, path)
    # The memory tool counts occurrences that do not overlap: a second one starts past
    # the end of the first.
    if content.find(old, position + len(old)) != -1:
        lines, more = occurrence_lines(content, old, position, MAX_REPORTED_OCCURRENCES)
        raise texts.several_found(old, lines, path, more=more)
    new_content = content[:position] + new + content[position + len(old) :]
    return Outcome(
        answer=texts.edit_snippet(new_content, content.count("\n", 0, position)),
        writes=[Write(path=path, content=new_content, base=state)],
        changed=[(path, state)],
    )


def occurrence_lines(content: str, old: str, first: int, limit: int) -> tuple[list[int], bool]:
    """The line of each occurrence of ``old`` in ``content`` from ``first`` on, as the
    memory tool lists them (each next one searched from one character after the last, so
    overlapping occurrences count), at most ``limit`` of them, and whether there are more.

    One pass: each search starts where the last match was, and the line numbers are
    counted on from the last match, so the file is read about once whatever the count.
    """
    lines: list[int] = []
    line = 1
    counted_to = 0
    position = first
    while position != -1:
        if len(lines) == limit:
            return lines, True
        line += content.count("\n", counted_to, position)
        counted_to = position
        lines.append(line)
        position = content.find(old, position + 1)
    return lines, False


# --- insert ------------------------------------------------------------------------------


def insert(reader: Reader, command: Mapping[str, Any]) -> Outcome:
    path = _path(command)
    line = command.get("insert_line")
    text = _text(command, "insert_text")
    if line is None:
        raise texts.missing_parameter("insert", "insert_line")
    state = _file(reader, path)
    content = reader.content(state)
    # Lines split on LF only (a CR stays with its line), without the empty tail a
    # final newline leaves.
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not isinstance(line, int) or isinstance(line, bool) or not 0 <= line <= len(lines):
        raise texts.bad_insert_line(line, len(lines), path)
    lines.insert(line, text.rstrip("\n"))
    new_content = "\n".join(lines)
    if not new_content.endswith("\n"):
        new_content += "\n"
    return Outcome(
        answer=texts.inserted(path),
        writes=[Write(path=path, content=new_content, base=state)],
        changed=[(path, state)],
    )


# --- delete ------------------------------------------------------------------------------


def delete(reader: Reader, command: Mapping[str, Any]) -> Outcome:
    path = _path(command)
    if path == ROOT:
        raise texts.root_refused("delete")
    state = reader.state(path)
    if state is not None and state.exists:
        gone = {path: state}
    else:
        gone = _files_under(reader, path)
        if not gone:
            raise texts.no_such_path_short(path)
    return Outcome(
        answer=texts.deleted(path),
        writes=[Write(path=p, content=None, base=s) for p, s in sorted(gone.items())],
        changed=sorted(gone.items()),
    )


# --- rename ------------------------------------------------------------------------------


def rename(reader: Reader, command: Mapping[str, Any]) -> Outcome:
    old_path = _path(command, "old_path")
    new_path = _path(command, "new_path")
    if old_path == ROOT:
        raise texts.root_refused("rename")
    if new_path == ROOT:
        raise texts.destination_exists(new_path)
    state = reader.state(old_path)
    if state is not None and state.exists:
        moving = {old_path: state}
    else:
        moving = _files_under(reader, old_path)
        if not moving:
            raise texts.no_such_path_short(old_path)
    destination = reader.state(new_path)
    if (destination is not None and destination.exists) or _has_files_under(reader, new_path):
        raise texts.destination_exists(new_path)
    if new_path.startswith(old_path + "/"):
        raise texts.into_itself(old_path, new_path)
    above = file_above(reader, new_path)
    if above is not None:
        raise texts.under_a_file(new_path, above)
    # Checked on the sizes of the heads before any content is read.
    check_change_size(sum(state.size for state in moving.values()), field="old_path")
    contents = reader.contents(list(moving.values()))
    targets = {path: new_path + path[len(old_path) :] for path in moving}
    # What stands (a deletion, or a file of a scope the access does not write in) at the
    # new paths: each new version continues its scope's sequence there.
    landing = reader.states(at=list(targets.values()))
    writes: list[Write] = []
    for path, source in sorted(moving.items()):
        writes.append(Write(path=path, content=None, base=source))
        writes.append(
            Write(
                path=targets[path],
                content=contents.get(path, ""),
                base=source,
                renamed_from=path,
            )
        )
    changed: list[tuple[str, FileState | None]] = sorted(moving.items())
    changed += [(targets[p], landing.get(targets[p])) for p in sorted(moving)]
    return Outcome(answer=texts.renamed(old_path, new_path), writes=writes, changed=changed)


HANDLERS = {
    "view": view,
    "create": create,
    "str_replace": str_replace,
    "insert": insert,
    "delete": delete,
    "rename": rename,
}


def outcome_of(reader: Reader, command: Mapping[str, Any]) -> Outcome:
    """What ``command`` answers and writes on what ``reader`` sees; ``MemoryFileError``
    with the memory tool's text when it is refused."""
    if not isinstance(command, Mapping):
        raise MemoryFileError("A memory command is an object with a `command` field.")
    handler = HANDLERS.get(command.get("command"))  # type: ignore[arg-type]
    if handler is None:
        raise texts.unknown_command(command.get("command"))
    return handler(reader, command)


__all__ = ["ADDS_PATHS", "COMMANDS", "Outcome", "outcome_of", "sha256_of"]
