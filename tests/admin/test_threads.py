"""The thread admin: the list, the entry tree on a thread's page, checkout and rewind."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from cogitator_memory import signals
from cogitator_memory.access.models import Grant
from cogitator_memory.admin.threads import ThreadAdmin, build_entry_tree
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread
from tests.factories import create_branch

pytestmark = pytest.mark.django_db


@dataclass
class Trip:
    """A thread with two branches after the first question.

    question -> rome -> model_change (event) -> card (redacted)   (the other branch)
    question -> florence                                         (the active path)
    """

    thread: Thread
    question: Entry
    rome: Entry
    model_change: Entry
    card: Entry
    florence: Entry


@pytest.fixture
def trip() -> Trip:
    thread = services.create_thread(
        "agent-1", {"userId": "u-7", "topic": "travel"}, thread_id="trip"
    )
    question = services.add_entry(thread.id, role="user", content="Where should I go in spring?")
    rome = services.add_entry(
        thread.id, role="assistant", content=[{"type": "text", "text": "Rome, for the gardens."}]
    )
    model_change = services.add_entry(
        thread.id, type="model_change", event={"from": "small-model", "to": "large-model"}
    )
    card = services.add_entry(thread.id, role="user", content="My card number is 4111 1111")
    services.redact_entry(card.id, reason="card number")
    florence = services.add_entry(
        thread.id,
        role="assistant",
        content="Florence is quieter in spring.",
        parent_id=question.id,
    )
    thread.refresh_from_db()
    return Trip(thread, question, rome, model_change, card, florence)


@dataclass
class RenderedEntry:
    classes: set[str]
    branch: int
    text: str
    buttons: list[str]


class TreeParser(HTMLParser):
    """Collects each entry of the tree: its classes, the branch it sits on, its text and
    the buttons in its row."""

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[str, RenderedEntry] = {}
        self.branch_count = 0
        # Open <li> elements: ("branch", number) or ("entry", id) or ("other", "").
        self.open_items: list[tuple[str, str]] = []
        self.in_button = False

    def _current(self, kind: str) -> str | None:
        for item_kind, value in reversed(self.open_items):
            if item_kind == kind:
                return value
        return None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        classes = set((values.get("class") or "").split())
        if tag == "li" and "cm-branch" in classes:
            self.branch_count += 1
            self.open_items.append(("branch", str(self.branch_count)))
        elif tag == "li" and "cm-entry" in classes:
            entry_id = values["data-entry-id"] or ""
            branch = int(self._current("branch") or 0)
            self.entries[entry_id] = RenderedEntry(classes, branch, "", [])
            self.open_items.append(("entry", entry_id))
        elif tag == "li":
            self.open_items.append(("other", ""))
        elif tag == "button":
            self.in_button = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "li":
            self.open_items.pop()
        elif tag == "button":
            self.in_button = False

    def handle_data(self, data: str) -> None:
        entry_id = self._current("entry")
        if entry_id is None or not data.strip():
            return
        # Text of a nested branch belongs to the innermost entry only.
        if self.open_items and self.open_items[-1][0] == "branch":
            return
        if self.in_button:
            self.entries[entry_id].buttons.append(data.strip())
        else:
            self.entries[entry_id].text += " " + " ".join(data.split())


def rendered_tree(html: str) -> dict[str, RenderedEntry]:
    start = html.index('id="entry-tree"')
    parser = TreeParser()
    parser.feed(html[start : html.index("</section>", start)])
    return parser.entries


def change_url(thread: Thread) -> str:
    return reverse("admin:cogitator_memory_thread_change", args=[quote(thread.pk)])


def action_url(action: str, thread: Thread) -> str:
    return reverse(f"admin:cogitator_memory_thread_{action}", args=[quote(thread.pk)])


def leaf_of(thread: Thread) -> str | None:
    return Thread.objects.values_list("active_leaf_id", flat=True).get(pk=thread.pk)


def message_texts(response: object) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]  # type: ignore[attr-defined]


@pytest.fixture
def staff_client(django_user_model: type) -> Client:
    """A staff user who may view threads (not change them) and is granted agent-1."""
    user = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_thread"))
    Grant.objects.create(user=user, agent_id="agent-1")
    client = Client()
    client.force_login(user)
    return client


# --- the list --------------------------------------------------------------------------


def test_thread_list_search_finds_a_thread_by_a_metadata_value(admin_client: Client) -> None:
    # given
    services.create_thread("agent-1", {"userId": "alice-42"}, thread_id="t-alice")
    services.create_thread("agent-1", {"userId": "bob-17"}, thread_id="t-bob")
    # when
    response = admin_client.get(
        reverse("admin:cogitator_memory_thread_changelist"), {"q": "alice-42"}
    )
    # then
    ids = [thread.pk for thread in response.context["cl"].result_list]
    assert ids == ["t-alice"]


def test_thread_list_search_finds_a_thread_by_its_agent(admin_client: Client) -> None:
    # given
    services.create_thread("support-bot", thread_id="t-support")
    services.create_thread("sales-bot", thread_id="t-sales")
    # when
    response = admin_client.get(
        reverse("admin:cogitator_memory_thread_changelist"), {"q": "support"}
    )
    # then
    assert [thread.pk for thread in response.context["cl"].result_list] == ["t-support"]


def test_thread_list_filters_by_agent(admin_client: Client) -> None:
    # given
    services.create_thread("support-bot", thread_id="t-support")
    services.create_thread("sales-bot", thread_id="t-sales")
    # when
    response = admin_client.get(
        reverse("admin:cogitator_memory_thread_changelist"), {"agent_id": "sales-bot"}
    )
    # then
    assert [thread.pk for thread in response.context["cl"].result_list] == ["t-sales"]


def test_thread_list_narrows_by_the_year_of_the_update(admin_client: Client) -> None:
    # given
    services.create_thread("agent-1", thread_id="t-old")
    services.create_thread("agent-1", thread_id="t-new")
    Thread.objects.filter(pk="t-old").update(updated_at=datetime(2023, 5, 1, tzinfo=UTC))
    Thread.objects.filter(pk="t-new").update(updated_at=datetime(2025, 5, 1, tzinfo=UTC))
    # when
    response = admin_client.get(
        reverse("admin:cogitator_memory_thread_changelist"), {"updated_at__year": "2023"}
    )
    # then
    assert [thread.pk for thread in response.context["cl"].result_list] == ["t-old"]


def test_thread_list_shows_a_staff_user_only_the_threads_of_granted_agents(
    staff_client: Client,
) -> None:
    # given: the viewer is granted agent-1 only
    services.create_thread("agent-1", thread_id="t-mine")
    services.create_thread("agent-2", thread_id="t-theirs")
    # when
    response = staff_client.get(reverse("admin:cogitator_memory_thread_changelist"))
    # then
    assert [thread.pk for thread in response.context["cl"].result_list] == ["t-mine"]


def test_thread_list_offers_a_staff_user_no_filter_choice_of_another_agent(
    staff_client: Client,
) -> None:
    # given
    services.create_thread("agent-1", thread_id="t-mine")
    services.create_thread("secret-agent", thread_id="t-theirs")
    # when
    response = staff_client.get(reverse("admin:cogitator_memory_thread_changelist"))
    # then
    assert response.status_code == 200
    assert "secret-agent" not in response.content.decode()


def test_thread_page_of_an_agent_not_granted_is_answered_as_a_missing_thread(
    staff_client: Client,
) -> None:
    # given
    theirs = services.create_thread("agent-2", thread_id="t-theirs")
    missing_url = reverse("admin:cogitator_memory_thread_change", args=["t-none"])
    # when
    invisible = message_texts(staff_client.get(change_url(theirs), follow=True))
    missing = message_texts(staff_client.get(missing_url, follow=True))
    # then
    assert len(invisible) == 1
    assert invisible == [text.replace("t-none", "t-theirs") for text in missing]


def test_threads_cannot_be_added_by_hand(admin_client: Client) -> None:
    # when
    response = admin_client.get(reverse("admin:cogitator_memory_thread_add"))
    # then
    assert response.status_code == 403


# --- the thread's page: the tree -------------------------------------------------------


def test_thread_page_lists_both_branches(admin_client: Client, trip: Trip) -> None:
    # when
    tree = rendered_tree(admin_client.get(change_url(trip.thread)).content.decode())
    # then: every entry once, the two answers on different branches
    assert set(tree) == {
        e.pk for e in (trip.question, trip.rome, trip.model_change, trip.card, trip.florence)
    }
    assert tree[trip.rome.pk].branch != tree[trip.florence.pk].branch
    assert tree[trip.rome.pk].branch == tree[trip.card.pk].branch
    assert tree[trip.question.pk].branch not in {
        tree[trip.rome.pk].branch,
        tree[trip.florence.pk].branch,
    }


def test_thread_page_marks_the_active_path_from_root_to_leaf(
    admin_client: Client, trip: Trip
) -> None:
    # when
    tree = rendered_tree(admin_client.get(change_url(trip.thread)).content.decode())
    # then
    active = {entry_id for entry_id, entry in tree.items() if "cm-entry--active" in entry.classes}
    assert active == {trip.question.pk, trip.florence.pk}
    assert "cm-entry--leaf" in tree[trip.florence.pk].classes
    assert "active leaf" in tree[trip.florence.pk].text


def test_thread_page_shows_an_event_entry_as_an_event_with_its_payload(
    admin_client: Client, trip: Trip
) -> None:
    # when
    tree = rendered_tree(admin_client.get(change_url(trip.thread)).content.decode())
    # then
    event = tree[trip.model_change.pk]
    assert "cm-entry--event" in event.classes
    assert "event: model change" in event.text
    assert '"to": "large-model"' in event.text.replace("&quot;", '"')


def test_thread_page_marks_a_redacted_entry(admin_client: Client, trip: Trip) -> None:
    # when
    html = admin_client.get(change_url(trip.thread)).content.decode()
    tree = rendered_tree(html)
    # then
    card = tree[trip.card.pk]
    assert "cm-entry--redacted" in card.classes
    assert "redacted" in card.text
    assert "4111" not in html
    assert "card number" in html  # the reason, in the badge's title


def test_thread_page_shows_seq_role_and_a_preview_of_each_entry(
    admin_client: Client, trip: Trip
) -> None:
    # when
    tree = rendered_tree(admin_client.get(change_url(trip.thread)).content.decode())
    # then
    rome = tree[trip.rome.pk].text
    assert f"#{trip.rome.seq}" in rome
    assert "assistant" in rome
    assert "Rome, for the gardens." in rome


def test_thread_page_shortens_a_long_content_to_a_preview(admin_client: Client) -> None:
    # given
    thread = services.create_thread("agent-1", thread_id="long")
    entry = services.add_entry(thread.id, role="user", content="word " * 500)
    # when
    tree = rendered_tree(admin_client.get(change_url(thread)).content.decode())
    # then
    assert len(tree[entry.pk].text) < 400
    assert "…" in tree[entry.pk].text


def test_thread_page_offers_checkout_everywhere_and_rewind_on_the_active_path(
    admin_client: Client, trip: Trip
) -> None:
    # when
    tree = rendered_tree(admin_client.get(change_url(trip.thread)).content.decode())
    # then (with the forgetting buttons a superuser holds the permissions of)
    assert tree[trip.question.pk].buttons == ["Checkout", "Rewind here", "Redact…", "Delete…"]
    assert tree[trip.rome.pk].buttons == ["Checkout", "Redact…", "Delete…"]
    # an event and a redacted entry are deleted, not redacted
    assert tree[trip.model_change.pk].buttons == ["Checkout", "Delete…"]
    assert tree[trip.card.pk].buttons == ["Checkout", "Delete…"]
    assert tree[trip.florence.pk].buttons == ["Redact…", "Delete…"]  # the active leaf


def test_thread_page_of_an_empty_thread_says_it_has_no_entries(admin_client: Client) -> None:
    # given
    thread = services.create_thread("agent-1", thread_id="empty")
    # when
    html = admin_client.get(change_url(thread)).content.decode()
    # then
    assert "This thread has no entries." in html


def test_thread_page_shows_only_the_newest_entries_of_a_large_thread_and_says_so(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given
    thread = services.create_thread("agent-1", thread_id="big")
    entries = create_branch(thread, 5)
    monkeypatch.setattr(admin.site._registry[Thread], "tree_entry_limit", 3)
    # when
    html = admin_client.get(change_url(thread)).content.decode()
    # then
    assert set(rendered_tree(html)) == {entry.pk for entry in entries[2:]}
    assert "Showing the newest 3 entries; older entries are not shown." in html
    assert f"continues from older entry {entries[1].pk}" in html


def test_thread_page_says_when_the_active_leaf_is_older_than_the_entries_shown(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given: the active leaf is the oldest entry of five, three are shown
    thread = services.create_thread("agent-1", thread_id="big")
    entries = create_branch(thread, 5)
    services.checkout(thread.id, entries[0].pk)
    monkeypatch.setattr(admin.site._registry[Thread], "tree_entry_limit", 3)
    # when
    html = admin_client.get(change_url(thread)).content.decode()
    # then
    assert f"The active leaf {entries[0].pk} is older than the entries shown." in html


def test_entry_tree_reads_the_entries_in_one_query(trip: Trip) -> None:
    # when
    with CaptureQueriesContext(connection) as queries:
        tree = build_entry_tree(trip.thread, limit=ThreadAdmin.tree_entry_limit)
        rendered = [step.node.preview for step in tree.steps if step.kind == "entry" and step.node]
    # then
    assert len(queries.captured_queries) == 1
    assert len(rendered) == 5


def test_entry_tree_of_a_thread_forking_at_every_entry_renders_every_entry(
    admin_client: Client,
) -> None:
    # given: 200 entries in a chain, each with a second child, so branches nest 200 deep
    thread = services.create_thread("agent-1", thread_id="bushy")
    chain = create_branch(thread, 200)
    side = [
        Entry(thread=thread, parent=entry, seq=201 + index, role="user", content="side")
        for index, entry in enumerate(chain)
    ]
    Entry.objects.bulk_create(side)
    # when
    response = admin_client.get(change_url(thread))
    # then
    assert len(rendered_tree(response.content.decode())) == 400


def test_thread_page_of_a_viewer_has_no_checkout_or_rewind_buttons(
    staff_client: Client, trip: Trip
) -> None:
    # when
    response = staff_client.get(change_url(trip.thread))
    # then
    assert response.status_code == 200
    tree = rendered_tree(response.content.decode())
    assert all(entry.buttons == [] for entry in tree.values())


# --- checkout and rewind ---------------------------------------------------------------


def test_checkout_moves_the_active_leaf_to_the_posted_entry(
    admin_client: Client, trip: Trip
) -> None:
    # when
    response = admin_client.post(action_url("checkout", trip.thread), {"entry_id": trip.card.pk})
    # then
    assert response.status_code == 302
    assert response["Location"] == change_url(trip.thread)
    assert leaf_of(trip.thread) == trip.card.pk


def test_checkout_is_written_to_the_admin_log(
    admin_client: Client, admin_user: object, trip: Trip
) -> None:
    # when
    admin_client.post(action_url("checkout", trip.thread), {"entry_id": trip.card.pk})
    # then
    log = LogEntry.objects.get()
    assert log.action_flag == CHANGE
    assert log.object_id == trip.thread.pk
    assert log.user == admin_user
    assert log.get_change_message() == (
        f"Checked out entry {trip.card.pk} (the active leaf was {trip.florence.pk})."
    )


def test_checkout_reports_success_and_the_page_shows_the_new_active_path(
    admin_client: Client, trip: Trip
) -> None:
    # when
    response = admin_client.post(
        action_url("checkout", trip.thread), {"entry_id": trip.card.pk}, follow=True
    )
    # then
    assert message_texts(response) == [
        f"Checked out entry {trip.card.pk} (the active leaf was {trip.florence.pk})."
    ]
    tree = rendered_tree(response.content.decode())
    active = {entry_id for entry_id, entry in tree.items() if "cm-entry--active" in entry.classes}
    assert active == {trip.question.pk, trip.rome.pk, trip.model_change.pk, trip.card.pk}


def test_rewind_moves_the_active_leaf_back_along_the_active_path(
    admin_client: Client, trip: Trip
) -> None:
    # given the confirmation page, which changes nothing
    page = admin_client.post(action_url("rewind", trip.thread), {"entry_id": trip.question.pk})
    assert page.status_code == 200
    assert leaf_of(trip.thread) == trip.florence.pk
    # when confirmed
    response = admin_client.post(
        action_url("rewind", trip.thread), {"entry_id": trip.question.pk, "confirmed": "yes"}
    )
    # then
    assert response.status_code == 302
    assert leaf_of(trip.thread) == trip.question.pk
    assert LogEntry.objects.get().get_change_message() == (
        f"rewound to entry {trip.question.pk} (admin); threads changed (they stay): 1"
    )


def test_rewind_off_the_active_path_reports_the_error_and_changes_nothing(
    admin_client: Client, trip: Trip
) -> None:
    # when: rome is on the other branch
    response = admin_client.post(
        action_url("rewind", trip.thread), {"entry_id": trip.rome.pk}, follow=True
    )
    # then
    assert message_texts(response) == [
        f"Entry {trip.rome.pk!r} is not on the active branch of thread 'trip'; rewind goes "
        "back along the active branch, checkout switches branches."
    ]
    assert leaf_of(trip.thread) == trip.florence.pk
    assert not LogEntry.objects.exists()


def test_checkout_of_an_entry_of_another_thread_reports_the_error_and_changes_nothing(
    admin_client: Client, trip: Trip
) -> None:
    # given
    other = services.create_thread("agent-1", thread_id="other")
    stranger = services.add_entry(other.id, role="user", content="hi")
    # when
    response = admin_client.post(
        action_url("checkout", trip.thread), {"entry_id": stranger.pk}, follow=True
    )
    # then
    assert message_texts(response) == [f"Entry {stranger.pk!r} is not an entry of thread 'trip'."]
    assert leaf_of(trip.thread) == trip.florence.pk
    assert not LogEntry.objects.exists()


def test_checkout_without_an_entry_id_asks_for_one(admin_client: Client, trip: Trip) -> None:
    # when
    response = admin_client.post(action_url("checkout", trip.thread), {}, follow=True)
    # then
    assert message_texts(response) == ["Choose an entry."]
    assert leaf_of(trip.thread) == trip.florence.pk


@pytest.mark.parametrize("action", ["checkout", "rewind"])
def test_action_url_refuses_get(admin_client: Client, trip: Trip, action: str) -> None:
    # when
    response = admin_client.get(action_url(action, trip.thread), {"entry_id": trip.question.pk})
    # then
    assert response.status_code == 405
    assert leaf_of(trip.thread) == trip.florence.pk


@pytest.mark.parametrize("action", ["checkout", "rewind"])
def test_action_is_refused_to_a_staff_user_without_change_permission(
    staff_client: Client, trip: Trip, action: str
) -> None:
    # when
    response = staff_client.post(action_url(action, trip.thread), {"entry_id": trip.question.pk})
    # then
    assert response.status_code == 403
    assert leaf_of(trip.thread) == trip.florence.pk
    assert not LogEntry.objects.exists()


def test_action_on_a_thread_of_an_agent_not_granted_answers_not_found(
    django_user_model: type, trip: Trip
) -> None:
    # given: a staff user who may change threads, granted another agent
    user = django_user_model.objects.create_user("editor", password="pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_thread", "change_thread"])
    )
    Grant.objects.create(user=user, agent_id="agent-2")
    client = Client()
    client.force_login(user)
    # when
    response = client.post(action_url("checkout", trip.thread), {"entry_id": trip.card.pk})
    # then
    assert response.status_code == 404
    assert leaf_of(trip.thread) == trip.florence.pk


def test_action_needs_a_csrf_token(admin_user: object, trip: Trip) -> None:
    # given
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)  # type: ignore[arg-type]
    # when
    response = client.post(action_url("checkout", trip.thread), {"entry_id": trip.card.pk})
    # then
    assert response.status_code == 403
    assert leaf_of(trip.thread) == trip.florence.pk


def test_action_asks_an_anonymous_visitor_to_log_in(client: Client, trip: Trip) -> None:
    # when
    response = client.post(action_url("checkout", trip.thread), {"entry_id": trip.card.pk})
    # then
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
    assert leaf_of(trip.thread) == trip.florence.pk


# --- metadata and deletion go through the services ---------------------------------------


def test_saving_the_metadata_replaces_it_and_stamps_the_update_time(
    admin_client: Client, trip: Trip
) -> None:
    # given
    before = trip.thread.updated_at
    # when
    response = admin_client.post(change_url(trip.thread), {"metadata": '{"topic": "food"}'})
    # then
    assert response.status_code == 302
    trip.thread.refresh_from_db()
    assert trip.thread.metadata == {"topic": "food"}
    assert trip.thread.updated_at > before


def test_saving_metadata_that_is_not_an_object_is_refused(admin_client: Client, trip: Trip) -> None:
    # when
    response = admin_client.post(change_url(trip.thread), {"metadata": '["a", "b"]'})
    # then
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["metadata"] == [
        "Metadata must be an object, not list."
    ]
    trip.thread.refresh_from_db()
    assert trip.thread.metadata == {"userId": "u-7", "topic": "travel"}


def test_deleting_a_thread_in_the_admin_goes_through_the_service(
    admin_client: Client, trip: Trip, django_capture_on_commit_callbacks: object
) -> None:
    # given
    deleted: list[str] = []

    def record(sender: object, thread_id: str, **kwargs: object) -> None:
        deleted.append(thread_id)

    signals.thread_deleted.connect(record, weak=False)
    delete_url = reverse("admin:cogitator_memory_thread_delete", args=[quote(trip.thread.pk)])
    # when
    try:
        with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
            response = admin_client.post(delete_url, {"post": "yes"})
    finally:
        signals.thread_deleted.disconnect(record)
    # then
    assert response.status_code == 302
    assert deleted == ["trip"]
    assert not Thread.objects.filter(pk="trip").exists()
    assert not Entry.objects.filter(thread_id="trip").exists()


# --- entries stay read-only ------------------------------------------------------------


def test_an_entry_cannot_be_changed_by_hand(admin_client: Client, trip: Trip) -> None:
    # given
    url = reverse("admin:cogitator_memory_entry_change", args=[quote(trip.rome.pk)])
    # when
    response = admin_client.post(url, {"content": '"changed"'})
    # then
    assert response.status_code == 403
    assert Entry.objects.get(pk=trip.rome.pk).content == [
        {"type": "text", "text": "Rome, for the gardens."}
    ]


def test_delete_confirmation_counts_the_entries_that_go_with_the_thread(
    admin_client: Client, trip: Trip
) -> None:
    # given
    delete_url = reverse("admin:cogitator_memory_thread_delete", args=[quote(trip.thread.pk)])
    # when
    response = admin_client.get(delete_url)
    # then
    assert response.status_code == 200
    assert dict(response.context["model_count"]) == {
        "entries of the thread": 5,
        "threads deleted": 1,
        "entries deleted": 5,
        "keyword index documents removed": 3,
    }
    assert response.context["perms_lacking"] == set()


# --- an entry opened from a quote ----------------------------------------------------------


def test_thread_page_marks_the_entry_it_was_opened_for(admin_client: Client, trip: Trip) -> None:
    # when
    html = admin_client.get(change_url(trip.thread), {"highlight": trip.rome.pk}).content.decode()
    # then: that entry only, by a class and a badge
    tree = rendered_tree(html)
    assert [pk for pk, entry in tree.items() if "cm-entry--highlighted" in entry.classes] == [
        trip.rome.pk
    ]
    assert "quoted" in tree[trip.rome.pk].text
    assert html.count('aria-current="true"') == 1


@pytest.mark.parametrize("highlight", ["", "no-such-entry", "a\x00b"])
def test_thread_page_ignores_a_highlight_of_no_entry_of_its_own(
    admin_client: Client, trip: Trip, highlight: str
) -> None:
    response = admin_client.get(change_url(trip.thread), {"highlight": highlight})
    assert response.status_code == 200
    assert "cm-entry--highlighted" not in response.content.decode()
    assert "older than the entries shown" not in response.content.decode()


def test_thread_page_says_when_the_entry_it_was_opened_for_is_older_than_those_shown(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given five entries, three shown
    thread = services.create_thread("agent-1", thread_id="big")
    entries = create_branch(thread, 5)
    monkeypatch.setattr(admin.site._registry[Thread], "tree_entry_limit", 3)
    # when
    html = admin_client.get(change_url(thread), {"highlight": entries[0].pk}).content.decode()
    # then
    assert f"The entry {entries[0].pk} is older than the entries shown." in html


# --- an entry's own page ----------------------------------------------------------------


def entry_page(entry: Entry) -> str:
    return reverse("admin:cogitator_memory_entry_change", args=[quote(entry.pk)])


def test_an_entrys_page_shows_its_text(admin_client: Client, trip: Trip) -> None:
    html = admin_client.get(entry_page(trip.rome)).content.decode()
    assert '<div class="cm-text">Rome, for the gardens.</div>' in html
    assert 'name="_save"' not in html


def test_a_compaction_entrys_page_shows_its_summary_as_text_escaped(
    admin_client: Client, trip: Trip
) -> None:
    # given
    compaction = services.add_entry(
        trip.thread.pk,
        type="compaction",
        event={
            "strategy": "summary",
            "summary": "Florence in spring.\nAvoid <script>alert(1)</script>",
            "first_kept_entry_id": trip.florence.pk,
            "covered_to_entry_id": trip.question.pk,
        },
    )
    # when
    html = admin_client.get(entry_page(compaction)).content.decode()
    # then: the summary as text, its range linked, the raw event folded away
    assert (
        '<div class="cm-text cm-text--summary">Florence in spring.\n'
        "Avoid &lt;script&gt;alert(1)&lt;/script&gt;</div>"
    ) in html
    assert f'href="{entry_page(trip.question)}"' in html
    assert f'href="{entry_page(trip.florence)}"' in html
    assert "<script>alert(1)" not in html
    assert html.index("cm-text--summary") < html.index("field-event")
    # and the list shows the start of the summary as the entry's content
    listed = admin_client.get(reverse("admin:cogitator_memory_entry_changelist")).content.decode()
    assert "Florence in spring. Avoid &lt;script&gt;" in listed
