"""The files memory writes itself (the playbook, its draft, the observations) are
read-only to the memory tool and to the API's file commands: viewed as usual, every
change refused with a clear message, never a 500; memory's own writes go on."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.models import Author, MemoryFileVersion
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.upkeep import (
    MEMORY_RESERVED_PATHS,
    OBSERVATIONS_DIRECTORY,
    PLAYBOOK_DRAFT_PATH,
    PLAYBOOK_PATH,
)
from tests.api.conftest import API, assert_error

pytestmark = pytest.mark.django_db

CONTENT = f"{API}/files/content/"
COMMAND = f"{API}/files/command/"
U1 = {"agent_id": "agent-a", "user_id": "u1"}
SCOPE = MemoryScope("agent-a", user_id="u1")
OBSERVATION = f"{OBSERVATIONS_DIRECTORY}/ana.md"


def memory_writes(path: str, text: str) -> None:
    MemoryFiles().put(FileAccess(scope=SCOPE, author=Author.MEMORY), path, text)


def command(client: APIClient, tool_input: dict[str, Any]) -> dict[str, Any]:
    response = client.post(COMMAND, {**U1, "input": tool_input}, format="json")
    assert response.status_code == 200, response.json()
    answer: dict[str, Any] = response.json()
    return answer


def test_the_reserved_paths_are_the_playbook_its_draft_and_the_observations() -> None:
    assert MEMORY_RESERVED_PATHS == (PLAYBOOK_PATH, PLAYBOOK_DRAFT_PATH, OBSERVATIONS_DIRECTORY)


@pytest.mark.parametrize("path", [PLAYBOOK_PATH, PLAYBOOK_DRAFT_PATH, OBSERVATION])
def test_the_memory_tool_views_memorys_files_and_cannot_change_them(
    client: APIClient, path: str
) -> None:
    memory_writes(path, "- Confirm dates. [lesson:item_1]\n")
    before = MemoryFileVersion.objects.count()

    viewed = command(client, {"command": "view", "path": path})
    edits = [
        {"command": "str_replace", "path": path, "old_str": "Confirm", "new_str": "Skip"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "x"},
        {"command": "delete", "path": path},
        {"command": "rename", "old_path": path, "new_path": "/memories/mine.md"},
    ]
    answers = [command(client, edit) for edit in edits]

    assert viewed["is_error"] is False and "Confirm dates." in viewed["text"]
    for answer in answers:
        assert answer == {
            "text": f"{path} is kept by memory itself and is read-only here.",
            "is_error": True,
        }
    assert MemoryFileVersion.objects.count() == before


def test_the_memory_tool_cannot_create_nor_rename_into_a_reserved_path(client: APIClient) -> None:
    command(client, {"command": "create", "path": "/memories/mine.md", "file_text": "x"})
    moved = command(
        client, {"command": "rename", "old_path": "/memories/mine.md", "new_path": PLAYBOOK_PATH}
    )
    created = command(
        client, {"command": "create", "path": OBSERVATION, "file_text": "Ana likes tea."}
    )
    assert moved == {
        "text": f"{PLAYBOOK_PATH} is kept by memory itself and is read-only here.",
        "is_error": True,
    }
    assert created == {
        "text": f"{OBSERVATION} is kept by memory itself and is read-only here.",
        "is_error": True,
    }
    assert MemoryFileVersion.objects.count() == 1


@pytest.mark.parametrize("path", [PLAYBOOK_PATH, PLAYBOOK_DRAFT_PATH, OBSERVATION])
def test_a_whole_file_write_of_a_reserved_path_is_a_409_with_the_reason(
    client: APIClient, path: str
) -> None:
    response = client.put(CONTENT, {**U1, "path": path, "text": "- Obey."}, format="json")

    body = assert_error(response, 409, "memory_file_reserved")
    assert body["message"] == f"{path} is kept by memory itself and is read-only here."
    assert not MemoryFileVersion.objects.exists()


def test_memorys_own_access_writes_them() -> None:
    memory_writes(PLAYBOOK_PATH, "- One. [lesson:a]\n")
    memory_writes(PLAYBOOK_PATH, "- Two. [lesson:b]\n")
    assert MemoryFileVersion.objects.filter(path=PLAYBOOK_PATH).count() == 2
