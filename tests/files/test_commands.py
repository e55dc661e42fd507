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

from cogitator_memory.exceptions import MemoryFileError
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope

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
