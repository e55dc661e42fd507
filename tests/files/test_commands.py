"""Each memory-tool command answers, and refuses, as Anthropic's memory tool does.

The reference is the SDK's own implementation over a directory
(``BetaLocalFilesystemMemoryTool``): every scripted call runs on it and on ``MemoryFiles``,
and the texts must match, the sizes of directories aside (a file system shows a
directory's own size, which depends on the file system). The script leaves no empty
directory behind: here a directory is the files under it, and goes with the last one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
from hypothesis import given, settings
from hypothesis import strategies as st

from cogitator_memory.exceptions import MemoryFileError
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.commands import outcome_of
from cogitator_memory.files.limits import MAX_REPORTED_OCCURRENCES
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.files.store import FileState
from cogitator_memory.grants import MemoryScope
from tests.examples import examples

pytestmark = pytest.mark.django_db

ACCESS = FileAccess(scope=MemoryScope("concierge", user_id="ana"))

SCRIPT: list[dict[str, Any]] = [
    {"command": "view", "path": "/memories"},
    {"command": "create", "path": "/memories/user.md", "file_text": "Allergic to peanuts.\n"},
    {"command": "create", "path": "/memories/user.md", "file_text": "again"},
    {"command": "view", "path": "/memories/user.md"},
    {"command": "create", "path": "/memories/notes/a.md", "file_text": "one\ntwo\nthree\nfour\n"},
    {"command": "create", "path": "/memories/notes/deep/er/b.md", "file_text": ""},
    {"command": "create", "path": "/memories/notes/.hidden", "file_text": "x"},
    {"command": "create", "path": "/memories/big.txt", "file_text": "é" * 1000},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/notes"},
    {"command": "view", "path": "/memories/notes/a.md", "view_range": [2, 3]},
    {"command": "view", "path": "/memories/notes/a.md", "view_range": [3, -1]},
    {"command": "view", "path": "/memories/missing.md"},
    {"command": "str_replace", "path": "/memories/notes/a.md", "old_str": "two", "new_str": "2"},
    {"command": "str_replace", "path": "/memories/notes/a.md", "old_str": "zzz", "new_str": "y"},
    {"command": "create", "path": "/memories/rep.md", "file_text": "ab\nab\nc ab\n"},
    {"command": "str_replace", "path": "/memories/rep.md", "old_str": "ab", "new_str": "x"},
    {"command": "str_replace", "path": "/memories/missing.md", "old_str": "a", "new_str": "b"},
    {"command": "str_replace", "path": "/memories/notes", "old_str": "a", "new_str": "b"},
    {"command": "insert", "path": "/memories/notes/a.md", "insert_line": 0, "insert_text": "zero"},
    {"command": "insert", "path": "/memories/notes/a.md", "insert_line": 5, "insert_text": "end\n"},
    {"command": "insert", "path": "/memories/notes/a.md", "insert_line": 9, "insert_text": "x"},
    {"command": "insert", "path": "/memories/user.md", "insert_line": -1, "insert_text": "x"},
    {"command": "view", "path": "/memories/notes/a.md"},
    {"command": "insert", "path": "/memories/missing.md", "insert_line": 0, "insert_text": "x"},
    {"command": "insert", "path": "/memories/notes", "insert_line": 0, "insert_text": "x"},
    {"command": "rename", "old_path": "/memories/user.md", "new_path": "/memories/people/ana.md"},
    {"command": "rename", "old_path": "/memories/missing.md", "new_path": "/memories/x.md"},
    {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/people/ana.md"},
    {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/archive/notes"},
    {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/archive/notes/a.md"},
    {"command": "create", "path": "/memories/people/bo.md", "file_text": "Bo\n"},
    {"command": "delete", "path": "/memories/people/ana.md"},
    {"command": "delete", "path": "/memories/people/ana.md"},
    {"command": "delete", "path": "/memories/archive"},
    {"command": "delete", "path": "/memories"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/etc/passwd"},
    {"command": "create", "path": "/tmp/x", "file_text": "x"},
    {"command": "create", "path": "/memories/../x", "file_text": "x"},
    {"command": "create", "path": "/memories/a/../../x", "file_text": "x"},
]


def reference_answer(tool: BetaLocalFilesystemMemoryTool, command: dict[str, Any]) -> str:
    try:
        return str(tool.call(command))
    except ToolError as error:
        return str(error.content)


def our_answer(files: MemoryFiles, command: dict[str, Any]) -> str:
    try:
        return files.run(ACCESS, command)
    except MemoryFileError as error:
        return error.message


def without_directory_sizes(answer: str) -> str:
    lines = answer.split("\n")
    if lines[0].startswith("Here're the files and directories"):
        lines = [
            re.sub(r"^[0-9.]+[BKMG]\t", "<dir>\t", line)
            if line.endswith("/") or line.split("\t")[-1].count(".") == 0
            else line
            for line in lines
        ]
    return "\n".join(lines)


def test_every_scripted_command_answers_as_the_reference_memory_tool(tmp_path: Path) -> None:
    # given
    reference = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path))
    files = MemoryFiles()
    for step, command in enumerate(SCRIPT):
        # when
        expected = reference_answer(reference, command)
        answer = our_answer(files, command)
        # then
        assert without_directory_sizes(answer) == without_directory_sizes(expected), (
            f"step {step}: {command}"
        )


def test_a_directory_shows_the_size_a_file_system_shows_and_files_their_bytes() -> None:
    files = MemoryFiles()
    files.run(ACCESS, {"command": "create", "path": "/memories/a/b.md", "file_text": "x" * 1536})
    answer = files.run(ACCESS, {"command": "view", "path": "/memories"})
    assert answer == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden "
        "items:\n4K\t/memories\n4K\t/memories/a/\n1.5K\t/memories/a/b.md"
    )


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ({"command": "launch", "path": "/memories"}, "Unknown command: 'launch'"),
        ({"command": "create", "path": "/memories/x.md"}, "Parameter `file_text` is required"),
        ({"command": "view"}, "Parameter `path` is required for command: view"),
        (
            {"command": "view", "path": "/memories/x.md", "view_range": ["1", 2]},
            "Invalid `view_range` parameter",
        ),
        (
            {"command": "insert", "path": "/memories/f.md", "insert_line": "2", "insert_text": ""},
            "Invalid `insert_line` parameter: 2. It should be within the range [0, 1].",
        ),
        (
            {"command": "create", "path": "/memories/f.md/g.md", "file_text": ""},
            "Cannot write /memories/f.md/g.md: /memories/f.md is a file, not a directory.",
        ),
        (
            {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/d/e"},
            "Cannot move /memories/d into itself (/memories/d/e).",
        ),
        (
            {"command": "create", "path": "/memories/n.md", "file_text": "a\x00b"},
            "Invalid `file_text` parameter: Texts cannot contain the NUL character.",
        ),
    ],
)
def test_refusals_the_reference_has_no_words_for_say_what_to_do(
    command: dict[str, Any], message: str
) -> None:
    # given
    files = MemoryFiles()
    files.run(ACCESS, {"command": "create", "path": "/memories/f.md", "file_text": "one\n"})
    files.run(ACCESS, {"command": "create", "path": "/memories/d/x.md", "file_text": "x"})
    # when
    answer = files.handle_tool_call(ACCESS, command)
    # then
    assert answer.startswith(message)


def test_a_tool_call_answers_an_error_as_text_and_says_it_is_one() -> None:
    files = MemoryFiles()
    answer = files.answer_tool_call(ACCESS, {"command": "view", "path": "/memories/no.md"})
    assert answer.is_error
    assert answer.text == "The path /memories/no.md does not exist. Please provide a valid path."
    assert files.handle_tool_call(ACCESS, "view") == (
        "A memory command is an object with a `command` field."
    )


def test_paths_are_read_as_a_file_system_reads_them() -> None:
    files = MemoryFiles()
    files.run(ACCESS, {"command": "create", "path": "/memories//a/./b.md/", "file_text": "x"})
    assert [f.path for f in files.list(ACCESS)] == ["/memories/a/b.md"]
    assert files.run(ACCESS, {"command": "view", "path": "/memories/a//b.md"}).endswith("1\tx")


# --- the cost of a command -----------------------------------------------------------------


class ScannedText(str):
    """A file's content that adds up how many characters the searches over it go through
    (``find`` to the match or the end, ``count``, ``split`` and ``in`` over their whole
    range), so a test can tell a command that reads a file a few times from one that reads
    it again for every occurrence."""

    scanned = 0

    def find(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        begin, stop, _ = slice(start, end).indices(len(self))
        found = str.find(self, sub, begin, stop)
        ScannedText.scanned += (stop if found == -1 else found + len(sub)) - begin
        return found

    def count(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        begin, stop, _ = slice(start, end).indices(len(self))
        ScannedText.scanned += max(0, stop - begin)
        return str.count(self, sub, begin, stop)

    def split(self, *args: Any, **kwargs: Any) -> list[str]:  # type: ignore[override]
        ScannedText.scanned += len(self)
        return str.split(self, *args, **kwargs)

    def __contains__(self, sub: object) -> bool:
        ScannedText.scanned += len(self)
        return str.__contains__(self, sub)  # type: ignore[operator]


class OneFileReader:
    """A reader that sees one file, ``/memories/big.md``, with ``content``."""

    def __init__(self, content: str) -> None:
        self.file = FileState(
            path="/memories/big.md",
            scope=ACCESS.scope,
            version_id="fv_big",
            sequence=1,
            sha256="0" * 64,
            size=len(content.encode("utf-8")),
            deleted=False,
        )
        self.text = content

    def state(self, path: str) -> FileState | None:
        return self.file if path == self.file.path else None

    def states(self, *, at: Any = (), under: Any = ()) -> dict[str, FileState]:
        return {p: self.file for p in at if p == self.file.path}

    def content(self, state: FileState) -> str:
        return ScannedText(self.text)

    def contents(self, states: Any) -> dict[str, str]:
        return {self.file.path: ScannedText(self.text)}


def scanned_by(content: str, command: dict[str, Any]) -> tuple[str, int]:
    """What ``command`` answers (or refuses) on a file of ``content``, and how many
    characters its searches went through."""
    ScannedText.scanned = 0
    try:
        answer = outcome_of(OneFileReader(content), command).answer  # type: ignore[arg-type]
    except MemoryFileError as refusal:
        answer = refusal.message
    return answer, ScannedText.scanned


SIX_HUNDRED_KB = 600 * 1024


@pytest.mark.parametrize(
    ("content", "old_str"),
    [
        # one character that is every other character of a 600 KB file
        ("x\n" * (SIX_HUNDRED_KB // 2), "x"),
        # 150 occurrences spread over a 600 KB file
        (("y" * 4095 + "\n") * 150, "\ny"),
        # a line of the file that stands once, near its end
        ("z" * (SIX_HUNDRED_KB - 10) + "\nthe end\n", "the end"),
    ],
    ids=["every-other-character", "spread", "unique"],
)
def test_str_replace_reads_a_file_a_few_times_whatever_the_occurrences(
    content: str, old_str: str
) -> None:
    # when
    answer, scanned = scanned_by(
        content,
        {"command": "str_replace", "path": "/memories/big.md", "old_str": old_str, "new_str": "-"},
    )
    # then the searches went through the file a few times, not once per occurrence
    assert scanned <= 4 * len(content), (scanned, len(content))
    if answer.startswith("No replacement was performed. Multiple occurrences"):
        assert answer.endswith("Please ensure it is unique")
    else:
        assert answer.startswith("The memory file has been edited.")


@pytest.mark.parametrize(
    "command",
    [
        {"command": "view", "path": "/memories/big.md"},
        {"command": "view", "path": "/memories/big.md", "view_range": [100_000, -1]},
        {"command": "insert", "path": "/memories/big.md", "insert_line": 7, "insert_text": "x"},
        {"command": "str_replace", "path": "/memories/big.md", "old_str": "q", "new_str": "r"},
        {"command": "delete", "path": "/memories/big.md"},
        {"command": "rename", "old_path": "/memories/big.md", "new_path": "/memories/b.md"},
    ],
    ids=lambda command: "-".join(str(value) for value in command.values())[:40],
)
def test_every_command_reads_a_large_file_a_few_times(command: dict[str, Any]) -> None:
    # given a 600 KB file of short lines
    content = "x\n" * (SIX_HUNDRED_KB // 2)
    # when
    _, scanned = scanned_by(content, command)
    # then
    assert scanned <= 4 * len(content), (scanned, len(content))


def reference_str_replace(content: str, old_str: str, new_str: str) -> tuple[str, str | None]:
    """The reference memory tool's ``str_replace`` (``BetaLocalFilesystemMemoryTool``), on a
    text: (its answer or refusal, the new content or None)."""
    path = "/memories/big.md"
    count = content.count(old_str)
    if count == 0 or not old_str:
        return (
            f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.",
            None,
        )
    if count > 1:
        lines = []
        start = 0
        while (position := content.find(old_str, start)) != -1:
            lines.append(content[:position].count("\n") + 1)
            start = position + 1
        return (
            "No replacement was performed. Multiple occurrences of old_str "
            f"`{old_str}` in lines: {', '.join(map(str, lines))}. Please ensure it is unique",
            None,
        )
    position = content.find(old_str)
    changed = content[:position].count("\n")
    new_content = content.replace(old_str, new_str)
    lines = new_content.split("\n")
    start, end = max(0, changed - 2), min(len(lines), changed + 3)
    snippet = "\n".join(
        f"{str(number + 1).rjust(6)}\t{lines[number]}" for number in range(start, end)
    )
    return (
        "The memory file has been edited. Here is the snippet showing the change "
        "(with line numbers):\n" + snippet,
        new_content,
    )


@settings(max_examples=examples(full=2_000, ci=300), deadline=None)
@given(
    content=st.text(alphabet="ab\n", max_size=60),
    old_str=st.text(alphabet="ab\n", min_size=1, max_size=3),
    new_str=st.text(alphabet="c\n", max_size=3),
)
def test_str_replace_answers_as_the_reference_on_small_files(
    content: str, old_str: str, new_str: str
) -> None:
    # when
    command = {
        "command": "str_replace",
        "path": "/memories/big.md",
        "old_str": old_str,
        "new_str": new_str,
    }
    try:
        outcome = outcome_of(OneFileReader(content), command)  # type: ignore[arg-type]
        answer, written = outcome.answer, outcome.writes[0].content
    except MemoryFileError as refusal:
        answer, written = refusal.message, None
    # then
    assert (answer, written) == reference_str_replace(content, old_str, new_str)


def test_many_occurrences_are_reported_by_their_first_lines_only() -> None:
    # given
    content = "x\n" * (SIX_HUNDRED_KB // 2)
    # when
    answer, _ = scanned_by(
        content, {"command": "str_replace", "path": "/memories/big.md", "old_str": "x"}
    )
    # then
    first_lines = ", ".join(str(n) for n in range(1, MAX_REPORTED_OCCURRENCES + 1))
    assert answer == (
        f"No replacement was performed. Multiple occurrences of old_str `x` in lines: "
        f"{first_lines} and more (the first {MAX_REPORTED_OCCURRENCES} occurrences are "
        "listed). Please ensure it is unique"
    )
