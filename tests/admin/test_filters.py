"""List filters whose choices cost index lookups: agents (threads, grants), topics."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from cogitator_memory.access.models import Grant
from cogitator_memory.admin.filters import IndexedValuesFilter, first_distinct_values
from cogitator_memory.outbox.models import OutboxMessage
from cogitator_memory.threads.models import Thread

pytestmark = pytest.mark.django_db


def threads_url() -> str:
    return reverse("admin:cogitator_memory_thread_changelist")


def filter_choices(response: object, title: str) -> list[str]:
    """The choices the filter titled ``title`` offers, "All" left out."""
    for spec in response.context["cl"].filter_specs:  # type: ignore[attr-defined]
        if str(spec.title) == title:
            return [str(display) for _value, display in spec.lookup_choices]
    raise AssertionError(f"no filter {title!r}")


def make_threads(*agent_ids: str) -> None:
    Thread.objects.bulk_create(
        Thread(id=f"t-{n}-{agent_id}", agent_id=agent_id) for n, agent_id in enumerate(agent_ids)
    )


@pytest.fixture
def two_choices(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(IndexedValuesFilter, "choices_limit", 2)
    yield


# --- the first values of a column ------------------------------------------------------


def test_first_distinct_values_are_the_smallest_values_in_order_without_null() -> None:
    # given threads of three users (two threads each) and threads of no user
    Thread.objects.bulk_create(
        Thread(id=f"t-{n}", agent_id="agent-1", user_id=user_id)
        for n, user_id in enumerate(["u-3", "u-1", None, "u-2", "u-1", None, "u-3", "u-2"])
    )
    # when
    every = first_distinct_values(Thread, "user_id", limit=10)
    first_two = first_distinct_values(Thread, "user_id", limit=2)
    # then
    assert every == ["u-1", "u-2", "u-3"]
    assert first_two == ["u-1", "u-2"]


def test_first_distinct_values_of_an_empty_table_are_none() -> None:
    # then
    assert first_distinct_values(Thread, "agent_id", limit=5) == []


# --- agents of threads -----------------------------------------------------------------


def test_the_thread_list_offers_a_superuser_the_agents_of_the_threads(
    admin_client: Client,
) -> None:
    # given
    make_threads("sales-bot", "support-bot", "sales-bot")
    # when
    response = admin_client.get(threads_url())
    # then
    assert filter_choices(response, "agent id") == ["sales-bot", "support-bot"]
    assert 'name="agent_id"' not in response.content.decode()


def test_past_the_listed_agents_a_text_box_takes_any_agent(
    admin_client: Client, two_choices: None
) -> None:
    # given three agents, two choices listed
    make_threads("agent-a", "agent-b", "agent-c")
    # when
    unfiltered = admin_client.get(threads_url())
    filtered = admin_client.get(threads_url(), {"agent_id": "agent-c", "q": "t-"})
    # then
    assert filter_choices(unfiltered, "agent id") == ["agent-a", "agent-b"]
    assert 'name="agent_id" value=""' in unfiltered.content.decode()
    assert [thread.agent_id for thread in filtered.context["cl"].result_list] == ["agent-c"]
    html = filtered.content.decode()
    assert 'name="agent_id" value="agent-c"' in html
    # The box keeps the list's other parameters.
    assert '<input type="hidden" name="q" value="t-">' in html


def test_a_staff_user_is_offered_the_agents_of_their_grants_without_a_read_of_threads(
    django_user_model: type,
) -> None:
    # given a viewer granted two agents, one of them without threads yet
    user = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_thread"))
    Grant.objects.create(user=user, agent_id="support-bot")
    Grant.objects.create(user=user, agent_id="new-bot")
    make_threads("support-bot", "secret-bot")
    client = Client()
    client.force_login(user)
    # when
    with CaptureQueriesContext(connection) as queries:
        response = client.get(threads_url())
    # then
    assert filter_choices(response, "agent id") == ["new-bot", "support-bot"]
    assert not [q for q in queries.captured_queries if "RECURSIVE" in q["sql"].upper()]


# --- agents of grants, topics of outbox messages ---------------------------------------


def test_the_grant_list_offers_the_agents_of_the_grants(
    admin_client: Client, django_user_model: type
) -> None:
    # given
    alice = django_user_model.objects.create_user("alice", password="pw")
    Grant.objects.create(user=alice, agent_id="support-bot")
    Grant.objects.create(user=alice, agent_id="sales-bot")
    # when
    response = admin_client.get(reverse("admin:cogitator_memory_grant_changelist"))
    # then
    assert filter_choices(response, "agent id") == ["sales-bot", "support-bot"]


def test_the_outbox_list_offers_its_topics_and_filters_by_one(admin_client: Client) -> None:
    # given
    for topic in ["tests.b", "tests.a", "tests.b"]:
        OutboxMessage.objects.create(topic=topic, payload={})
    url = reverse("admin:cogitator_memory_outboxmessage_changelist")
    # when
    unfiltered = admin_client.get(url)
    filtered = admin_client.get(url, {"topic": "tests.b"})
    # then
    assert filter_choices(unfiltered, "topic") == ["tests.a", "tests.b"]
    assert [message.topic for message in filtered.context["cl"].result_list] == [
        "tests.b",
        "tests.b",
    ]
