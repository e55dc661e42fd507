"""Extraction runs in the admin: read-only, and only those of the threads a staff user's
grants reach."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.test import Client

from cogitator_memory.access.models import Grant
from cogitator_memory.items.models import ExtractionRun, RunStatus
from cogitator_memory.threads import services

pytestmark = pytest.mark.django_db

LIST = "/admin/cogitator_memory/extractionrun/"


def staff(agent: str) -> Client:
    user = User.objects.create_user("desk", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_extractionrun"))
    Grant.objects.create(user=user, agent_id=agent)
    client = Client()
    client.force_login(user)
    return client


def test_a_staff_user_sees_the_runs_of_their_agents_only() -> None:
    # given
    mine = ExtractionRun.objects.create(
        thread=services.create_thread("concierge", thread_id="t-mine"),
        status=RunStatus.DONE,
        windows_done=3,
        windows_total=3,
    )
    theirs = ExtractionRun.objects.create(
        thread=services.create_thread("other", thread_id="t-theirs"),
        status=RunStatus.FAILED,
        error="llm_failed: The model service failed; try again later.",
    )
    client = staff("concierge")
    # when
    html = client.get(LIST).content.decode()
    # then
    assert mine.pk in html and "3/3" in html and "t-mine" in html
    assert theirs.pk not in html and "t-theirs" not in html
    assert client.get(f"{LIST}{quote(theirs.pk)}/change/").status_code == 302
    page = client.get(f"{LIST}{quote(mine.pk)}/change/")
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()


def test_runs_are_neither_added_nor_deleted_by_hand() -> None:
    # given
    run = ExtractionRun.objects.create(thread=services.create_thread("concierge"))
    client = staff("concierge")
    # when / then
    assert client.get(f"{LIST}add/").status_code == 403
    assert client.post(f"{LIST}{quote(run.pk)}/delete/", {"post": "yes"}).status_code == 403
    assert ExtractionRun.objects.filter(pk=run.pk).exists()
