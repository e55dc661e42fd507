"""Hostile paths: whatever a model names, nothing is read or written outside /memories or
outside the scope of the access.

Every path a command, ``put``, ``read``, ``history``, ``list`` or ``redact`` names goes
through ``paths.normalize`` before anything reads the database, so the claim is checked in
two parts: 10,000 hypothesis-generated hostile paths through ``normalize`` itself (each
refused, or canonical under ``/memories`` and naming the same place), and 1,000 memory-tool
calls of another user with two hostile paths each through the whole service (what is
written stays canonical, under ``/memories`` and in the caller's scope; the other user's
file is neither shown nor changed).
"""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogitator_memory.exceptions import InvalidMemoryPath, MemoryFileError
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.paths import (
    BIDI_CONTROLS,
    MAX_NAME_LENGTH,
    MAX_PATH_BYTES,
    MAX_PATH_CHARACTERS,
    PATH_PATTERN,
    ROOT,
    SPACES,
    normalize,
)
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from tests.examples import examples

pytestmark = pytest.mark.django_db

MALLORY = MemoryScope("concierge", user_id="mallory")
ANA = MemoryScope("concierge", user_id="ana")

PIECES = [
    "/memories",
    "/memories/",
    "/",
    "//",
    "..",
    ".",
    "../",
    "/..",
    "memories",
    "/memories..",
    "/memoriesx",
    "%2e%2e",
    "\\",
    "\x00",
    "\n",
    "\r",
    "\t",
    "\x1b",
    "\u202e",
    "\ud800",
    "é",
    "a",
    "b.md",
    "*",
    "%",
    "_",
    "?",
    "~",
    "$HOME",
    "C:",
    "\u0085",
    "ANA",
    "/etc/passwd",
    "/memories/../memories",
    "....",
    "%00",
    "\u2024",  # one dot leader, a dot to the eye
    "\u2215",  # division slash
    "\u0301",  # a combining acute accent
    "e\u0301",
    "\u00e9",
    " ",
    "\u00a0",
    "\u3000",
    "\u2066",
    "\u200f",
    "\uff0f",  # fullwidth solidus
    "\ufeff",
    "\u200b",
    "n" * 256,
]
# 1,000 examples of 10 paths (300 in the CI profile, tests/examples.py): hypothesis spends
# most of a test's time per example, not per path drawn, so 10,000 paths cost about what
# 2,000 examples of one path would.
PATH_BATCH = 10
PATH_EXAMPLES = examples(full=1_000, ci=300)
SERVICE_EXAMPLES = examples(full=1_000, ci=300)
HOSTILE = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), min_size=1, max_size=8
).map("".join)


def test_a_canonical_path_is_slash_separated_names_under_memories() -> None:
    assert normalize("/memories//a/./b/") == "/memories/a/b"
    assert normalize("/memories") == "/memories"
    for bad in ("/memories/../etc", "/memoriesx", "/memories/a\x00", "/memories/\u0085", 7):
        with pytest.raises(InvalidMemoryPath):
            normalize(bad)
    with pytest.raises(InvalidMemoryPath, match="longer than 255 characters"):
        normalize("/memories/" + "n" * (MAX_NAME_LENGTH + 1))


def assert_canonical_or_refused(path: str) -> None:
    """``path`` is refused with a message a model reads, or its canonical form is under
    ``/memories``, climbs nowhere, holds nothing a path may not hold, and names the same
    place the given path named."""
    try:
        canonical = normalize(path)
    except InvalidMemoryPath as refused:
        assert isinstance(refused.message, str) and refused.message
        return
    assert canonical == ROOT or canonical.startswith(ROOT + "/")
    names = canonical.split("/")[2:]
    assert not any(name in ("", ".", "..") for name in names)
    assert all(len(name) <= MAX_NAME_LENGTH for name in names)
    assert not any(unicodedata.category(char) in ("Cc", "Cs") for char in canonical)
    assert not any(char in BIDI_CONTROLS for char in canonical)
    assert not any(name[0].isspace() or name[-1].isspace() for name in names)
    assert len(path) <= MAX_PATH_CHARACTERS
    assert len(canonical.encode("utf-8")) <= MAX_PATH_BYTES
    assert normalize(canonical) == canonical
    assert [
        unicodedata.normalize("NFC", name)
        for name in path[len(ROOT) :].split("/")
        if name not in ("", ".")
    ] == names
    assert all(unicodedata.is_normalized("NFC", name) for name in names)


@settings(max_examples=PATH_EXAMPLES, deadline=None)
@given(paths=st.lists(HOSTILE, min_size=PATH_BATCH, max_size=PATH_BATCH))
def test_no_hostile_path_escapes_memories(paths: list[str]) -> None:
    for path in paths:
        assert_canonical_or_refused(path)


@settings(
    max_examples=SERVICE_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    path=HOSTILE,
    other=HOSTILE,
    command=st.sampled_from(["create", "view", "delete", "rename", "str_replace"]),
)
def test_no_hostile_path_escapes_memories_or_the_scope(path: str, other: str, command: str) -> None:
    # given ana's file, which mallory must never reach (the files mallory writes stay
    # from one example to the next, so later commands find directories to work on)
    files = MemoryFiles()
    if not MemoryFileHead.objects.filter(user_id="ana").exists():
        files.run(
            FileAccess(scope=ANA),
            {"command": "create", "path": "/memories/ana.md", "file_text": "ana"},
        )
    mallory = FileAccess(scope=MALLORY)
    tool_input = {
        "command": command,
        "path": path,
        "file_text": "x",
        "old_path": path,
        "new_path": other,
        "old_str": "a",
        "new_str": "b",
    }
    # when
    answer = files.handle_tool_call(mallory, tool_input)
    # then
    if "ana.md" not in path + other:
        assert "/memories/ana.md" not in answer
    for version in MemoryFileVersion.objects.all():
        assert version.path == normalize(version.path)
        assert version.path.startswith("/memories/")
        assert not any(name in ("", ".", "..") for name in version.path.split("/")[2:])
        if version.user_id == "ana":
            assert version.path == "/memories/ana.md" and version.content == "ana"
        else:
            assert (version.agent_id, version.user_id) == ("concierge", "mallory")
    assert files.read(FileAccess(scope=ANA), "/memories/ana.md").content == "ana"  # type: ignore[union-attr]


def test_a_refused_path_is_an_error_a_model_reads() -> None:
    files = MemoryFiles()
    with pytest.raises(MemoryFileError) as refused:
        files.run(FileAccess(scope=ANA), {"command": "view", "path": "/memories/\x00x"})
    assert refused.value.message == (
        "Path /memories/\\u0000x contains a control character; "
        "memory paths hold printable characters only."
    )


@settings(max_examples=PATH_EXAMPLES, deadline=None)
@given(paths=st.lists(HOSTILE, min_size=PATH_BATCH, max_size=PATH_BATCH))
def test_the_pattern_the_schema_publishes_is_the_rule_of_paths(paths: list[str]) -> None:
    for path in paths:
        if any(unicodedata.category(char) == "Cs" for char in path):
            continue  # no JSON text the schema describes holds a lone surrogate
        # when
        try:
            normalize(path)
            accepted = True
        except InvalidMemoryPath:
            accepted = False
        # then
        matched = bool(re.search(PATH_PATTERN, path)) and len(path) <= MAX_PATH_CHARACTERS
        assert matched is accepted, path


def test_the_spaces_a_name_may_not_begin_or_end_with_are_python_s_spaces() -> None:
    every = (chr(code) for code in range(sys.maxunicode + 1))
    spaces = {c for c in every if c.isspace() and unicodedata.category(c) != "Cc"}
    assert spaces == SPACES


def test_a_name_is_one_whatever_the_unicode_form_it_is_written_in() -> None:
    # given a file written with a combining accent
    files = MemoryFiles()
    access = FileAccess(scope=ANA)
    files.run(access, {"command": "create", "path": "/memories/cafe\u0301.md", "file_text": "1\n"})
    # when it is named with the composed letter
    again = files.handle_tool_call(
        access, {"command": "create", "path": "/memories/caf\u00e9.md", "file_text": "2\n"}
    )
    edited = files.run(
        access,
        {
            "command": "str_replace",
            "path": "/memories/caf\u00e9.md",
            "old_str": "1",
            "new_str": "3",
        },
    )
    # then it is the same file, stored under the composed form
    assert again == "File /memories/caf\u00e9.md already exists"
    assert edited.startswith("The memory file has been edited.")
    assert [(f.path, f.content) for f in files.list(access)] == [("/memories/caf\u00e9.md", "3\n")]
    assert normalize("/memories/Cafe\u0301/Cre\u0300me") == "/memories/Caf\u00e9/Cr\u00e8me"


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/memories/a.md ", '"a.md "'),
        ("/memories/ a.md", '" a.md"'),
        ("/memories/notes /a.md", '"notes "'),
        ("/memories/a.md\u00a0", '"a.md\\u00a0"'),
        ("/memories/\u3000", '"\\u3000"'),
    ],
)
def test_a_name_that_begins_or_ends_with_a_space_is_refused(path: str, name: str) -> None:
    with pytest.raises(InvalidMemoryPath) as refused:
        normalize(path)
    assert refused.value.message == (
        f"Path {path} has a name that begins or ends with a space ({name}); remove the space."
    )
    assert normalize("/memories/my notes/a b.md") == "/memories/my notes/a b.md"


@pytest.mark.parametrize("control", sorted(BIDI_CONTROLS))
def test_a_bidirectional_control_is_refused(control: str) -> None:
    # given a name that reads "evil.md" backwards, or with a mark in it
    path = f"/memories/{control}dm.live"
    # when
    with pytest.raises(InvalidMemoryPath) as refused:
        normalize(path)
    # then
    code = f"U+{ord(control):04X}"
    assert refused.value.message == (
        f"Path /memories/\\u{ord(control):04x}dm.live contains a bidirectional control "
        f"character ({code}), which makes a name read otherwise than it is; memory paths "
        "cannot hold one."
    )
    answer = MemoryFiles().answer_tool_call(
        FileAccess(scope=ANA), {"command": "create", "path": path, "file_text": "x"}
    )
    assert (answer.text, answer.is_error) == (refused.value.message, True)
    assert not MemoryFileVersion.objects.exists()


def test_a_path_is_at_most_512_characters_as_given() -> None:
    longest = "/memories/" + "n" * 255 + "/" + "m" * 246
    assert len(longest) == MAX_PATH_CHARACTERS
    assert normalize(longest) == longest
    with pytest.raises(InvalidMemoryPath, match="is longer than 512 characters"):
        normalize(longest + "m")
    with pytest.raises(InvalidMemoryPath, match="is longer than 512 characters"):
        normalize("/memories/" + "./" * 300 + "a.md")
