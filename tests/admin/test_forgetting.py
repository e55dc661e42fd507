"""Forgetting in the admin: "Delete with replies" and "Redact with replies" on a thread's
entries, "Rewind here" and "Delete" on a thread, and the "Forget a user" page. Each takes
its own permission, within the staff user's grants, shows what would go counted per store
(a dry run) before anything changes, and writes the admin log without what went."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db.models import Q
from django.test import Client
from django.urls import reverse

from cogitator_memory.access.models import Grant
from cogitator_memory.cascade.actions import DeleteEntries, DeleteThread, RedactEntries
from cogitator_memory.cascade.models import ForgetRun
from cogitator_memory.cascade.report import CascadeReport, counted_lines
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.jobs import RunStatus
from cogitator_memory.threads.models import REDACTED_TEXT, Entry, Thread
from tests.cascade.conftest import AGENT, World, build_world, canaries

pytestmark = pytest.mark.django_db

DELETE_ENTRIES = reverse("admin:cogitator_memory_entry_forget_delete")
REDACT_ENTRIES = reverse("admin:cogitator_memory_entry_forget_redact")
ENTRIES = reverse("admin:cogitator_memory_entry_changelist")
FORGET_USER = reverse("admin:cogitator_memory_forgetrun_forget_user")
VIEW = ["view_thread", "view_entry"]


def thread_url(thread_id: str, action: str = "change") -> str:
    return reverse(f"admin:cogitator_memory_thread_{action}", args=[quote(thread_id)])


def message_texts(response: Any) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def every_row() -> dict[str, list[dict[str, Any]]]:
    """The rows a forgetting changes, every column."""
    return {
        "threads": list(Thread.objects.order_by("pk").values()),
        "entries": list(Entry.objects.order_by("pk").values()),
        "items": list(MemoryItem.objects.order_by("pk").values()),
        "log": list(LogEntry.objects.order_by("pk").values()),
        "runs": list(ForgetRun.objects.order_by("pk").values()),
    }


@pytest.fixture
def world(db: Any) -> World:
    return build_world()


@pytest.fixture
def staff(django_user_model: type) -> Callable[..., Client]:
    """A client of a staff user holding these permissions, granted the agent (or
    ``grant``: agent -> users)."""

    def make(*codenames: str, grant: dict[str, Any] | None = None, name: str = "keeper") -> Client:
        user = django_user_model.objects.create_user(name, password="pw", is_staff=True)
        user.user_permissions.add(*Permission.objects.filter(codename__in=[*VIEW, *codenames]))
        for agent_id, users in (grant or {AGENT: None}).items():
            Grant.objects.create(user=user, agent_id=agent_id, user_ids=users)
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def reports() -> Iterator[list[CascadeReport]]:
    """The reports of the forgetting actions run for real."""
    made: list[CascadeReport] = []
    patches = []
    for action in (DeleteEntries, RedactEntries, DeleteThread):
        real = action.execute

        def execute(self: Any, *args: Any, _real: Any = real, **kwargs: Any) -> CascadeReport:
            report: CascadeReport = _real(self, *args, **kwargs)
            made.append(report)
            return report

        patches.append(mock.patch.object(action, "execute", execute))
    for patch in patches:
        patch.start()
    yield made
    for patch in patches:
        patch.stop()


def shown_counts(response: Any) -> list[tuple[str, int]]:
    """The counts a confirmation page shows, without its first lines that tell the
    entries apart."""
    lines = list(response.context["lines"])
    told_apart = {"chosen entries", "their replies", "copies in forks"}
    return [line for line in lines if line[0] not in told_apart]


# --- entries ---------------------------------------------------------------------------


def test_the_thread_page_offers_each_forgetting_its_permission_allows(
    world: World, staff: Callable[..., Client]
) -> None:
    # given
    chat = world.users["ana"].chat
    only_delete = staff("delete_entry", name="deleter")
    every = staff("delete_entry", "redact_entry", "rewind_thread", name="all")
    none = staff(name="viewer")
    # when
    pages = [client.get(thread_url(chat)).content.decode() for client in (only_delete, every)]
    plain = none.get(thread_url(chat)).content.decode()
    # then
    assert "cm-action--delete" in pages[0] and "cm-action--redact" not in pages[0]
    assert "cm-action--rewind" not in pages[0]
    assert all(f"cm-action--{kind}" in pages[1] for kind in ("delete", "redact", "rewind"))
    assert "cm-entry__actions" not in plain


def test_delete_with_replies_confirms_with_the_counts_then_deletes(
    world: World, staff: Callable[..., Client], reports: list[CascadeReport]
) -> None:
    # given a staff user who may delete entries
    client = staff("delete_entry")
    ana = world.users["ana"]
    before = every_row()
    # when the tree's button is posted
    page = client.post(DELETE_ENTRIES, {"entry_id": ana.entries["e1"]})
    # then a confirmation page, with what would go told apart and counted, and nothing
    # changed yet
    assert page.status_code == 200
    lines = dict(page.context["lines"])
    assert (lines["chosen entries"], lines["their replies"]) == (1, 3)
    assert lines["copies in forks"] == 8
    assert lines["memory items purged"] == 1
    assert every_row() == before
    assert 'id="cm-forget-counts"' in page.content.decode()
    # when confirmed
    done = client.post(
        DELETE_ENTRIES, {"entry_id": ana.entries["e1"], "confirmed": "yes"}, follow=True
    )
    # then the entries went, and the counts shown are the report's
    assert done.redirect_chain[-1][0] == thread_url(ana.chat)
    assert not Entry.objects.filter(pk=ana.entries["e1"]).exists()
    [report] = reports
    assert shown_counts(page) == counted_lines(report.counts())
    [message] = message_texts(done)
    assert message.startswith("Deleted with their replies; entries deleted: 12")


def test_the_log_of_a_forgetting_says_what_kind_and_how_many_never_what(
    world: World, staff: Callable[..., Client]
) -> None:
    # given
    client = staff("delete_entry", "redact_entry")
    ana = world.users["ana"]
    # when
    client.post(DELETE_ENTRIES, {"entry_id": ana.entries["e1"], "confirmed": "yes"})
    client.post(
        REDACT_ENTRIES, {"entry_id": ana.entries["e5"], "confirmed": "yes", "reason": "asked"}
    )
    # then one row per forgetting, on the thread, by its id
    rows = list(LogEntry.objects.filter(object_id=ana.chat).order_by("pk"))
    assert [row.object_repr for row in rows] == [ana.chat, ana.chat]
    assert rows[0].change_message.startswith(
        "deleted with their replies 1 chosen entry (admin); entries deleted: 12"
    )
    assert rows[1].change_message.startswith(
        "redacted with their replies 1 chosen entry (admin); entries redacted:"
    )
    # and no canary of what went is in the log
    assert canaries("CANARYANA", only={LogEntry: Q()}) == {}


def test_redact_with_replies_takes_a_reason(world: World, staff: Callable[..., Client]) -> None:
    # given
    client = staff("redact_entry")
    ana = world.users["ana"]
    # when
    page = client.post(REDACT_ENTRIES, {"entry_id": ana.entries["e5"]})
    done = client.post(
        REDACT_ENTRIES, {"entry_id": ana.entries["e5"], "confirmed": "yes", "reason": "asked"}
    )
    # then
    assert 'name="reason"' in page.content.decode()
    assert done.status_code == 302
    entry = Entry.objects.get(pk=ana.entries["e5"])
    assert (entry.content, entry.redaction["reason"]) == (REDACTED_TEXT, "asked")
    assert Entry.objects.get(pk=ana.entries["e6"]).content == REDACTED_TEXT


def test_a_reason_too_long_asks_again_and_changes_nothing(
    world: World, staff: Callable[..., Client]
) -> None:
    # given
    client = staff("redact_entry")
    ana = world.users["ana"]
    before = every_row()
    # when
    page = client.post(
        REDACT_ENTRIES, {"entry_id": ana.entries["e5"], "confirmed": "yes", "reason": "x" * 1001}
    )
    # then
    assert page.status_code == 200
    assert "1000" in page.context["problem"]
    assert every_row() == before


@pytest.mark.parametrize(
    ("url", "codename"), [(DELETE_ENTRIES, "redact_entry"), (REDACT_ENTRIES, "delete_entry")]
)
def test_without_its_permission_a_forgetting_is_refused(
    world: World, staff: Callable[..., Client], url: str, codename: str
) -> None:
    # given a staff user holding the other permission only
    client = staff(codename)
    before = every_row()
    # when
    responses = [
        client.post(url, {"entry_id": world.users["ana"].entries["e1"], **extra})
        for extra in ({}, {"confirmed": "yes"})
    ]
    # then
    assert [response.status_code for response in responses] == [403, 403]
    assert every_row() == before


def test_entries_out_of_the_staff_users_grants_are_not_found(
    world: World, staff: Callable[..., Client]
) -> None:
    # given a staff user granted bea's memory only
    client = staff("delete_entry", grant={AGENT: ["bea"]})
    before = every_row()
    # when
    response = client.post(
        DELETE_ENTRIES, {"entry_id": world.users["ana"].entries["e1"], "confirmed": "yes"}
    )
    # then back to the entry list (not to a thread the user may not see)
    assert response.status_code == 302
    assert response["Location"] == ENTRIES
    assert message_texts(response) == [
        f"Nothing was changed: Entry not found: {world.users['ana'].entries['e1']!r}"
    ]
    assert every_row() == before


def test_the_entry_list_offers_the_actions_its_permissions_allow(
    world: World, staff: Callable[..., Client]
) -> None:
    # given
    deleter = staff("delete_entry", name="deleter")
    viewer = staff(name="viewer")
    # when
    offered = [
        [name for name, _label in response.context["action_form"].fields["action"].choices]
        for response in (deleter.get(ENTRIES), viewer.get(ENTRIES))
        if response.context.get("action_form") is not None
    ]
    # then
    assert offered == [["", "delete_with_replies"]]


def test_the_entry_list_action_shows_the_confirmation_page(
    world: World, staff: Callable[..., Client]
) -> None:
    # given
    client = staff("delete_entry")
    ana = world.users["ana"]
    chosen = [ana.entries["e2"], ana.entries["e8"]]
    # when
    page = client.post(
        ENTRIES, {"action": "delete_with_replies", "_selected_action": chosen, "index": "0"}
    )
    # then
    assert page.status_code == 200
    assert dict(page.context["lines"])["chosen entries"] == 2
    assert [value for name, value in page.context["hidden"] if name == "entry_id"] == chosen
    assert Entry.objects.filter(pk__in=chosen).count() == 2


# --- threads ---------------------------------------------------------------------------


def test_rewind_confirms_with_the_items_it_marks_stale(
    world: World, staff: Callable[..., Client]
) -> None:
    # given the chat rewound to its first answer leaves the item of its own scope behind
    client = staff("rewind_thread")
    ana = world.users["ana"]
    item = MemoryItem.objects.get(pk=ana.items["of_chat"])
    # when
    page = client.post(thread_url(ana.chat, "rewind"), {"entry_id": ana.entries["e2"]})
    # then
    assert page.status_code == 200
    assert dict(page.context["lines"])["memory items marked stale"] == 1
    assert MemoryItem.objects.get(pk=item.pk).status == item.status
    # when confirmed
    client.post(thread_url(ana.chat, "rewind"), {"entry_id": ana.entries["e2"], "confirmed": "yes"})
    # then
    assert MemoryItem.objects.get(pk=item.pk).status == ItemStatus.STALE
    assert Thread.objects.get(pk=ana.chat).active_leaf_id == ana.entries["e2"]


def test_rewind_takes_its_own_permission(world: World, staff: Callable[..., Client]) -> None:
    # given a staff user who may change threads, not rewind them
    client = staff("change_thread")
    ana = world.users["ana"]
    # when
    response = client.post(thread_url(ana.chat, "rewind"), {"entry_id": ana.entries["e2"]})
    # then
    assert response.status_code == 403
    assert Thread.objects.get(pk=ana.chat).active_leaf_id == ana.entries["e8"]


def test_deleting_a_thread_confirms_with_the_counts_and_goes_through_the_cascade(
    world: World, staff: Callable[..., Client], reports: list[CascadeReport]
) -> None:
    # given
    client = staff("delete_thread")
    ana = world.users["ana"]
    # when
    page = client.get(thread_url(ana.chat, "delete"))
    # then
    assert page.status_code == 200
    counts = dict(page.context["model_count"])
    assert counts["threads deleted"] == 1
    # the copies of six entries in the fork, and in the fork of the fork
    assert counts["copies in forks"] == 12
    assert Thread.objects.filter(pk=ana.chat).exists()
    # when confirmed
    client.post(thread_url(ana.chat, "delete"), {"post": "yes"})
    # then the copies in the forks went too, and the counts were the report's
    assert not Thread.objects.filter(pk=ana.chat).exists()
    assert not Entry.objects.filter(thread_id=ana.fork, metadata__has_key="forkOf").exists()
    [report] = reports
    told_apart = {"entries of the thread", "copies in forks"}
    assert [(k, v) for k, v in counts.items() if k not in told_apart] == counted_lines(
        report.counts()
    )
    # and the log row of the deletion stays, by the thread's id, with the counts
    row = LogEntry.objects.get(object_id=ana.chat)
    assert (row.action_flag, row.object_repr) == (DELETION, ana.chat)
    assert row.change_message.startswith("deleted the thread (admin); threads deleted: 1")


def test_deleting_several_threads_counts_them_all(
    world: World, staff: Callable[..., Client]
) -> None:
    # given
    client = staff("delete_thread")
    chosen = [world.users["ana"].chat, world.users["bea"].chat]
    changelist = reverse("admin:cogitator_memory_thread_changelist")
    # when
    page = client.post(changelist, {"action": "delete_selected", "_selected_action": chosen})
    done = client.post(
        changelist, {"action": "delete_selected", "_selected_action": chosen, "post": "yes"}
    )
    # then
    assert dict(page.context["model_count"])["threads deleted"] == 2
    assert done.status_code == 302
    assert not Thread.objects.filter(pk__in=chosen).exists()


# --- a user ----------------------------------------------------------------------------


@pytest.fixture
def on_commit(django_capture_on_commit_callbacks: Any) -> Any:
    return django_capture_on_commit_callbacks


def test_forget_a_user_counts_asks_for_the_id_then_runs(
    world: World, staff: Callable[..., Client], on_commit: Any
) -> None:
    # given
    client = staff("forget_user_memory")
    # when the form, then its counts
    form = client.get(FORGET_USER)
    page = client.post(FORGET_USER, {"user_id": "ana", "agent_ids": ""})
    # then
    assert form.status_code == 200
    assert page.status_code == 200
    lines = dict(page.context["lines"])
    assert lines["threads deleted"] == 4
    assert page.context["type_to_confirm"] == "ana"
    assert Thread.objects.filter(user_id="ana").exists()
    # when the id is typed wrong
    wrong = client.post(
        FORGET_USER, {"user_id": "ana", "agent_ids": "", "confirmed": "yes", "confirm": "bea"}
    )
    # then it asks again, and nothing started
    assert wrong.status_code == 200 and "exactly" in wrong.context["problem"]
    assert not ForgetRun.objects.exists()
    # when typed right
    with on_commit(execute=True):
        done = client.post(
            FORGET_USER,
            {"user_id": "ana", "agent_ids": "", "confirmed": "yes", "confirm": "ana"},
        )
    # then the run's page, the run done, its counts those shown before
    run = ForgetRun.objects.get()
    assert done.status_code == 302
    assert done["Location"] == reverse(
        "admin:cogitator_memory_forgetrun_change", args=[quote(run.pk)]
    )
    assert (run.status, run.user_id, run.agent_ids) == (RunStatus.DONE, "ana", [AGENT])
    assert counted_lines(run.counts) == [
        line
        for line in page.context["lines"]
        if not line[0].startswith("entries of") and not line[0].startswith("entries in")
    ]
    assert not Thread.objects.filter(user_id="ana").exists()
    shown = client.get(done["Location"])
    assert shown.status_code == 200
    assert shown.context["run_lines"] == counted_lines(run.counts)
    assert not shown.context["run_open"]


def test_forget_a_user_needs_its_permission(world: World, staff: Callable[..., Client]) -> None:
    # given
    client = staff("delete_thread")
    # when
    answers = [
        client.get(FORGET_USER).status_code,
        client.post(FORGET_USER, {"user_id": "ana"}).status_code,
    ]
    # then
    assert answers == [403, 403]


def test_forget_a_user_stays_within_the_grants(world: World, staff: Callable[..., Client]) -> None:
    # given a staff user granted bea's memory only
    client = staff("forget_user_memory", grant={AGENT: ["bea"]})
    # when
    page = client.post(FORGET_USER, {"user_id": "ana", "agent_ids": ""})
    named = client.post(FORGET_USER, {"user_id": "ana", "agent_ids": AGENT})
    # then the form again, saying why, and nothing counted or started
    assert "lines" not in page.context
    assert page.context["form"].non_field_errors() == [
        "None of your grants reaches the memory of user 'ana'."
    ]
    assert named.context["form"].non_field_errors() == [
        f"You have no grant for user 'ana' of agent {AGENT!r}."
    ]
    assert not ForgetRun.objects.exists()


def test_forget_runs_are_listed_for_who_asked_and_reachable_from_the_threads(
    world: World, staff: Callable[..., Client]
) -> None:
    # given two staff users, one run each
    first = staff("forget_user_memory", name="first")
    second = staff("forget_user_memory", name="second")
    for client, user_id in ((first, "ana"), (second, "bea")):
        client.post(
            FORGET_USER,
            {"user_id": user_id, "agent_ids": "", "confirmed": "yes", "confirm": user_id},
        )
    changelist = reverse("admin:cogitator_memory_forgetrun_changelist")
    # when
    listed = [
        [run.user_id for run in client.get(changelist).context["cl"].result_list]
        for client in (first, second)
    ]
    threads = first.get(reverse("admin:cogitator_memory_thread_changelist")).content.decode()
    # then
    assert listed == [["ana"], ["bea"]]
    assert f'href="{FORGET_USER}"' in threads
