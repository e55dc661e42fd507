"""Outbox messages in the admin: listed read-only, published on demand by a superuser."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from cogitator_memory.outbox import services as outbox
from cogitator_memory.outbox.models import OutboxMessage

pytestmark = pytest.mark.django_db

LIST_URL = "/admin/cogitator_memory/outboxmessage/"
TOPIC = "tests.admin.outbox"


@pytest.fixture
def carried_out() -> Iterator[list[dict[str, Any]]]:
    done: list[dict[str, Any]] = []
    outbox.register_handler(TOPIC, done.append)
    yield done


def waiting_message(payload: dict[str, Any]) -> OutboxMessage:
    """A message whose publication failed once and waits for its next attempt."""
    return OutboxMessage.objects.create(
        topic=TOPIC,
        payload=payload,
        attempts=1,
        next_attempt_at=timezone.now() + timedelta(hours=1),
        last_error="Outage: down",
    )


def test_the_list_shows_waiting_messages_and_offers_no_edit(admin_client: Client) -> None:
    # given
    message = waiting_message({"n": 1})
    # when
    page = admin_client.get(LIST_URL)
    detail = admin_client.get(f"{LIST_URL}{message.pk}/change/")
    # then
    assert page.status_code == 200
    assert TOPIC in page.content.decode()
    assert "Outage: down" in page.content.decode()
    assert admin_client.get(f"{LIST_URL}add/").status_code == 403
    assert b'name="_save"' not in detail.content


def test_publish_now_carries_the_messages_out_at_once(
    admin_client: Client, carried_out: list[dict[str, Any]]
) -> None:
    # given a message waiting an hour for its next attempt
    message = waiting_message({"n": 2})
    # when
    response = admin_client.post(
        LIST_URL, {"action": "publish_now", "_selected_action": [message.pk]}, follow=True
    )
    # then
    assert response.status_code == 200
    assert carried_out == [{"n": 2}]
    assert not OutboxMessage.objects.exists()
    assert "1 done, 0 failed again" in response.content.decode()


def test_a_staff_user_who_is_not_a_superuser_cannot_publish(
    django_user_model: type, carried_out: list[dict[str, Any]]
) -> None:
    # given a staff user who may view outbox messages
    user = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_outboxmessage"))
    client = Client()
    client.force_login(user)
    message = waiting_message({"n": 3})
    # when
    page = client.get(LIST_URL)
    client.post(LIST_URL, {"action": "publish_now", "_selected_action": [message.pk]})
    # then the action is not offered and does nothing
    assert page.status_code == 200
    assert "publish_now" not in page.content.decode()
    assert carried_out == []
    assert OutboxMessage.objects.filter(pk=message.pk).exists()
