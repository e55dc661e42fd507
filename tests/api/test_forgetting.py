"""The forgetting endpoints: deleting and redacting entries with their replies, deleting a
thread, rewinding, each through ``MemoryCascade`` and answering what went, counted; and
forgetting a user through a ``ForgetRun``, for people holding ``forget_user_memory``
within their grants, never for an API key."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db.models import Q
from rest_framework.test import APIClient

from cogitator_memory.access.models import Grant
from cogitator_memory.cascade import services as cascade_services
from cogitator_memory.cascade.models import ForgetRun
from cogitator_memory.cascade.runs import ForgetRecorder, run_forget
from cogitator_memory.exceptions import NoGrant
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.jobs import RunStatus
from cogitator_memory.tasks.forgetting import forget_user_task
from cogitator_memory.threads import services
from cogitator_memory.threads.models import REDACTED_TEXT, Entry, Thread
from tests.api.conftest import (
    API,
    Conversation,
    Principal,
    assert_error,
    snapshot_rows,
    token_client,
)
from tests.cascade.conftest import AGENT, World, build_world, canaries

pytestmark = pytest.mark.django_db

FORGET_PERMISSION = "forget_user_memory"


def entry_url(entry_id: str) -> str:
    return f"{API}/entries/{entry_id}/"


def remember(conversation: Conversation, entry: Entry, value: str) -> MemoryItem:
    """An item of the conversation's scope standing only on ``entry``."""
    thread = conversation.thread
    return (
        MemoryItems()
        .write(
            MemoryScope(thread.agent_id, user_id=thread.user_id),
            NewItem(
                kind="fact",
                subject="Parcel",
                attribute=value,
                value=value,
                trust="user",
                evidence=[NewEvidence(quote=str(entry.content)[:12], entry_id=entry.pk)],
            ),
        )
        .item
    )


# --- entries ---------------------------------------------------------------------------


def test_deleting_a_user_message_takes_its_replies_and_what_stands_on_them(
    client: APIClient, conversation: Conversation
):
    # given an item standing on the reply of the root message
    item = remember(conversation, conversation.reply, "whereabouts")
    # when the root (a user message) goes
    response = client.delete(entry_url(conversation.root.pk))
    # then its replies on every branch went (up to the next user message), with the item
    assert response.status_code == 200, response.json()
    report = response.json()["report"]
    assert report["entries"] == {"deleted": 3, "redacted": 0}
    assert report["items"]["purged"] == 1
    assert not MemoryItem.objects.filter(pk=item.pk).exists()
    left = set(Entry.objects.filter(thread=conversation.thread).values_list("pk", flat=True))
    assert left == {conversation.follow_up.pk, conversation.label.pk}
    # and the answer names no id, only counts
    assert conversation.reply.pk not in response.content.decode()


def test_keep_replies_deletes_the_entry_alone(client: APIClient, conversation: Conversation):
    # when
    response = client.delete(f"{entry_url(conversation.root.pk)}?keep_replies=true")
    # then the reply and the retry stay, hung from nothing (the root was the root)
    assert response.status_code == 200
    assert response.json()["report"]["entries"]["deleted"] == 1
    assert Entry.objects.get(pk=conversation.reply.pk).parent_id is None


@pytest.mark.parametrize("value", ["yes", "1", "True", ""])
def test_keep_replies_is_true_or_false(client: APIClient, conversation: Conversation, value: str):
    # given
    before = snapshot_rows()
    # when
    response = client.delete(f"{entry_url(conversation.root.pk)}?keep_replies={value}")
    # then
    assert_error(response, 400, "invalid", ["keep_replies"])
    assert snapshot_rows() == before


def test_deleting_an_entry_takes_its_copies_in_forks(client: APIClient, conversation: Conversation):
    # given a fork holding a copy of the root and the reply
    fork = services.fork_thread(conversation.thread_id, conversation.reply.pk, "parcel-fork")
    # when
    response = client.delete(entry_url(conversation.root.pk))
    # then the copies in the fork went too
    assert response.status_code == 200
    assert response.json()["report"]["entries"]["deleted"] == 5
    assert not Entry.objects.filter(thread=fork).exists()


def test_redacting_a_user_message_redacts_its_replies_and_answers_the_entry(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.post(
        f"{entry_url(conversation.root.pk)}redact/", {"reason": "asked"}, format="json"
    )
    # then the entry as it stands, and the report
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["id"], body["content"], body["redaction"]["reason"]) == (
        conversation.root.pk,
        REDACTED_TEXT,
        "asked",
    )
    assert body["report"]["entries"] == {"deleted": 0, "redacted": 3}
    for entry in (conversation.reply, conversation.retry):
        assert Entry.objects.get(pk=entry.pk).content == REDACTED_TEXT
    assert Entry.objects.get(pk=conversation.follow_up.pk).content != REDACTED_TEXT


def test_redacting_with_keep_replies_redacts_the_entry_alone(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.post(
        f"{entry_url(conversation.root.pk)}redact/", {"keep_replies": True}, format="json"
    )
    # then
    assert response.status_code == 200
    assert response.json()["report"]["entries"]["redacted"] == 1
    assert Entry.objects.get(pk=conversation.reply.pk).content != REDACTED_TEXT


# --- threads ---------------------------------------------------------------------------


def test_deleting_a_thread_takes_the_copies_in_its_forks(
    client: APIClient, conversation: Conversation
):
    # given
    fork = services.fork_thread(conversation.thread_id, conversation.reply.pk, "parcel-fork-2")
    services.add_entry(fork.pk, role="user", content="Only in the fork.")
    # when
    response = client.delete(f"{API}/threads/{conversation.thread_id}/")
    # then the copies went, the fork's own entry stays
    assert response.status_code == 200
    report = response.json()["report"]
    assert (report["threads"], report["entries"]["deleted"]) == (1, 7)
    assert list(Entry.objects.filter(thread=fork).values_list("content", flat=True)) == [
        "Only in the fork."
    ]


def test_rewinding_answers_the_thread_and_the_items_marked_stale(
    client: APIClient, conversation: Conversation
):
    # given an item standing only on the follow-up, which the rewind leaves behind
    item = remember(conversation, conversation.follow_up, "arrival")
    # when
    response = client.post(
        f"{API}/threads/{conversation.thread_id}/rewind/",
        {"to_entry_id": conversation.reply.pk},
        format="json",
    )
    # then the thread's fields as before, and the report
    assert response.status_code == 200, response.json()
    body = response.json()
    assert set(body) == {
        "id",
        "agent_id",
        "metadata",
        "active_leaf_id",
        "created_at",
        "updated_at",
        "report",
    }
    assert body["active_leaf_id"] == conversation.reply.pk
    assert body["report"]["items"]["stale"] == 1
    assert MemoryItem.objects.get(pk=item.pk).status == ItemStatus.STALE


# --- forgetting a user -------------------------------------------------------------------


@pytest.fixture
def world(db: Any) -> World:
    return build_world()


@pytest.fixture
def forgetter(make_user: Callable[..., User]) -> Callable[..., Principal]:
    """A person with these grants, holding the forget permission unless told otherwise."""

    def make(grants: Any, *, permitted: bool = True, name: str = "privacy") -> Principal:
        user = make_user(name, grants)
        if permitted:
            user.user_permissions.add(Permission.objects.get(codename=FORGET_PERMISSION))
        return Principal(name, token_client(user), user=user)

    return make


@pytest.fixture
def on_commit(django_capture_on_commit_callbacks: Any) -> Iterator[Callable[..., Any]]:
    """Run what the request left for after commit (the task, eagerly) when asked."""
    yield django_capture_on_commit_callbacks


def forget(principal: Principal, user_id: str, **body: Any) -> Any:
    return principal.client.post(
        f"{API}/users/{user_id}/forget/", {"confirm": user_id, **body}, format="json"
    )


def test_forgetting_a_user_starts_a_run_that_forgets_them(
    world: World, forgetter: Callable[..., Principal], on_commit: Any
):
    # given
    person = forgetter({AGENT: None})
    # when
    with on_commit(execute=True):
        response = forget(person, "ana")
    # then 202 with the run, queued when answered
    assert response.status_code == 202, response.json()
    run = response.json()
    assert (run["user_id"], run["agent_ids"], run["status"]) == ("ana", [AGENT], "queued")
    assert response["Location"].endswith(f"/api/memory/forgets/{run['id']}/")
    # and the task forgot ana: her threads, and every canary of hers
    assert not Thread.objects.filter(user_id="ana").exists()
    assert canaries("CANARYANA") == {}
    assert Thread.objects.filter(user_id="bea").exists()
    # and the run says so, counted
    done = person.client.get(response["Location"]).json()
    assert done["status"] == "done", done
    assert done["done"] == done["total"] > 1
    assert done["counts"]["threads"] == 4
    assert done["counts"]["items"]["purged"] == 2
    assert done["error"] == ""


def test_the_run_keeps_counts_and_the_log_says_how_many_never_what(
    world: World, forgetter: Callable[..., Principal], on_commit: Any
):
    # given
    person = forgetter({AGENT: None})
    # when
    with on_commit(execute=True):
        run_id = forget(person, "ana").json()["id"]
    # then the run holds the user id, agents and counts, no text of what went
    assert canaries("CANARYANA", only={ForgetRun: Q(), LogEntry: Q()}) == {}
    run = ForgetRun.objects.get(pk=run_id)
    assert (run.user_id, run.agent_ids, run.status) == ("ana", [AGENT], RunStatus.DONE)
    # and the admin log has the request and the result, on the run, without text
    rows = LogEntry.objects.filter(
        content_type=ContentType.objects.get_for_model(ForgetRun), object_id=run_id
    ).order_by("pk")
    assert [row.object_repr for row in rows] == [run_id, run_id]
    assert rows[0].change_message == f"asked to forget user ana in {AGENT} (API)"
    assert rows[1].change_message.startswith("forgot the user's memory; threads deleted: 4, ")
    assert all("CANARY" not in row.change_message for row in rows)


def test_an_api_key_may_not_forget_a_user(
    world: World, make_api_key: Callable[..., Any], on_commit: Any
):
    # given a key granted the agent
    _key, key = make_api_key("service", {AGENT: None})
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    # when
    with on_commit(execute=True):
        response = client.post(f"{API}/users/ana/forget/", {"confirm": "ana"}, format="json")
    # then
    assert_error(response, 403, "forget_not_permitted")
    assert not ForgetRun.objects.exists()
    assert Thread.objects.filter(user_id="ana").exists()


def test_a_user_without_the_permission_may_not_forget(
    world: World, forgetter: Callable[..., Principal]
):
    # given
    person = forgetter({AGENT: None}, permitted=False)
    # when
    response = forget(person, "ana")
    # then
    body = assert_error(response, 403, "forget_not_permitted")
    assert "cogitator_memory.forget_user_memory" in body["message"]
    assert not ForgetRun.objects.exists()


def test_the_confirmation_must_be_the_user_id(world: World, forgetter: Callable[..., Principal]):
    # given
    person = forgetter({AGENT: None})
    # when
    wrong = person.client.post(f"{API}/users/ana/forget/", {"confirm": "bea"}, format="json")
    missing = person.client.post(f"{API}/users/ana/forget/", {}, format="json")
    # then
    assert_error(wrong, 400, "invalid", ["confirm"])
    assert_error(missing, 400, "invalid", ["confirm"])
    assert not ForgetRun.objects.exists()


@pytest.mark.parametrize(
    ("grants", "body", "code"),
    [
        # a grant of another agent
        ({"sales": None}, {"agent_ids": [AGENT]}, "permission_denied"),
        # a grant of the agent for another user only
        ({AGENT: ["bea"]}, {"agent_ids": [AGENT]}, "permission_denied"),
        # no agent named, and no grant reaches ana
        ({AGENT: ["bea"]}, {}, "permission_denied"),
        # one of the agents named is not granted
        ({AGENT: None}, {"agent_ids": [AGENT, "sales"]}, "permission_denied"),
    ],
)
def test_the_grants_must_reach_the_user_in_every_agent_named(
    world: World,
    forgetter: Callable[..., Principal],
    on_commit: Any,
    grants: Any,
    body: dict[str, Any],
    code: str,
):
    # given
    person = forgetter(grants)
    before = snapshot_rows()
    # when
    with on_commit(execute=True):
        response = forget(person, "ana", **body)
    # then
    assert_error(response, 403, code)
    assert not ForgetRun.objects.exists()
    assert snapshot_rows() == before


def test_a_second_request_joins_the_open_run_of_the_same_agents(
    world: World, forgetter: Callable[..., Principal]
):
    # given a run not yet taken by a worker (what commits is not run in this test)
    person = forgetter({AGENT: None})
    first = forget(person, "ana").json()
    # when
    again = forget(person, "ana")
    other_agents = forget(person, "ana", agent_ids=[AGENT, "concierge-2"])
    # then
    assert again.status_code == 202 and again.json()["id"] == first["id"]
    assert ForgetRun.objects.count() == 1
    # (an agent the person is not granted is refused before the open run is looked at)
    assert_error(other_agents, 403, "permission_denied")


def test_a_request_for_other_agents_while_a_run_is_open_is_a_conflict(
    world: World, make_user: Callable[..., User]
):
    # given a superuser's open run of ana in every agent
    admin = make_user("root", is_superuser=True)
    client = token_client(admin)
    client.post(f"{API}/users/ana/forget/", {"confirm": "ana"}, format="json")
    # when
    response = client.post(
        f"{API}/users/ana/forget/", {"confirm": "ana", "agent_ids": [AGENT]}, format="json"
    )
    # then
    assert_error(response, 409, "forget_run_open")


def test_a_run_is_seen_by_the_person_who_asked_and_superusers(
    world: World, forgetter: Callable[..., Principal], make_user: Callable[..., User]
):
    # given
    asker = forgetter({AGENT: None})
    colleague = forgetter({AGENT: None}, name="colleague")
    run_id = forget(asker, "ana").json()["id"]
    root = token_client(make_user("root", is_superuser=True))
    # when
    seen = [
        principal.get(f"{API}/forgets/{run_id}/").status_code for principal in (asker.client, root)
    ]
    hidden = colleague.client.get(f"{API}/forgets/{run_id}/")
    missing = colleague.client.get(f"{API}/forgets/fgt_nothing/")
    # then
    assert seen == [200, 200]
    assert_error(hidden, 404, "forget_run_not_found")
    assert hidden.json()["message"].replace(run_id, "X") == missing.json()["message"].replace(
        "fgt_nothing", "X"
    )


def test_a_run_whose_person_lost_the_grant_fails_and_forgets_nothing(
    world: World, forgetter: Callable[..., Principal]
):
    # given a run asked for, then the person's grant taken away before it ran
    person = forgetter({AGENT: None})
    run_id = forget(person, "ana").json()["id"]
    Grant.objects.filter(user=person.user).delete()
    # when the task runs
    with pytest.raises(NoGrant):
        forget_user_task.apply(kwargs={"run_id": run_id}, throw=True)
    # then
    run = ForgetRun.objects.get(pk=run_id)
    assert run.status == RunStatus.FAILED
    assert run.error.startswith("permission_denied")
    assert Thread.objects.filter(user_id="ana").exists()


def test_the_task_reports_progress_on_the_run(world: World, forgetter: Callable[..., Principal]):
    # given
    person = forgetter({AGENT: None})
    run_id = forget(person, "ana").json()["id"]
    steps: list[tuple[int, int]] = []
    report = ForgetRecorder.progress

    def noted(self: ForgetRecorder, done: int, total: int, counts: dict[str, Any]) -> None:
        steps.append((done, total))
        report(self, done, total, counts)

    # when
    with mock.patch.object(ForgetRecorder, "progress", noted):
        result = forget_user_task.apply(kwargs={"run_id": run_id}, throw=True).get()
    # then from 0 to the total, one step per batch
    dones = [done for done, _total in steps]
    total = steps[-1][1]
    assert dones == list(range(total + 1))
    run = ForgetRun.objects.get(pk=run_id)
    assert (run.status, run.done, run.total) == (RunStatus.DONE, total, total)
    assert result == run.counts


def test_a_run_again_after_it_finished_does_nothing(
    world: World, forgetter: Callable[..., Principal]
):
    # given a run done
    person = forgetter({AGENT: None})
    run_id = forget(person, "ana").json()["id"]
    counts = run_forget(run_id)
    # when the task is delivered again
    again = run_forget(run_id)
    # then
    assert again is None
    assert ForgetRun.objects.get(pk=run_id).counts == counts


def test_a_run_that_failed_part_of_the_way_goes_on_and_adds_up_its_counts(
    world: World, forgetter: Callable[..., Principal]
):
    # given a run whose first attempt failed after the first batches
    person = forgetter({AGENT: None})
    run_id = forget(person, "ana").json()["id"]
    real = cascade_services.MemoryCascade._messages_of_user_batch
    failing = mock.patch.object(
        cascade_services.MemoryCascade,
        "_messages_of_user_batch",
        side_effect=RuntimeError("the database went away"),
    )
    with failing, pytest.raises(RuntimeError):
        run_forget(run_id)
    # the recorder of the task would write the error; the run is still open here
    partial = ForgetRun.objects.get(pk=run_id)
    assert partial.counts["threads"] == 4
    assert cascade_services.MemoryCascade._messages_of_user_batch is real
    # when it runs again
    counts = run_forget(run_id, attempt=2)
    # then the rest went, and the counts add up to one whole run's
    assert counts is not None
    assert counts["threads"] == 4
    assert counts["threads_changed"] == 1
    assert canaries("CANARYANA") == {}
