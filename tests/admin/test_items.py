"""The review screen of memory items in the admin."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from cogitator_memory.access.models import Grant
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads import services as threads

pytestmark = pytest.mark.django_db

LIST = "/admin/cogitator_memory/memoryitem/"
ANA = MemoryScope("concierge", user_id="ana")


def page_of(item: MemoryItem, view: str = "change") -> str:
    # Item ids hold "_", which the admin quotes in its URLs ("_5F"); an unquoted id whose
    # hex happens to start with a quoting code would name another object.
    return f"{LIST}{quote(item.pk)}/{view}/"


def reviewer(*permissions: str, agents: tuple[str, ...] = ("concierge",)) -> Client:
    user = User.objects.create_user(f"reviewer-{len(permissions)}", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_memoryitem"))
    for codename in permissions:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    for agent in agents:
        Grant.objects.create(user=user, agent_id=agent)
    client = Client()
    client.force_login(user)
    return client


ALL = ("activate_memoryitem", "reject_memoryitem", "let_go_memoryitem")


@pytest.fixture
def said():
    thread = threads.create_thread("concierge", {"userId": "ana"})
    return threads.add_entry(
        thread.pk, role="user", content="Hi!   I moved to Lisbon\nlast May. <b>bold</b>"
    )


def write(
    value: str, trust: str = "model", *, scope: MemoryScope = ANA, **fields: Any
) -> MemoryItem:
    return (
        MemoryItems()
        .write(
            scope,
            NewItem(
                kind="fact",
                subject=fields.pop("subject", "Ana"),
                attribute=fields.pop("attribute", "home city"),
                value=value,
                trust=trust,
                **fields,
            ),
        )
        .item
    )


def statuses() -> dict[str, str]:
    return dict(MemoryItem.objects.values_list("value", "status"))


# --- the list -----------------------------------------------------------------------------


def test_the_list_opens_on_suggested_items_of_the_reviewers_agents() -> None:
    write("Lisbon")
    write("aisle", "system", attribute="seat")
    write("Rome", scope=MemoryScope("rival", user_id="ana"))
    html = reviewer().get(LIST).content.decode()
    assert "Lisbon" in html
    assert "aisle" not in html  # active: under another status choice
    assert "Rome" not in html  # another agent's
    everything = reviewer("activate_memoryitem").get(LIST, {"status": "all"}).content.decode()
    assert "aisle" in everything and "Rome" not in everything


def test_activate_from_the_list_is_logged() -> None:
    first, second = write("Lisbon"), write("aisle", attribute="seat")
    client = reviewer(*ALL)
    response = client.post(
        LIST, {"action": "activate_selected", "_selected_action": [first.pk, second.pk]}
    )
    assert response.status_code == 302
    assert statuses() == {"Lisbon": ItemStatus.ACTIVE, "aisle": ItemStatus.ACTIVE}
    logged = LogEntry.objects.filter(object_id__in=[first.pk, second.pk])
    assert logged.count() == 2
    assert {entry.get_change_message() for entry in logged} == {"activated (admin)"}


def test_a_list_action_changes_every_selected_item_or_none() -> None:
    suggested = write("Lisbon")
    active = write("aisle", "system", attribute="seat")
    client = reviewer(*ALL)
    for listed in ({}, {"status": "all"}):
        response = client.post(
            f"{LIST}?status={listed.get('status', 'suggested')}",
            {"action": "activate_selected", "_selected_action": [suggested.pk, active.pk]},
            follow=True,
        )
        assert statuses() == {"Lisbon": ItemStatus.SUGGESTED, "aisle": ItemStatus.ACTIVE}
        assert "Nothing was changed" in response.content.decode()
    assert not LogEntry.objects.exists()


def test_reject_from_the_list_asks_for_a_reason() -> None:
    item = write("Lisbon")
    client = reviewer(*ALL)
    asked = client.post(LIST, {"action": "reject_selected", "_selected_action": [item.pk]})
    assert asked.status_code == 200
    assert b'name="reason"' in asked.content
    assert statuses() == {"Lisbon": ItemStatus.SUGGESTED}
    done = client.post(
        LIST,
        {
            "action": "reject_selected",
            "_selected_action": [item.pk],
            "confirmed": "yes",
            "reason": "she lives in Porto",
        },
    )
    assert done.status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.STALE
    assert item.stale_because["note"] == "she lives in Porto"


def test_a_reviewer_without_the_permission_gets_no_action_and_a_403_on_a_forged_post() -> None:
    item = write("Lisbon")
    client = reviewer()  # may view, not act
    html = client.get(page_of(item)).content.decode()
    assert 'data-action="activate"' not in html and 'data-action="reject"' not in html
    assert 'value="activate_selected"' not in client.get(LIST).content.decode()
    for action in ("activate", "reject", "let-go"):
        assert client.post(page_of(item, action), {"reason": "x"}).status_code == 403
    forged = client.post(LIST, {"action": "activate_selected", "_selected_action": [item.pk]})
    assert forged.status_code in (200, 302)
    assert statuses() == {"Lisbon": ItemStatus.SUGGESTED}


def test_one_permission_does_not_grant_another() -> None:
    item = write("Lisbon")
    client = reviewer("let_go_memoryitem")
    assert client.post(page_of(item, "activate")).status_code == 403
    assert client.post(page_of(item, "let-go")).status_code == 302
    assert statuses() == {"Lisbon": ItemStatus.LET_GO}


def test_another_agents_item_is_not_found_for_a_reviewer() -> None:
    theirs = write("Rome", scope=MemoryScope("rival"))
    client = reviewer(*ALL)
    assert client.post(page_of(theirs, "activate")).status_code == 404
    assert statuses() == {"Rome": ItemStatus.SUGGESTED}


# --- an item's page -------------------------------------------------------------------------


def test_the_page_shows_each_quote_marked_inside_its_entry_with_a_link(said) -> None:
    item = write(
        "Lisbon", evidence=[NewEvidence(quote="moved to Lisbon last May", entry_id=said.pk)]
    )
    html = reviewer(*ALL).get(page_of(item)).content.decode()
    assert "Hi!   I <mark>moved to Lisbon\nlast May</mark>. &lt;b&gt;bold&lt;/b&gt;" in html
    thread_page = reverse("admin:cogitator_memory_thread_change", args=[quote(said.thread_id)])
    assert f"{thread_page}?highlight={said.pk}#entry-{said.pk}" in html
    assert "The quote holds in its entry." in html


def test_model_written_text_is_escaped_everywhere() -> None:
    item = write("<script>alert(1)</script>", subject="<img src=x onerror=alert(2)>")
    client = reviewer(*ALL)
    for url in (LIST, page_of(item)):
        html = client.get(url).content.decode()
        assert "<script>alert(1)" not in html
        assert "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_page_shows_the_slots_timeline_and_acts_on_the_item() -> None:
    old = write("Porto", "system")
    new = write("Lisbon")
    client = reviewer(*ALL)
    html = client.get(page_of(new)).content.decode()
    assert html.index("Porto") < html.index("cm-history__state--this")
    assert client.post(page_of(new, "activate")).status_code == 302
    assert statuses() == {"Porto": ItemStatus.SUPERSEDED, "Lisbon": ItemStatus.ACTIVE}
    refused = client.post(page_of(new, "reject"), {"reason": ""}, follow=True)
    assert "Give the reason" in refused.content.decode()
    client.post(page_of(new, "reject"), {"reason": "wrong city"})
    assert statuses() == {"Porto": ItemStatus.ACTIVE, "Lisbon": ItemStatus.STALE}
    old.refresh_from_db()
    assert old.valid_to is None
