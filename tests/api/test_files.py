"""The memory files API: Claude's memory tool calls forwarded as they come, the files of a
scope, one file, its history, and whole-file writes, within the principal's grants."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from rest_framework.test import APIClient

from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.limits import MAX_FILE_BYTES
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.files.store import lock_paths_of_agent
from cogitator_memory.grants import MemoryScope
from cogitator_memory.threads import services
from tests.api.conftest import API, Conversation, assert_error, token_client

pytestmark = pytest.mark.django_db

FILES = f"{API}/files/"
CONTENT = f"{API}/files/content/"
HISTORY = f"{API}/files/history/"
COMMAND = f"{API}/files/command/"
U1 = {"agent_id": "agent-a", "user_id": "u1"}
NOTES = "/memories/notes.md"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def command(client: APIClient, tool_input: dict[str, Any], **body: Any) -> dict[str, Any]:
    response = client.post(COMMAND, {**U1, **body, "input": tool_input}, format="json")
    assert response.status_code == 200, response.json()
    answer: dict[str, Any] = response.json()
    assert set(answer) == {"text", "is_error"}
    return answer


def create(client: APIClient, path: str = NOTES, text: str = "Allergic to peanuts.") -> None:
    answer = command(client, {"command": "create", "path": path, "file_text": text})
    assert answer == {"text": f"File created successfully at: {path}", "is_error": False}


def trusted_put(scope: MemoryScope, path: str, text: str) -> None:
    MemoryFiles().put(FileAccess(scope=scope), path, text)


def version_count() -> int:
    return MemoryFileVersion.objects.count()


# --- the memory tool -------------------------------------------------------------------


def test_a_tool_call_is_answered_with_the_tool_result_for_the_model(client: APIClient) -> None:
    # given
    create(client)
    # when
    answer = command(client, {"command": "view", "path": NOTES})
    # then
    assert answer == {
        "text": f"Here's the content of {NOTES} with line numbers:\n     1\tAllergic to peanuts.",
        "is_error": False,
    }
    version = MemoryFileVersion.objects.get()
    assert (version.agent_id, version.user_id, version.author) == ("agent-a", "u1", "model")


def test_the_directory_view_shows_the_files_two_levels_deep(client: APIClient) -> None:
    # given
    create(client)
    create(client, "/memories/people/ana.md", "Ana")
    # when
    answer = command(client, {"command": "view", "path": "/memories"})
    # then
    assert answer["is_error"] is False
    assert answer["text"].splitlines()[1:] == [
        "4K\t/memories",
        "20B\t/memories/notes.md",
        "4K\t/memories/people/",
        "3B\t/memories/people/ana.md",
    ]


def test_a_refused_command_is_an_error_result_and_changes_nothing(client: APIClient) -> None:
    # given
    create(client)
    before = version_count()
    # when
    answer = command(
        client, {"command": "str_replace", "path": NOTES, "old_str": "walnuts", "new_str": "x"}
    )
    unknown = command(client, {"command": "explode", "path": NOTES})
    # then
    assert answer == {
        "text": "No replacement was performed, old_str `walnuts` did not appear verbatim "
        f"in {NOTES}.",
        "is_error": True,
    }
    assert unknown["is_error"] is True and "Unknown command" in unknown["text"]
    assert version_count() == before


def test_a_bad_path_in_a_tool_call_is_answered_in_the_tool_s_words(client: APIClient) -> None:
    # when
    answer = command(client, {"command": "view", "path": "/etc/passwd"})
    climbing = command(client, {"command": "create", "path": "/memories/../x.md", "file_text": "x"})
    # then
    assert answer == {"text": "Path must start with /memories, got: /etc/passwd", "is_error": True}
    assert climbing["is_error"] is True and "escape /memories" in climbing["text"]
    assert version_count() == 0


def test_expected_sha256_makes_an_edit_of_a_changed_file_an_error(client: APIClient) -> None:
    # given a file read, then changed by another writer
    create(client)
    read = sha256("Allergic to peanuts.")
    edit = {"command": "str_replace", "path": NOTES, "old_str": "peanuts", "new_str": "nuts"}
    trusted_put(MemoryScope(**U1), NOTES, "Allergic to peanuts. Likes tea.")
    # when
    stale = command(client, edit, expected_sha256=read)
    fresh = command(client, edit, expected_sha256=sha256("Allergic to peanuts. Likes tea."))
    # then
    assert stale == {
        "text": f"The file {NOTES} has changed since you last read it. View it again and "
        "try again.",
        "is_error": True,
    }
    assert fresh["is_error"] is False
    assert MemoryFiles().read(FileAccess(scope=MemoryScope(**U1)), NOTES).content == (  # type: ignore[union-attr]
        "Allergic to nuts. Likes tea."
    )


def test_expected_sha256_null_creates_only_a_new_file(client: APIClient) -> None:
    # given
    create(client)
    # when
    answer = command(
        client,
        {"command": "str_replace", "path": NOTES, "old_str": "peanuts", "new_str": "nuts"},
        expected_sha256=None,
    )
    # then
    assert answer["is_error"] is True and "has changed since you last read it" in answer["text"]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({**U1}, ["input"]),
        ({**U1, "input": "view /memories"}, ["input"]),
        ({**U1, "input": ["view"]}, ["input"]),
        ({**U1, "input": {"path": "/memories"}}, ["input"]),
        ({**U1, "input": {"command": 1}}, ["input"]),
        ({**U1, "input": {"command": "view", "path": "/memories/a\x00b"}}, ["input"]),
        ({"input": {"command": "view", "path": "/memories"}}, ["agent_id"]),
        ({**U1, "user_id": "  ", "input": {"command": "view"}}, ["user_id"]),
        ({**U1, "user_id": 7, "input": {"command": "view"}}, ["user_id"]),
        ({**U1, "input": {"command": "view"}, "expected_sha256": "abc"}, ["expected_sha256"]),
        ({**U1, "input": {"command": "view"}, "place": 12}, ["place"]),
    ],
)
def test_a_body_that_is_not_a_tool_call_is_a_400_naming_the_field(
    client: APIClient, body: dict[str, Any], fields: list[str]
) -> None:
    # when
    response = client.post(COMMAND, body, format="json")
    # then
    assert_error(response, 400, "invalid", fields)
    assert version_count() == 0


def test_a_tool_call_needs_a_principal(anonymous: APIClient) -> None:
    # when
    response = anonymous.post(COMMAND, {**U1, "input": {"command": "view"}}, format="json")
    # then
    assert response.status_code == 401


# --- list, read, history ---------------------------------------------------------------


def test_the_list_holds_the_files_that_stand_with_sha256_size_and_version(
    client: APIClient,
) -> None:
    # given a file changed once, one deleted, and one of the agent every user shares
    create(client)
    command(
        client, {"command": "str_replace", "path": NOTES, "old_str": "peanuts", "new_str": "nuts"}
    )
    create(client, "/memories/gone.md", "x")
    command(client, {"command": "delete", "path": "/memories/gone.md"})
    trusted_put(MemoryScope("agent-a"), "/memories/agent.md", "Be brief.")
    # when
    response = client.get(FILES, U1)
    # then
    assert response.status_code == 200
    rows = response.json()["results"]
    assert [row["path"] for row in rows] == ["/memories/agent.md", NOTES]
    agent, notes = rows
    assert notes["sha256"] == sha256("Allergic to nuts.")
    assert (notes["size"], notes["version"], notes["author"]) == (17, 2, "model")
    assert notes["scope"] == {"agent_id": "agent-a", "user_id": "u1"}
    assert agent["scope"] == {"agent_id": "agent-a"}
    assert "content" not in agent


def test_the_list_can_keep_to_a_directory(client: APIClient) -> None:
    # given
    create(client)
    create(client, "/memories/people/ana.md", "Ana")
    # when
    rows = client.get(FILES, {**U1, "under": "/memories/people"}).json()["results"]
    # then
    assert [row["path"] for row in rows] == ["/memories/people/ana.md"]


def test_another_user_of_the_agent_sees_only_the_shared_files(client: APIClient) -> None:
    # given
    create(client)
    trusted_put(MemoryScope("agent-a"), "/memories/agent.md", "Be brief.")
    # when
    rows = client.get(FILES, {"agent_id": "agent-a", "user_id": "u2"}).json()["results"]
    # then
    assert [row["path"] for row in rows] == ["/memories/agent.md"]


def test_a_file_is_read_with_its_content_and_sha256(client: APIClient) -> None:
    # given
    create(client)
    # when
    response = client.get(CONTENT, {**U1, "path": "/memories//./notes.md"})
    # then
    assert response.status_code == 200
    body = response.json()
    assert (body["path"], body["content"], body["sha256"], body["version"]) == (
        NOTES,
        "Allergic to peanuts.",
        sha256("Allergic to peanuts."),
        1,
    )


@pytest.mark.parametrize("path", ["/memories/none.md", "/memories", "/memories/people"])
def test_a_missing_file_or_a_directory_is_a_404(client: APIClient, path: str) -> None:
    # given
    create(client, "/memories/people/ana.md", "Ana")
    # when / then
    assert_error(client.get(CONTENT, {**U1, "path": path}), 404, "memory_file_not_found")
    assert_error(client.get(HISTORY, {**U1, "path": path}), 404, "memory_file_not_found")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"path": "/etc/passwd"}, "path"),
        ({"path": "/memoriesX/a.md"}, "path"),
        ({"path": "/memories/../etc/passwd"}, "path"),
        ({"path": "/memories/a\tb.md"}, "path"),
        ({"path": "/memories/" + "n" * 256}, "path"),
        ({"path": "/memories/" + "a/" * 300}, "path"),
        ({"path": ""}, "path"),
        ({"path": NOTES, "agent_id": ""}, "agent_id"),
        ({"path": NOTES, "thread_id": " "}, "thread_id"),
    ],
)
def test_a_bad_query_is_a_400_naming_the_parameter(
    client: APIClient, query: dict[str, str], field: str
) -> None:
    # when / then
    assert_error(client.get(CONTENT, {**U1, **query}), 400, "invalid", [field])


def test_the_path_pattern_the_schema_publishes_is_the_rule_of_memory_paths() -> None:
    # given
    import re

    from cogitator_memory.api.serializers.files import MAX_PATH_CHARACTERS, PATH_PATTERN
    from cogitator_memory.exceptions import InvalidMemoryPath
    from cogitator_memory.files.paths import normalize

    samples = [
        "/memories",
        "/memories/",
        "/memories/a..b/c",
        "/memories/./a",
        "/memories//a",
        "/memories/..",
        "/memories/a/../b",
        "/memories/a/..",
        "/memories/a\u2028/..",
        "/memories/\x7fa",
        "/memories/\x85",
        "/memories/é",
        "/memoriesa",
        "/memories/" + "n" * 255,
        "/memories/" + "n" * 256,
        "/memories/a/" + "n" * 256 + "/b",
        "/memories/a.md ",
        "/memories/ a.md",
        "/memories/a\u00a0/b.md",
        "/memories/my notes.md",
        "/memories/\u202eevil",
        "/memories/a\u200e.md",
        "/memories/cafe\u0301.md",
        "/memories/" + "n" * 255 + "/" + "m" * 246,
        "/memories/" + "n" * 255 + "/" + "m" * 247,
    ]
    for path in samples:
        # when
        try:
            normalize(path)
            accepted = True
        except InvalidMemoryPath:
            accepted = False
        # then
        matched = bool(re.search(PATH_PATTERN, path)) and len(path) <= MAX_PATH_CHARACTERS
        assert matched is accepted, path


def test_the_history_runs_back_through_renames_and_deletions(client: APIClient) -> None:
    # given
    create(client, "/memories/draft.md", "one")
    command(
        client,
        {"command": "rename", "old_path": "/memories/draft.md", "new_path": NOTES},
    )
    command(client, {"command": "delete", "path": NOTES})
    create(client, NOTES, "two")
    # when
    response = client.get(HISTORY, {**U1, "path": NOTES})
    # then
    assert response.status_code == 200
    body = response.json()
    assert body["path"] == NOTES
    rows = body["results"]
    assert [(r["path"], r["sequence"], r["content"], r["deleted"]) for r in rows] == [
        ("/memories/draft.md", 1, "one", False),
        (NOTES, 1, "one", False),
        (NOTES, 2, None, True),
        (NOTES, 3, "two", False),
    ]
    assert rows[1]["renamed_from"] == "/memories/draft.md"
    assert "renamed_from" not in rows[0]
    assert rows[2]["sha256"] is None and rows[3]["sha256"] == sha256("two")
    assert all(r["scope"] == U1 and r["redacted"] is False for r in rows)


def test_a_redacted_version_says_so(client: APIClient) -> None:
    # given
    create(client)
    MemoryFiles().redact(FileAccess(scope=MemoryScope(**U1)), [NOTES], "asked")
    # when
    [row] = client.get(HISTORY, {**U1, "path": NOTES}).json()["results"]
    # then
    assert (row["content"], row["redacted"], row["sha256"]) == (
        "[redacted]",
        True,
        sha256("Allergic to peanuts."),
    )


# --- put -------------------------------------------------------------------------------


def put(client: APIClient, text: str, path: str = NOTES, **body: Any) -> Any:
    return client.put(CONTENT, {**U1, "path": path, "text": text, **body}, format="json")


def test_put_creates_a_file_then_writes_over_the_version_it_was_made_from(
    client: APIClient,
) -> None:
    # when
    created = put(client, "Likes tea.", expected_sha256=None)
    updated = put(client, "Likes coffee.", expected_sha256=sha256("Likes tea."))
    # then
    assert created.status_code == 200, created.json()
    assert (created.json()["version"], created.json()["sha256"]) == (1, sha256("Likes tea."))
    assert created.json()["author"] == "user"
    assert updated.status_code == 200, updated.json()
    assert (updated.json()["version"], updated.json()["size"]) == (2, 13)
    assert client.get(CONTENT, {**U1, "path": NOTES}).json()["content"] == "Likes coffee."


def test_put_on_a_stale_version_is_a_409_and_changes_nothing(client: APIClient) -> None:
    # given
    put(client, "Likes tea.")
    before = version_count()
    # when
    stale = put(client, "Likes coffee.", expected_sha256=sha256("Likes water."))
    exists = put(client, "Likes coffee.", expected_sha256=None)
    missing = put(client, "x", path="/memories/new.md", expected_sha256=sha256("x"))
    # then
    body = assert_error(stale, 409, "memory_file_conflict")
    assert body["message"] == (
        f"The file {NOTES} has changed since you last read it. View it again and try again."
    )
    assert_error(exists, 409, "memory_file_conflict")
    assert_error(missing, 409, "memory_file_conflict")
    assert version_count() == before


def test_put_without_a_precondition_writes_whatever_stands(client: APIClient) -> None:
    # given
    put(client, "Likes tea.")
    # when
    response = put(client, "")
    # then
    assert response.status_code == 200
    assert (response.json()["version"], response.json()["size"]) == (2, 0)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/memories", "The path /memories is not a file."),
        ("/memories/people", "The path /memories/people is not a file."),
        (
            "/memories/people/ana.md/x",
            "Cannot write /memories/people/ana.md/x: /memories/people/ana.md is a file, "
            "not a directory.",
        ),
    ],
)
def test_put_where_no_file_can_be_is_refused(client: APIClient, path: str, message: str) -> None:
    # given
    create(client, "/memories/people/ana.md", "Ana")
    # when
    body = assert_error(put(client, "x", path=path), 409, "memory_file_refused")
    # then
    assert body["message"] == message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"path": "/tmp/x", "text": "x"}, "path"),
        ({"path": NOTES}, "text"),
        ({"path": NOTES, "text": 5}, "text"),
        ({"path": NOTES, "text": "a\x00b"}, "text"),
        ({"path": NOTES, "text": "x", "expected_sha256": "A" * 64}, "expected_sha256"),
    ],
)
def test_a_bad_put_is_a_400_naming_the_field(
    client: APIClient, body: dict[str, Any], field: str
) -> None:
    # when / then
    assert_error(client.put(CONTENT, {**U1, **body}, format="json"), 400, "invalid", [field])
    assert version_count() == 0


# --- grants ----------------------------------------------------------------------------


@pytest.fixture
def desk(make_user: Callable[..., User]) -> APIClient:
    """A principal granted only user u1 of agent-s."""
    return token_client(make_user("desk", {"agent-s": ["u1"]}))


def test_a_scope_the_grants_do_not_reach_reads_as_one_without_files(desk: APIClient) -> None:
    # given files of u2 and of the whole agent, where desk's grant names u1 only
    trusted_put(MemoryScope("agent-s", user_id="u2"), NOTES, "secret of u2")
    trusted_put(MemoryScope("agent-s"), "/memories/agent.md", "shared")
    trusted_put(MemoryScope("agent-b"), NOTES, "another agent's")
    # when / then
    for scope in (
        {"agent_id": "agent-s", "user_id": "u2"},
        {"agent_id": "agent-s"},
        {"agent_id": "agent-b"},
    ):
        assert desk.get(FILES, scope).json() == {"results": []}
        for url in (CONTENT, HISTORY):
            body = assert_error(
                desk.get(url, {**scope, "path": NOTES}), 404, "memory_file_not_found"
            )
            assert "secret" not in body["message"]
    # and the files every user shares are not shown to a grant that names users
    assert desk.get(FILES, {"agent_id": "agent-s", "user_id": "u1"}).json() == {"results": []}


def test_a_change_in_a_scope_the_grants_do_not_reach_is_a_403(desk: APIClient) -> None:
    # given
    trusted_put(MemoryScope("agent-s", user_id="u2"), NOTES, "secret of u2")
    view = {"command": "view", "path": NOTES}
    # when
    other_user = desk.post(
        COMMAND, {"agent_id": "agent-s", "user_id": "u2", "input": view}, format="json"
    )
    no_user = desk.put(
        CONTENT, {"agent_id": "agent-s", "path": NOTES, "text": "mine"}, format="json"
    )
    other_agent = desk.put(
        CONTENT, {"agent_id": "agent-b", "path": NOTES, "text": "mine"}, format="json"
    )
    # then
    assert_error(other_user, 403, "permission_denied")
    body = assert_error(no_user, 403, "permission_denied")
    assert body["message"] == "Your grant for agent 'agent-s' names users: give user_id."
    assert_error(other_agent, 403, "permission_denied")
    assert version_count() == 1


def test_a_history_is_cut_where_it_reaches_past_the_grants(desk: APIClient) -> None:
    # given a file every user of agent-s shares, changed for u1 (a version of u1's scope
    # made from the shared one)
    trusted_put(MemoryScope("agent-s"), NOTES, "shared text")
    MemoryFiles().run(
        FileAccess(scope=MemoryScope("agent-s", user_id="u1")),
        {"command": "str_replace", "path": NOTES, "old_str": "shared", "new_str": "own"},
    )
    # when
    rows = desk.get(HISTORY, {"agent_id": "agent-s", "user_id": "u1", "path": NOTES}).json()[
        "results"
    ]
    # then: u1's version, not the shared one its grant does not reach
    assert [(row["content"], row["scope"]) for row in rows] == [
        ("own text", {"agent_id": "agent-s", "user_id": "u1"})
    ]


def test_within_its_grant_a_principal_works_on_its_user_s_files(desk: APIClient) -> None:
    # when
    answer = desk.post(
        COMMAND,
        {
            "agent_id": "agent-s",
            "user_id": "u1",
            "input": {"command": "create", "path": NOTES, "file_text": "mine"},
        },
        format="json",
    ).json()
    listed = desk.get(FILES, {"agent_id": "agent-s", "user_id": "u1"}).json()["results"]
    # then
    assert answer["is_error"] is False
    assert [row["path"] for row in listed] == [NOTES]


# --- the place -------------------------------------------------------------------------


def test_a_version_written_at_a_place_is_seen_on_the_branches_holding_it(
    client: APIClient, conversation: Conversation
) -> None:
    # given a file written on the active branch (after follow_up)
    scope = {**U1, "thread_id": conversation.thread_id}
    on_branch = {**scope, "place": conversation.follow_up.pk}
    other_branch = {**scope, "place": conversation.retry.pk}
    response = client.post(
        COMMAND,
        {**on_branch, "input": {"command": "create", "path": NOTES, "file_text": "x"}},
        format="json",
    )
    assert response.json()["is_error"] is False
    # when
    seen_on_branch = client.get(FILES, on_branch).json()["results"]
    seen_elsewhere = client.get(FILES, other_branch).json()["results"]
    # then
    assert [row["path"] for row in seen_on_branch] == [NOTES]
    assert seen_elsewhere == []
    assert_error(client.get(CONTENT, {**other_branch, "path": NOTES}), 404, "memory_file_not_found")
    assert MemoryFileVersion.objects.get().place_id == conversation.follow_up.pk


def test_the_place_s_thread_is_its_entry_s_when_no_thread_is_named(
    client: APIClient, conversation: Conversation
) -> None:
    # when
    answer = command(
        client,
        {"command": "create", "path": NOTES, "file_text": "x"},
        place=conversation.reply.pk,
    )
    # then
    assert answer["is_error"] is False
    version = MemoryFileVersion.objects.get()
    assert (version.place_id, version.place_thread_id) == (
        conversation.reply.pk,
        conversation.thread_id,
    )


def test_a_place_that_is_not_an_entry_one_may_see_is_a_404(
    client: APIClient, conversation: Conversation, foreign_conversation: Conversation
) -> None:
    # given
    other = services.create_thread("agent-a", {"userId": "u1"})
    view = {"command": "view", "path": "/memories"}
    # when
    foreign = client.post(
        COMMAND, {**U1, "place": foreign_conversation.reply.pk, "input": view}, format="json"
    )
    elsewhere = client.get(FILES, {**U1, "thread_id": other.pk, "place": conversation.reply.pk})
    written = client.put(
        CONTENT,
        {**U1, "place": "no-such-entry", "path": NOTES, "text": "x"},
        format="json",
    )
    # then
    assert_error(foreign, 404, "entry_not_found")
    assert_error(elsewhere, 404, "entry_not_in_thread", ["place"])
    assert_error(written, 404, "entry_not_found")
    assert MemoryFileHead.objects.count() == 0


def test_a_place_in_a_thread_of_the_longest_id_is_kept(client: APIClient) -> None:
    # given a thread whose id is as long as a thread id may be
    thread = services.create_thread("agent-a", {"userId": "u1"}, thread_id="t" * 255)
    entry = services.add_entry(thread.pk, role="user", content="Hello")
    create_there = {"command": "create", "path": NOTES, "file_text": "x"}
    # when
    response = client.post(COMMAND, {**U1, "place": entry.pk, "input": create_there}, format="json")
    # then
    assert response.status_code == 200, response.json()
    assert response.json()["is_error"] is False
    assert MemoryFileVersion.objects.get().place_thread_id == thread.pk


# --- a busy database ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_lock_wait_that_runs_out_is_a_503_with_retry_after(
    client: APIClient, short_lock_waits: None
) -> None:
    # given another connection holding the lock the change needs (on SQLite the database's
    # write lock, on PostgreSQL the agent's path lock) until it is told to let go
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                lock_paths_of_agent("agent-a")
                holding.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(timeout=10)
    tool_input = {"command": "create", "path": NOTES, "file_text": "x"}
    try:
        # when
        response = client.post(COMMAND, {**U1, "input": tool_input}, format="json")
    finally:
        release.set()
        holder.join(timeout=30)
    # then
    body = assert_error(response, 503, "database_busy")
    assert response["Retry-After"] == "1"
    assert response["Content-Type"] == "application/json"
    assert body["message"] == (
        "The memory's database is busy with other writes and nothing was changed; "
        "try again in a moment."
    )
    assert version_count() == 0
    assert command(client, tool_input)["is_error"] is False


# --- limits ------------------------------------------------------------------------------


def test_a_whole_file_over_a_mebibyte_is_a_400_naming_the_text(client: APIClient) -> None:
    # when
    response = put(client, "x" * (MAX_FILE_BYTES + 1))
    # then
    body = assert_error(response, 400, "memory_file_too_large", ["text"])
    assert body["message"] == (
        f"Invalid `text` parameter: it holds {MAX_FILE_BYTES + 1} bytes; a memory file holds "
        f"at most 1 MiB ({MAX_FILE_BYTES} bytes). Nothing was changed."
    )
    assert version_count() == 0


@pytest.mark.parametrize("parameter", ["file_text", "old_str", "new_str", "insert_text"])
def test_a_tool_call_with_a_text_no_file_can_hold_is_a_400_naming_it(
    client: APIClient, parameter: str
) -> None:
    # given
    create(client, NOTES, "a")
    tool_input = {
        "command": {"file_text": "create", "insert_text": "insert"}.get(parameter, "str_replace"),
        "path": NOTES,
        "insert_line": 0,
        "old_str": "a",
        parameter: "é" * (MAX_FILE_BYTES // 2 + 1),
    }
    # when
    response = client.post(COMMAND, {**U1, "input": tool_input}, format="json")
    # then
    body = assert_error(response, 400, "memory_file_too_large", [f"input.{parameter}"])
    assert body["message"].startswith(f"Invalid `{parameter}` parameter: it holds")
    assert version_count() == 1


def test_a_tool_call_that_would_make_a_file_too_large_is_the_tool_s_refusal(
    client: APIClient,
) -> None:
    # given
    create(client, NOTES, "a" + "x" * (MAX_FILE_BYTES - 1))
    # when
    answer = command(
        client, {"command": "str_replace", "path": NOTES, "old_str": "a", "new_str": "ab"}
    )
    # then
    assert answer == {
        "text": f"The file {NOTES} would hold {MAX_FILE_BYTES + 1} bytes; a memory file holds "
        f"at most 1 MiB ({MAX_FILE_BYTES} bytes). Nothing was changed.",
        "is_error": True,
    }
    assert version_count() == 1


# --- one rule of paths -------------------------------------------------------------------

LONGEST = "/memories/" + "n" * 255 + "/" + "m" * 246  # 512 characters


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            LONGEST + "m",
            f"Path {(LONGEST + 'm')[:300]}… is longer than 512 characters; use a shorter path.",
        ),
        (
            "/memories/a.md ",
            'Path /memories/a.md  has a name that begins or ends with a space ("a.md "); '
            "remove the space.",
        ),
        (
            "/memories/\u202edm.live",
            "Path /memories/\\u202edm.live contains a bidirectional control character "
            "(U+202E), which makes a name read otherwise than it is; memory paths cannot hold "
            "one.",
        ),
    ],
    ids=["513-characters", "trailing-space", "bidi-override"],
)
def test_a_path_the_tool_refuses_the_api_refuses_too(
    client: APIClient, path: str, message: str
) -> None:
    # when
    answer = command(client, {"command": "create", "path": path, "file_text": "x"})
    put_response = put(client, "x", path=path)
    read_response = client.get(CONTENT, {**U1, "path": path})
    # then
    assert answer == {"text": message, "is_error": True}
    assert_error(put_response, 400, "invalid", ["path"])
    assert_error(read_response, 400, "invalid", ["path"])
    assert version_count() == 0


def test_a_path_the_tool_accepts_the_api_accepts_too(client: APIClient) -> None:
    # when
    create(client, LONGEST, "by the tool")
    response = client.get(CONTENT, {**U1, "path": LONGEST})
    written = put(client, "by the API", path=LONGEST)
    # then
    assert response.status_code == 200, response.json()
    assert response.json()["content"] == "by the tool"
    assert written.status_code == 200, written.json()
    assert command(client, {"command": "view", "path": LONGEST})["text"].endswith("by the API")


def test_a_name_in_either_unicode_form_is_one_file_in_the_tool_and_the_api(
    client: APIClient,
) -> None:
    # given a file the tool wrote with a combining accent
    created = command(
        client, {"command": "create", "path": "/memories/cafe\u0301.md", "file_text": "espresso"}
    )
    assert created == {
        "text": "File created successfully at: /memories/caf\u00e9.md",
        "is_error": False,
    }
    # when the API names it with the composed letter
    response = client.get(CONTENT, {**U1, "path": "/memories/caf\u00e9.md"})
    written = put(client, "ristretto", path="/memories/cafe\u0301.md")
    # then
    assert response.status_code == 200, response.json()
    assert (response.json()["path"], response.json()["content"]) == (
        "/memories/caf\u00e9.md",
        "espresso",
    )
    assert written.json()["path"] == "/memories/caf\u00e9.md"
    listed = client.get(FILES, U1).json()["results"]
    assert [(f["path"], f["version"]) for f in listed] == [("/memories/caf\u00e9.md", 2)]
