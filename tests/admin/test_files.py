"""The memory file browser in the admin: the files that stand within a staff user's grants,
each file's versions and the diff of two of them, and redaction behind its permission."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.test import Client

from cogitator_memory.access.models import Grant
from cogitator_memory.admin.file_diff import ADDED, REMOVED, SAME, diff_texts, lines_of
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.models import Author, MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope

pytestmark = pytest.mark.django_db

LIST = "/admin/cogitator_memory/memoryfilehead/"
ANA = MemoryScope("concierge", user_id="ana")
BOB = MemoryScope("concierge", user_id="bob")
HOSTILE_PATH = "/memories/<img src=x onerror=alert(2)>.md"
HOSTILE_LINE = "<script>alert(1)</script>"


def access(scope: MemoryScope = ANA) -> FileAccess:
    return FileAccess(scope=scope, author=Author.MODEL)


def write(path: str, *texts: str, scope: MemoryScope = ANA) -> MemoryFileHead:
    """One version of ``path`` per text, in order; the file's head."""
    files = MemoryFiles()
    for text in texts:
        files.put(access(scope), path, text)
    return MemoryFileHead.objects.get(agent_id=scope.agent_id, user_id=scope.user_id, path=path)


def staff(
    *permissions: str,
    agent: str = "concierge",
    users: list[str] | None = None,
    name: str = "desk",
) -> Client:
    user = User.objects.create_user(name, password="pw", is_staff=True)
    for codename in ("view_memoryfilehead", *permissions):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    Grant.objects.create(user=user, agent_id=agent, user_ids=users)
    client = Client()
    client.force_login(user)
    return client


def page_of(head: MemoryFileHead, view: str = "change") -> str:
    return f"{LIST}{head.pk}/{view}/"


def listed_paths(response: object) -> list[str]:
    return [head.path for head in response.context["cl"].result_list]  # type: ignore[attr-defined]


def versions_of(head: MemoryFileHead) -> dict[int, str]:
    return {
        version.sequence: version.pk
        for version in MemoryFileVersion.objects.filter(scope_key=head.scope_key, path=head.path)
    }


def diff_classes(html: str) -> list[str]:
    return re.findall(r"cm-diff__line--(added|removed)", html)


# --- the list -----------------------------------------------------------------------------


def test_the_list_shows_the_standing_files_of_the_granted_agents_only() -> None:
    # given
    write("/memories/user.md", "Allergic to peanuts.")
    write("/memories/notes/trip.md", "Lisbon in May.")
    write("/memories/gone.md", "old")
    MemoryFiles().run(access(), {"command": "delete", "path": "/memories/gone.md"})
    write("/memories/rival.md", "secret", scope=MemoryScope("rival", user_id="ana"))
    client = staff()
    # when
    standing = client.get(LIST)
    deleted = client.get(LIST, {"state": "deleted"})
    # then
    assert standing.status_code == 200
    assert listed_paths(standing) == ["/memories/notes/trip.md", "/memories/user.md"]
    assert listed_paths(deleted) == ["/memories/gone.md"]
    assert "/memories/rival.md" not in client.get(LIST, {"state": "all"}).content.decode()
    assert "Memory files" in standing.content.decode()


def test_the_list_filters_by_path_scope_and_user() -> None:
    # given
    write("/memories/notes/trip.md", "Lisbon")
    write("/memories/notes_old.md", "x")
    write("/memories/bob.md", "y", scope=BOB)
    write("/memories/shared.md", "z", scope=MemoryScope("concierge"))
    client = staff()
    # when / then
    assert listed_paths(client.get(LIST, {"path": "/memories/notes"})) == [
        "/memories/notes/trip.md"
    ]
    assert listed_paths(client.get(LIST, {"path": "/memories/notes/trip.md"})) == [
        "/memories/notes/trip.md"
    ]
    assert listed_paths(client.get(LIST, {"scope": "agent"})) == ["/memories/shared.md"]
    assert listed_paths(client.get(LIST, {"user_id": "bob"})) == ["/memories/bob.md"]
    assert len(listed_paths(client.get(LIST, {"scope": "user"}))) == 3


def test_the_path_filter_reads_a_path_by_the_rule_of_memory_paths() -> None:
    # given a file written with a composed accent
    write("/memories/caf\u00e9/menu.md", "espresso")
    write("/memories/other.md", "x")
    client = staff()
    # when
    decomposed = client.get(LIST, {"path": "/memories/cafe\u0301/"})
    refused = client.get(LIST, {"path": "/memories/\u202eevil"})
    # then the same file is found whatever the form, and a path no file can have lists none
    assert listed_paths(decomposed) == ["/memories/caf\u00e9/menu.md"]
    assert listed_paths(refused) == []
    assert [str(m) for m in refused.context["messages"]] == [
        "Path /memories/\\u202eevil contains a bidirectional control character (U+202E), "
        "which makes a name read otherwise than it is; memory paths cannot hold one."
    ]


def test_a_grant_of_some_users_shows_only_their_files() -> None:
    # given
    mine = write("/memories/ana.md", "a")
    bobs = write("/memories/bob.md", "b", scope=BOB)
    client = staff("redact_memoryfileversion", users=["ana"])
    # when
    listed = listed_paths(client.get(LIST))
    # then
    assert listed == ["/memories/ana.md"]
    assert client.get(page_of(mine)).status_code == 200
    assert client.get(page_of(bobs)).status_code == 302  # "does not exist", as Django says
    assert client.post(page_of(bobs, "redact"), {"confirmed": "yes"}).status_code == 404
    assert MemoryFileVersion.objects.get(path="/memories/bob.md").content == "b"


def test_files_are_neither_added_changed_nor_deleted_by_hand() -> None:
    # given
    head = write("/memories/user.md", "a")
    client = staff("redact_memoryfileversion")
    # when / then
    assert client.get(f"{LIST}add/").status_code == 403
    assert client.post(page_of(head, "delete"), {"post": "yes"}).status_code == 403
    page = client.get(page_of(head)).content.decode()
    assert 'name="_save"' not in page
    assert client.post(page_of(head), {"path": "/memories/other.md"}).status_code == 403
    assert MemoryFileVersion.objects.count() == 1


def test_hostile_paths_and_contents_are_escaped_in_the_list_and_on_the_page() -> None:
    # given
    head = write(HOSTILE_PATH, "hello\n", f"hello\n{HOSTILE_LINE}\n")
    client = staff()
    # when
    listing = client.get(LIST).content.decode()
    page = client.get(page_of(head)).content.decode()
    unified = client.get(page_of(head), {"view": "unified"}).content.decode()
    # then
    for html in (listing, page, unified):
        assert "<img src=x" not in html
        assert "<script>alert(1)" not in html
        assert "&lt;img src=x onerror=alert(2)&gt;" in html
    for html in (page, unified):
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# --- a file's page ------------------------------------------------------------------------


def test_the_page_lists_every_version_and_shows_the_last_change_by_default() -> None:
    # given
    head = write("/memories/user.md", "one\ntwo\n", "one\nthree\n")
    client = staff()
    # when
    response = client.get(page_of(head))
    # then
    html = response.content.decode()
    rows = response.context["versions"]
    assert [row.version.sequence for row in rows] == [1, 2]
    assert [row.size for row in rows] == [8, 10]
    comparison = response.context["comparison"]
    assert (comparison.old.version.sequence, comparison.new.version.sequence) == (1, 2)
    assert diff_classes(html).count("removed") == 1 and diff_classes(html).count("added") == 1
    assert "/memories/user.md #1 → /memories/user.md #2" in html
    sha = MemoryFileVersion.objects.get(path="/memories/user.md", sequence=2).sha256
    assert f'title="{sha}"' in html


def test_any_two_versions_are_compared_unified_or_side_by_side() -> None:
    # given
    head = write("/memories/user.md", "a\nb\n", "a\nb\nc\n", "b\nc\nd\n")
    ids = versions_of(head)
    client = staff()
    # when
    unified = client.get(page_of(head), {"from": ids[1], "to": ids[3], "view": "unified"})
    split = client.get(page_of(head), {"from": ids[3], "to": ids[1]})
    # then
    assert unified.context["comparison"].diff.added == 2
    assert unified.context["comparison"].diff.removed == 1
    html = unified.content.decode()
    assert re.search(r'cm-diff__line--removed">.*?<td class="cm-diff__text">a</td>', html, re.S)
    assert re.search(r'cm-diff__line--added">.*?<td class="cm-diff__text">d</td>', html, re.S)
    assert "cm-diff--unified" in html
    reverse = split.content.decode()
    assert "cm-diff--split" in reverse
    assert split.context["comparison"].diff.added == 1  # "a" comes back
    assert split.context["comparison"].diff.removed == 2


def test_a_version_of_another_file_cannot_be_named_for_the_diff() -> None:
    # given
    head = write("/memories/user.md", "mine 1", "mine 2")
    other = write("/memories/bob.md", "bob's secret", scope=BOB)
    client = staff(users=["ana"])
    # when
    response = client.get(
        page_of(head), {"from": versions_of(other)[1], "to": versions_of(other)[1]}
    )
    # then the default pair is shown, nothing of the other file
    assert "bob&#x27;s secret" not in response.content.decode()
    assert "bob's secret" not in response.content.decode()
    assert response.context["comparison"].old.version.sequence == 1


def test_a_renamed_file_shows_the_versions_of_its_old_path() -> None:
    # given
    write("/memories/draft.md", "v1\n", "v2\n")
    MemoryFiles().run(
        access(),
        {"command": "rename", "old_path": "/memories/draft.md", "new_path": "/memories/final.md"},
    )
    head = MemoryFileHead.objects.get(path="/memories/final.md")
    client = staff()
    # when
    response = client.get(page_of(head))
    # then
    rows = response.context["versions"]
    assert [(row.version.path, row.version.renamed_from) for row in rows] == [
        ("/memories/draft.md", None),
        ("/memories/draft.md", None),
        ("/memories/final.md", "/memories/draft.md"),
    ]
    assert response.context["comparison"].diff.identical
    assert "The two versions hold the same text." in response.content.decode()


def test_a_deletion_is_shown_as_one() -> None:
    # given
    write("/memories/gone.md", "bye\n")
    MemoryFiles().run(access(), {"command": "delete", "path": "/memories/gone.md"})
    head = MemoryFileHead.objects.get(path="/memories/gone.md")
    # when
    response = staff().get(page_of(head))
    # then
    rows = response.context["versions"]
    assert [row.deleted for row in rows] == [False, True]
    assert response.context["comparison"].diff.removed == 1
    assert "#2 is a deletion." in response.content.decode()


# --- redaction ------------------------------------------------------------------------------


def test_without_the_permission_there_is_no_button_and_a_forged_post_is_refused() -> None:
    # given
    head = write("/memories/user.md", "passport 123", "passport 456")
    client = staff()
    # when
    page = client.get(page_of(head)).content.decode()
    asked = client.get(page_of(head, "redact"))
    forged = client.post(page_of(head, "redact"), {"confirmed": "yes", "reason": "x"})
    # then
    assert 'data-action="redact"' not in page
    assert asked.status_code == 403
    assert forged.status_code == 403
    assert not MemoryFileVersion.objects.filter(redaction__isnull=False).exists()
    assert not LogEntry.objects.exists()


def test_redaction_is_confirmed_then_done_and_logged() -> None:
    # given
    head = write("/memories/user.md", "passport 123", "passport 456")
    kept = write("/memories/other.md", "keep me")
    client = staff("redact_memoryfileversion")
    # when: the button leads to a confirmation, which changes nothing
    page = client.get(page_of(head)).content.decode()
    confirm = client.get(page_of(head, "redact"))
    unconfirmed = client.post(page_of(head, "redact"), {"reason": "erasure request"})
    # then
    assert 'data-action="redact"' in page
    assert confirm.status_code == 200 and b'name="confirmed"' in confirm.content
    assert unconfirmed.status_code == 200
    assert not MemoryFileVersion.objects.filter(redaction__isnull=False).exists()
    # when: confirmed
    done = client.post(
        page_of(head, "redact"), {"confirmed": "yes", "reason": "erasure <b>request</b>"}
    )
    # then
    assert done.status_code == 302 and done["Location"].endswith(page_of(head))
    contents = dict(
        MemoryFileVersion.objects.values_list("sequence", "content").filter(
            path="/memories/user.md"
        )
    )
    assert contents == {1: "[redacted]", 2: "[redacted]"}
    assert MemoryFileVersion.objects.get(path=kept.path).content == "keep me"
    entry = LogEntry.objects.get()
    assert entry.object_id == str(head.pk)
    assert entry.user.username == "desk"
    assert entry.get_change_message() == "redacted 2 versions: erasure <b>request</b>"
    after = client.get(page_of(head)).content.decode()
    assert "erasure &lt;b&gt;request&lt;/b&gt;" in after
    assert "erasure <b>" not in after
    assert 'data-action="redact"' not in after  # nothing left to redact


def test_redaction_in_every_scope_reaches_the_agents_other_scopes_within_the_grants() -> None:
    # given the same path for ana and bob, and a staff user granted every user
    head = write("/memories/user.md", "ana's")
    write("/memories/user.md", "bob's", scope=BOB)
    write("/memories/user.md", "rival's", scope=MemoryScope("rival", user_id="ana"))
    client = staff("redact_memoryfileversion")
    # when
    client.post(page_of(head, "redact"), {"confirmed": "yes", "every_scope": "yes"})
    # then
    contents = dict(MemoryFileVersion.objects.values_list("content", "agent_id"))
    assert contents == {"[redacted]": "concierge", "rival's": "rival"}
    assert MemoryFileVersion.objects.filter(content="[redacted]").count() == 2
    assert "in every scope of the agent" in LogEntry.objects.get().get_change_message()


# --- the diff -------------------------------------------------------------------------------


def test_diff_texts_groups_changes_in_hunks_with_line_numbers() -> None:
    old = "".join(f"line {n}\n" for n in range(1, 21))
    new = old.replace("line 2\n", "line two\n").replace("line 19\n", "")
    diff = diff_texts(old, new)
    assert [hunk.header for hunk in diff.hunks] == ["@@ -1,5 +1,5 @@", "@@ -16,5 +16,4 @@"]
    first = diff.hunks[0].lines
    assert [(line.kind, line.old_number, line.new_number) for line in first[:3]] == [
        (SAME, 1, 1),
        (REMOVED, 2, None),
        (ADDED, None, 2),
    ]
    pair = diff.hunks[0].rows[1]
    assert (pair.old.text, pair.new.text) == ("line 2", "line two")  # type: ignore[union-attr]
    lone = [row for row in diff.hunks[1].rows if row.new is None]
    assert [row.old.text for row in lone] == ["line 19"]  # type: ignore[union-attr]
    assert (diff.added, diff.removed) == (1, 2)


def test_diff_texts_of_a_deletion_a_creation_and_too_many_lines() -> None:
    assert diff_texts(None, "a\nb").added == 2
    assert diff_texts("a\n", None).removed == 1
    assert diff_texts("same", "same").identical
    assert diff_texts("a\n" * 30, "b\n", max_lines=20).too_large
    # Only "\n" ends a line: a form feed or a line separator is part of its line.
    assert lines_of("a\x0cb\u2028c\nd\n") == ["a\x0cb\u2028c", "d"]


def test_a_grant_of_some_users_hides_the_wider_versions_a_file_was_made_from() -> None:
    # given an agent-wide file that ana's run changed (the change stands in ana's scope)
    write("/memories/house.md", "Quiet hours after 22:00.\n", scope=MemoryScope("concierge"))
    MemoryFiles().run(
        access(),
        {
            "command": "str_replace",
            "path": "/memories/house.md",
            "old_str": "22:00",
            "new_str": "23:00",
        },
    )
    head = MemoryFileHead.objects.get(path="/memories/house.md", user_id="ana")
    # when
    everyone = staff(name="lead").get(page_of(head))
    anas = staff(users=["ana"]).get(page_of(head))
    # then
    assert [row.version.user_id for row in everyone.context["versions"]] == [None, "ana"]
    assert "a wider scope" in everyone.content.decode()
    assert [row.version.user_id for row in anas.context["versions"]] == ["ana"]
    assert "22:00" not in anas.content.decode()
    assert anas.context["comparison"] is None


def test_the_versions_are_listed_without_reading_their_content() -> None:
    # given
    head = write("/memories/user.md", "a" * 1000, "b" * 2000)
    # when
    rows = staff().get(page_of(head)).context["versions"]
    # then their sizes come from the database, their texts stay there
    assert [row.size for row in rows] == [1000, 2000]
    assert all("content" in row.version.get_deferred_fields() for row in rows)
