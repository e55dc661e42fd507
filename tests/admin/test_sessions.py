"""Channel sessions in the admin: read-only, only those a staff user's grants reach, filtered
by agent, channel type and status, each linking its thread."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.test import Client

from cogitator_memory.access.models import Grant
from cogitator_memory.sessions.services import SessionManager

pytestmark = pytest.mark.django_db

LIST = "/admin/cogitator_memory/channelsession/"


def staff(agent: str, users: list[str] | None = None) -> Client:
    user = User.objects.create_user("desk", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_channelsession"))
    Grant.objects.create(user=user, agent_id=agent, user_ids=users)
    client = Client()
    client.force_login(user)
    return client


def test_a_staff_user_sees_the_sessions_their_grants_reach_with_their_threads() -> None:
    # given
    mine, _ = SessionManager().get_or_create("ana", "telegram", "chat-mine", "concierge")
    other_user, _ = SessionManager().get_or_create("bob", "telegram", "chat-bob", "concierge")
    theirs, _ = SessionManager().get_or_create("ana", "slack", "chat-theirs", "other")
    client = staff("concierge", ["ana"])
    # when
    html = client.get(LIST).content.decode()
    # then
    assert mine.pk in html and "chat-mine" in html
    assert f"/admin/cogitator_memory/thread/{quote(mine.thread_id)}/change/" in html
    assert other_user.pk not in html and "chat-bob" not in html
    assert theirs.pk not in html and "chat-theirs" not in html and "slack" not in html
    assert client.get(f"{LIST}{quote(theirs.pk)}/change/").status_code == 302
    page = client.get(f"{LIST}{quote(mine.pk)}/change/")
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()


def test_the_filters_of_agent_channel_type_and_status(admin_client: Client) -> None:
    # given
    web, _ = SessionManager().get_or_create("ana", "web", "w1", "concierge")
    telegram, _ = SessionManager().get_or_create("ana", "telegram", "t1", "other")
    SessionManager().close(telegram.pk)
    # when
    by_agent = admin_client.get(LIST, {"agent_id": "concierge"}).content.decode()
    by_channel = admin_client.get(LIST, {"channel_type": "telegram"}).content.decode()
    by_status = admin_client.get(LIST, {"status__exact": "closed"}).content.decode()
    # then
    assert web.pk in by_agent and telegram.pk not in by_agent
    assert telegram.pk in by_channel and web.pk not in by_channel
    assert telegram.pk in by_status and web.pk not in by_status


def test_sessions_are_neither_added_changed_nor_deleted_by_hand(admin_client: Client) -> None:
    # given
    session, _ = SessionManager().get_or_create("ana", "web", "w1", "concierge")
    # when / then
    assert admin_client.get(f"{LIST}add/").status_code == 403
    assert (
        admin_client.post(f"{LIST}{quote(session.pk)}/delete/", {"post": "yes"}).status_code == 403
    )
    page = admin_client.get(f"{LIST}{quote(session.pk)}/change/").content.decode()
    assert 'name="_save"' not in page
