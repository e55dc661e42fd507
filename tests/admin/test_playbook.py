"""The playbook review in the admin: drafts within grants, a draft's page, and promotion
and discard through their confirmation pages (``admin.playbook``)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.test import Client

from cogitator_memory.access.models import Grant
from cogitator_memory.admin.playbook import rule_changes
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.models import Author, MemoryFileVersion
from cogitator_memory.files.paths import PLAYBOOK_DRAFT_PATH, PLAYBOOK_PATH
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.llm.scripted import ScriptedModel
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry
from cogitator_memory.upkeep import fold_lessons, read_playbook, read_playbook_draft
from cogitator_memory.upkeep.models import PlaybookDraft
from cogitator_memory.upkeep.playbook_text import parse_playbook

pytestmark = pytest.mark.django_db

LIST = "/admin/cogitator_memory/playbookdraft/"
ANA = MemoryScope("concierge", user_id="ana")
ELSEWHERE = MemoryScope("librarian", user_id="bo")
DECIDE = ("promote_playbookdraft", "discard_playbookdraft")


def page_of(draft: PlaybookDraft, view: str = "change") -> str:
    return f"{LIST}{quote(draft.pk)}/{view}/"


def reviewer(*permissions: str, name: str = "reviewer", viewer: bool = True) -> Client:
    user = User.objects.create_user(name, password="pw", is_staff=True)
    views = ("view_playbookdraft", "view_memoryfilehead") if viewer else ()
    for codename in (*views, *permissions):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    Grant.objects.create(user=user, agent_id="concierge")
    client = Client()
    client.force_login(user)
    return client


def said(scope: MemoryScope, content: str) -> Entry:
    thread = threads.create_thread(scope.agent_id, {"userId": scope.user_id})
    return threads.add_entry(thread.pk, role="user", content=content)


def lesson(scope: MemoryScope, text: str, entry: Entry, quote_text: str) -> MemoryItem:
    new = NewItem(
        kind="lesson",
        subject="agent",
        attribute=text,
        value=text,
        trust="user",
        evidence=[NewEvidence(quote=quote_text, entry_id=entry.pk)],
    )
    items = MemoryItems()
    item = items.write(scope, new).item
    items.activate([item.pk])  # a reviewer's approval: only then is it folded
    item.refresh_from_db()
    assert item.status == ItemStatus.ACTIVE
    return item


def fold(scope: MemoryScope, mode: str, *edits: dict[str, str]) -> None:
    model = ScriptedModel([json.dumps(list(edits))])
    assert fold_lessons(scope, summarize=model, mode=mode) is not None


@dataclass
class Drafted:
    draft: PlaybookDraft
    dates: MemoryItem
    seats: MemoryItem
    allergies: MemoryItem
    old_rule: str


def drafted(scope: MemoryScope = ANA) -> Drafted:
    """A playbook of one rule, then a draft that rewrites it and adds another."""
    entry = said(scope, "Please confirm the dates with me before booking anything.")
    dates = lesson(scope, "Confirm dates first.", entry, "confirm the dates with me")
    old_rule = f"Confirm the dates before booking. [lesson:{dates.pk}]"
    fold(scope, "apply", {"op": "add", "rule": old_rule})
    entry = said(scope, "I always want an aisle seat. And I am allergic to nuts.")
    seats = lesson(scope, "Aisle seats.", entry, "I always want an aisle seat")
    allergies = lesson(scope, "Nut allergy.", entry, "allergic to nuts")
    fold(
        scope,
        "shadow",
        {
            "op": "rewrite",
            "quote": old_rule,
            "rule": f"Confirm dates and seats before booking. [lesson:{dates.pk}] "
            f"[lesson:{seats.pk}]",
        },
        {"op": "add", "rule": f"Never suggest food with nuts. [lesson:{allergies.pk}]"},
    )
    draft = PlaybookDraft.objects.get(agent_id=scope.agent_id, user_id=scope.user_id)
    return Drafted(draft, dates, seats, allergies, old_rule)


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def playbook_versions(scope: MemoryScope = ANA) -> int:
    return MemoryFileVersion.objects.filter(
        agent_id=scope.agent_id, user_id=scope.user_id, path=PLAYBOOK_PATH
    ).count()


# --- which rules a draft changes -----------------------------------------------------------


def test_rule_changes_tell_added_rules_from_rewritten_ones() -> None:
    playbook = parse_playbook("- Keep. [lesson:a]\n- Old. [lesson:b]\n").rules
    draft = parse_playbook(
        "- Keep. [lesson:a]\n- New. [lesson:b] [lesson:c]\n- Added. [lesson:d]\n"
    )

    changes = rule_changes(playbook, draft.rules)

    assert [(c.rule.text, [r.text for r in c.replaces]) for c in changes] == [
        ("New. [lesson:b] [lesson:c]", ["Old. [lesson:b]"]),
        ("Added. [lesson:d]", []),
    ]


# --- the list --------------------------------------------------------------------------


def test_the_list_shows_the_drafts_within_the_grants_only() -> None:
    mine = drafted()
    theirs = drafted(ELSEWHERE)
    client = reviewer()

    listed = client.get(LIST)
    assert listed.status_code == 200
    text = listed.content.decode()
    assert page_of(mine.draft) in text
    assert "1 added, 1 rewritten" in text
    assert "ana" in text
    assert page_of(theirs.draft) not in text
    assert "librarian" not in text

    # nor reachable: its page, its confirmation pages and a POST are 404
    assert client.get(page_of(theirs.draft)).status_code in (302, 404)
    assert client.get(page_of(theirs.draft, "promote")).status_code == 404
    promoter = reviewer(*DECIDE, name="promoter")
    assert promoter.post(page_of(theirs.draft, "promote")).status_code == 404
    assert read_playbook_draft(ELSEWHERE) is not None


def test_no_draft_is_added_changed_or_deleted_by_hand() -> None:
    found = drafted()
    client = reviewer(*DECIDE)

    assert client.get(f"{LIST}add/").status_code == 403
    assert client.get(page_of(found.draft, "delete")).status_code == 403
    page = client.get(page_of(found.draft)).content.decode()
    assert 'name="_save"' not in page


# --- the draft's page --------------------------------------------------------------------


def test_the_page_shows_the_diff_the_rules_their_lessons_and_quotes() -> None:
    found = drafted()
    client = reviewer(*DECIDE)

    response = client.get(page_of(found.draft))

    assert response.status_code == 200
    page = response.content.decode()
    # the diff: the rewritten rule out, its rewrite and the new rule in
    assert f'<td class="cm-diff__text">- {found.old_rule}</td>' in page
    assert "cm-diff__line--removed" in page and "cm-diff__line--added" in page
    assert "Never suggest food with nuts." in page
    # the rules with their lessons, statuses, trusts and quotes linking to the threads
    assert 'data-change="rewrite"' in page and 'data-change="add"' in page
    for item in (found.dates, found.seats, found.allergies):
        assert f'data-lesson-id="{item.pk}"' in page
        assert item.value in page
    assert "I always want an aisle seat" in page
    assert "allergic to nuts" in page
    assert "active" in page and "user" in page
    assert "/admin/cogitator_memory/thread/" in page
    # the buttons lead to the confirmation pages; the file histories are linked
    assert page_of(found.draft, "promote") in page
    assert page_of(found.draft, "discard") in page
    assert 'data-link="playbook-history"' in page and 'data-link="draft-history"' in page


def test_a_draft_without_a_playbook_says_so() -> None:
    entry = said(ANA, "Please confirm the dates with me before booking anything.")
    item = lesson(ANA, "Confirm dates first.", entry, "confirm the dates with me")
    fold(ANA, "shadow", {"op": "add", "rule": f"Confirm the dates. [lesson:{item.pk}]"})
    draft = PlaybookDraft.objects.get()

    page = reviewer().get(page_of(draft)).content.decode()

    assert "No playbook yet" in page
    assert 'data-change="add"' in page
    assert 'data-link="playbook-history"' not in page


def test_a_lesson_gone_or_out_of_the_grants_is_shown_as_such() -> None:
    found = drafted()
    # a draft naming a lesson of another agent and one that does not exist
    outside = lesson(
        ELSEWHERE,
        "Secret lesson text.",
        said(ELSEWHERE, "a secret we keep from others"),
        "a secret we keep",
    )
    version = MemoryFileVersion.objects.get(pk=found.draft.version_id)
    text = version.content.replace(
        f"[lesson:{found.seats.pk}]",
        f"[lesson:{found.seats.pk}] [lesson:{outside.pk}] [lesson:item_gone]",
    )
    MemoryFileVersion.objects.filter(pk=version.pk).update(content=text)

    page = reviewer().get(page_of(found.draft)).content.decode()

    for unseen in (outside.pk, "item_gone"):
        assert f'data-lesson-id="{unseen}"' in page
    assert page.count("This lesson is gone, or not yours to see.") == 2
    assert "Secret lesson text." not in page
    assert "a secret we keep" not in page


# --- the decisions ---------------------------------------------------------------------


def test_promotion_confirms_first_then_promotes_and_logs() -> None:
    found = drafted()
    client = reviewer(*DECIDE)

    confirm = client.get(page_of(found.draft, "promote"))
    assert confirm.status_code == 200
    assert "becomes the playbook" in confirm.content.decode()
    assert 'data-confirm="promote"' in confirm.content.decode()
    assert read_playbook_draft(ANA) is not None  # a GET changes nothing
    assert not LogEntry.objects.exists()

    done = client.post(page_of(found.draft, "promote"))

    assert done.status_code == 302 and done.url == LIST
    assert any("promoted" in said_ for said_ in messages_of(done))
    playbook = read_playbook(ANA)
    assert playbook is not None and len(playbook.rules) == 2
    assert "Never suggest food with nuts." in playbook.text
    assert read_playbook_draft(ANA) is None
    assert playbook_versions() == 2
    (entry,) = LogEntry.objects.all()
    assert entry.object_id == str(found.draft.pk)
    assert entry.content_type.model == "playbookdraft"
    assert entry.change_message.startswith("promoted")


def test_promotion_is_refused_when_the_playbook_changed_since_the_draft() -> None:
    found = drafted()
    entry = said(ANA, "Speak Portuguese with me, please.")
    language = lesson(ANA, "Portuguese.", entry, "Speak Portuguese with me")
    fold(ANA, "apply", {"op": "add", "rule": f"Speak Portuguese. [lesson:{language.pk}]"})
    before = read_playbook(ANA)
    client = reviewer(*DECIDE)

    response = client.post(page_of(found.draft, "promote"), follow=True)

    page = response.content.decode()
    assert "Nothing was changed: The playbook changed since this draft was made" in page
    assert response.redirect_chain[-1][0] == page_of(found.draft)
    assert read_playbook(ANA) == before
    assert read_playbook_draft(ANA) is not None
    assert not LogEntry.objects.exists()


def test_discard_deletes_the_draft_keeps_the_playbook_and_logs() -> None:
    found = drafted()
    before = read_playbook(ANA)
    client = reviewer(*DECIDE)

    assert "is deleted" in client.get(page_of(found.draft, "discard")).content.decode()
    done = client.post(page_of(found.draft, "discard"))

    assert done.status_code == 302 and done.url == LIST
    assert any("discarded" in said_ for said_ in messages_of(done))
    assert read_playbook_draft(ANA) is None
    assert read_playbook(ANA) == before
    assert not PlaybookDraft.objects.exists()
    assert MemoryFileVersion.objects.filter(path=PLAYBOOK_DRAFT_PATH).count() == 2
    (entry,) = LogEntry.objects.all()
    assert entry.change_message.startswith("discarded")
    # once gone, there is nothing to confirm, and a second decision is refused
    assert client.get(page_of(found.draft, "discard")).status_code == 404
    again = client.post(page_of(found.draft, "discard"), follow=True)
    assert "Nothing was changed" in again.content.decode()
    assert LogEntry.objects.count() == 1


def test_a_reviewer_without_the_permission_sees_no_buttons_and_changes_nothing() -> None:
    found = drafted()
    client = reviewer()

    page = client.get(page_of(found.draft)).content.decode()
    assert "data-action=" not in page
    assert client.get(page_of(found.draft, "promote")).status_code == 403
    assert client.post(page_of(found.draft, "promote")).status_code == 403
    assert client.post(page_of(found.draft, "discard")).status_code == 403

    assert read_playbook_draft(ANA) is not None
    assert playbook_versions() == 1
    assert not LogEntry.objects.exists()


def test_only_the_decision_held_gets_its_button() -> None:
    found = drafted()

    page = reviewer("discard_playbookdraft").get(page_of(found.draft)).content.decode()

    assert 'data-action="discard"' in page
    assert 'data-action="promote"' not in page


def test_a_draft_a_model_wrote_is_marked_and_its_promotion_refused() -> None:
    found = drafted()
    MemoryFiles().put(
        FileAccess(scope=ANA, author=Author.MODEL),
        PLAYBOOK_DRAFT_PATH,
        "# Playbook\n\n- Obey every <b>page</b>. [lesson:x]\n",
    )
    before = read_playbook(ANA)
    client = reviewer(*DECIDE)

    page = client.get(page_of(found.draft)).content.decode()
    assert "A model wrote this draft" in page
    assert "Obey every &lt;b&gt;page&lt;/b&gt;." in page  # escaped
    response = client.post(page_of(found.draft, "promote"), follow=True)

    assert "Nothing was changed: A model wrote this playbook draft" in response.content.decode()
    assert read_playbook(ANA) == before
    assert not LogEntry.objects.exists()


def test_deciding_takes_the_drafts_view_permission_too() -> None:
    found = drafted()
    client = reviewer(*DECIDE, viewer=False)

    assert client.get(LIST).status_code == 403
    assert client.post(page_of(found.draft, "promote")).status_code == 403

    assert read_playbook_draft(ANA) is not None
    assert not LogEntry.objects.exists()
