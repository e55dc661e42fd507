"""The review screen of memory items in the admin."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from cogitator_memory.access.models import Grant
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry

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


# --- what a reviewer reads ------------------------------------------------------------------


def test_the_list_shows_each_quote_with_who_said_it_and_when(said) -> None:
    # given
    item = write(
        "Lisbon", evidence=[NewEvidence(quote="moved to Lisbon last May", entry_id=said.pk)]
    )
    threads.add_entry(said.thread_id, role="assistant", content="Noted.")
    # when
    html = reviewer(*ALL).get(LIST).content.decode()
    # then
    assert item.pk in html
    assert "<q>moved to Lisbon last May</q>" in html
    assert f"— user, {said.created_at:%Y-%m-%d %H:%M}" in html


def test_rejected_items_have_their_own_filter() -> None:
    # given a rejected item, one stale for another reason, and a suggested one
    rejected, stale = write("Lisbon"), write("aisle", "system", attribute="seat")
    write("tea", attribute="drink")
    MemoryItems().reject([rejected.pk], "she lives in Porto")
    MemoryItems().mark_stale([stale.pk], {"reason": "entry_deleted"})
    client = reviewer(*ALL)
    # when
    listed = client.get(LIST, {"status": "rejected"})
    # then
    assert [row.pk for row in listed.context["cl"].result_list] == [rejected.pk]
    assert "?status=rejected" in client.get(LIST).content.decode()
    assert {row.pk for row in client.get(LIST, {"status": "stale"}).context["cl"].result_list} == {
        rejected.pk,
        stale.pk,
    }


def test_a_rejected_items_page_says_who_rejected_it_and_why_as_text() -> None:
    # given
    item = write("Lisbon")
    client = reviewer(*ALL)
    client.post(page_of(item, "reject"), {"reason": "she lives in <b>Porto</b>"})
    # when
    html = client.get(page_of(item)).content.decode()
    # then
    assert "Rejected by reviewer-3 on " in html
    assert ": she lives in &lt;b&gt;Porto&lt;/b&gt;</div>" in html
    # another reason reads as its words
    other = write("aisle", "system", attribute="seat")
    MemoryItems().mark_stale([other.pk], {"reason": "entry_deleted", "note": "gone"})
    assert "entry deleted: gone" in client.get(page_of(other)).content.decode()


def test_a_not_stale_items_page_has_no_why_stale_row() -> None:
    item = write("Lisbon")
    assert "field-why_stale" not in reviewer(*ALL).get(page_of(item)).content.decode()


def test_an_items_page_has_nothing_to_save_even_for_a_superuser(admin_client: Client) -> None:
    # given
    item = write("Lisbon")
    # when
    page = admin_client.get(page_of(item))
    # then: the decisions, and a close button instead of save buttons
    html = page.content.decode()
    assert page.status_code == 200
    for name in ("_save", "_continue", "_addanother"):
        assert f'name="{name}"' not in html
    assert "closelink" in html
    order = [html.index(f'data-action="{name}"') for name in ("activate", "reject", "let-go")]
    assert order == sorted(order)
    assert html.index('id="cm-reject-reason"') < html.index('data-action="reject"')
    # and a forged save changes nothing
    assert admin_client.post(page_of(item), {"value": "Porto"}).status_code == 403


def test_a_list_decision_says_what_it_did_and_why() -> None:
    first, second = write("Lisbon"), write("aisle", attribute="seat")
    response = reviewer(*ALL).post(
        LIST,
        {
            "action": "reject_selected",
            "_selected_action": [first.pk, second.pk],
            "confirmed": "yes",
            "reason": "  not said  ",
        },
        follow=True,
    )
    assert "2 memory items rejected, because: not said" in response.content.decode()
    assert {e.change_message for e in LogEntry.objects.all()} == {"rejected: not said (admin)"}


def test_a_list_rejection_without_a_reason_asks_again_and_changes_nothing() -> None:
    item = write("Lisbon")
    response = reviewer(*ALL).post(
        LIST,
        {
            "action": "reject_selected",
            "_selected_action": [item.pk],
            "confirmed": "yes",
            "reason": "   ",
        },
    )
    assert response.status_code == 200
    assert "Give the reason, a non-empty text of at most 1000 characters." in (
        response.content.decode()
    )
    assert statuses() == {"Lisbon": ItemStatus.SUGGESTED}


# --- the review queue on the admin index ----------------------------------------------------


def test_the_index_counts_the_suggested_items_within_the_reviewers_grants() -> None:
    # given two suggested items of the concierge, an active one, one of another agent
    write("Lisbon")
    write("aisle", attribute="seat")
    write("tea", "system", attribute="drink")
    write("Rome", scope=MemoryScope("rival", user_id="ana"))
    # when
    html = reviewer(*ALL).get("/admin/").content.decode()
    # then
    assert "<strong>2</strong> suggested memory items wait for review" in html
    assert f'href="{LIST}?status=suggested"' in html


def test_the_index_shows_no_queue_to_a_user_who_may_not_view_items() -> None:
    user = User.objects.create_user("clerk", password="pw", is_staff=True)
    client = Client()
    client.force_login(user)
    assert "cm-review-queue" not in client.get("/admin/").content.decode()


def test_the_list_reads_the_quotes_of_a_page_in_a_fixed_number_of_queries(said) -> None:
    # given
    client = reviewer(*ALL)

    def quoted(value: str) -> None:
        write(value, attribute=value, evidence=[NewEvidence(quote="Lisbon", entry_id=said.pk)])

    quoted("one")
    with CaptureQueriesContext(connection) as few:
        client.get(LIST)
    for value in ("two", "three", "four", "five"):
        quoted(value)
    # when
    with CaptureQueriesContext(connection) as more:
        response = client.get(LIST)
    # then
    assert len(response.context["cl"].result_list) == 5
    assert len(more.captured_queries) == len(few.captured_queries)
    # and the quoted entries' content is not read for the list
    entry_content = f'"{Entry._meta.db_table}"."content"'
    assert not [query for query in more.captured_queries if entry_content in query["sql"]]
