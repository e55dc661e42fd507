"""Extraction and compaction runs in the admin: read-only, and only those of the threads a
staff user's grants reach."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from cogitator_memory.access.models import Grant
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.items.models import ExtractionRun, RunStatus
from cogitator_memory.threads import services

pytestmark = pytest.mark.django_db

LIST = "/admin/cogitator_memory/extractionrun/"


def staff(agent: str, codename: str = "view_extractionrun") -> Client:
    user = User.objects.create_user("desk", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename=codename))
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


# --- compaction runs, beside them -----------------------------------------------------------

COMPACTION_RUNS = "/admin/cogitator_memory/compactionrun/"


def test_a_staff_user_sees_the_compaction_runs_of_their_agents_only() -> None:
    # given
    thread = services.create_thread("concierge", thread_id="t-mine")
    compaction = services.add_entry(
        thread.pk, type="compaction", event={"strategy": "summary", "summary": "So far."}
    )
    mine = CompactionRun.objects.create(
        thread=thread, status=RunStatus.DONE, compaction_entry_id=compaction.pk
    )
    theirs = CompactionRun.objects.create(
        thread=services.create_thread("other", thread_id="t-theirs"), status=RunStatus.FAILED
    )
    client = staff("concierge", "view_compactionrun")
    # when
    html = client.get(COMPACTION_RUNS).content.decode()
    # then: the run, its thread and the entry it wrote
    assert mine.pk in html and "t-mine" in html
    entry_url = reverse("admin:cogitator_memory_entry_change", args=[quote(compaction.pk)])
    assert f'href="{entry_url}"' in html
    assert theirs.pk not in html and "t-theirs" not in html
    assert client.get(f"{COMPACTION_RUNS}{quote(theirs.pk)}/change/").status_code == 302
    page = client.get(f"{COMPACTION_RUNS}{quote(mine.pk)}/change/")
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()


def test_compaction_runs_are_neither_added_nor_deleted_by_hand() -> None:
    run = CompactionRun.objects.create(thread=services.create_thread("concierge"))
    client = staff("concierge", "view_compactionrun")
    assert client.get(f"{COMPACTION_RUNS}add/").status_code == 403
    assert (
        client.post(f"{COMPACTION_RUNS}{quote(run.pk)}/delete/", {"post": "yes"}).status_code == 403
    )
    assert CompactionRun.objects.filter(pk=run.pk).exists()


def test_the_app_lists_compaction_runs_beside_extraction_runs(admin_client: Client) -> None:
    html = admin_client.get("/admin/cogitator_memory/").content.decode()
    assert f'href="{COMPACTION_RUNS}"' in html
    assert f'href="{LIST}"' in html
