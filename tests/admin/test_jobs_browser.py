"""Dead jobs in the admin, in a real browser (Playwright driving Debian's Chromium) at
1400 px: a staff user finds a dead extraction run by its status, reads why it died, and
takes it back with the Retry action; the run then runs (tasks run eagerly here, with the
scripted model) and is done. Screenshots go to test-output/screenshots/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from playwright.sync_api import expect
from pytest_django.live_server_helper import LiveServer

from cogitator_memory.access.models import Grant
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.jobs import RunStatus
from cogitator_memory.threads import services
from tests.admin.test_browser import SCREENSHOT_DIR, chromium_page
from tests.admin.test_review_browser import PASSWORD, log_in
from tests.admin.test_review_screen_browser import fits_the_window

pytestmark = pytest.mark.django_db(transaction=True)

WIDTH = 1400
LIST = "/admin/cogitator_memory/extractionrun/"
DIED = "Given up after 3 attempts. Its worker was lost while it ran."


def test_a_dead_run_is_found_by_its_status_and_retried_until_done(
    live_server: LiveServer, settings: Any, tmp_path: Path
) -> None:
    # given a dead run, and a staff user who may change runs, granted its agent
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"text": "[]", "repeat": True}]))
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "scripted", "SCRIPT": str(script)}}
    thread = services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-trip")
    services.add_entry(thread.pk, role="user", content="I live in Lisbon.")
    dead = ExtractionRun.objects.create(
        thread=thread, status=RunStatus.DEAD, attempts=3, error=DIED
    )
    ExtractionRun.objects.create(thread=thread, status=RunStatus.DONE)
    keeper = User.objects.create_user("keeper", password=PASSWORD, is_staff=True)
    keeper.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_extractionrun", "change_extractionrun"])
    )
    Grant.objects.create(user=keeper, agent_id="concierge")
    shots = SCREENSHOT_DIR / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)

    with chromium_page(WIDTH) as page:
        log_in(page, live_server, "keeper", LIST)
        # when the list is filtered to dead runs
        page.get_by_role("link", name="dead").click()
        page.wait_for_url("**status__exact=dead**")
        rows = page.locator("#result_list tbody tr")
        # then the dead run is there, alone, with why it died
        expect(rows).to_have_count(1)
        expect(rows.first).to_contain_text(dead.pk)
        expect(rows.first).to_contain_text(DIED)
        fits_the_window(page)
        page.screenshot(path=str(shots / "jobs-dead-run.png"), full_page=True)
        # when it is retried
        rows.first.locator("input.action-select").check()
        page.select_option("select[name=action]", "retry_jobs_action")
        page.click("button[name=index]")
        # then the admin says so
        expect(page.locator("ul.messagelist")).to_contain_text("1 job queued again.")
        page.screenshot(path=str(shots / "jobs-retried.png"), full_page=True)

    # and the run ran again, to the end, its attempts counted afresh
    dead.refresh_from_db()
    assert (dead.status, dead.attempts, dead.error) == (RunStatus.DONE, 1, "")
    assert LogEntry.objects.filter(object_id=dead.pk, user=keeper).exists()


def test_the_retry_action_is_not_offered_to_who_may_only_view(
    client: Any, django_user_model: Any
) -> None:
    viewer = User.objects.create_user("viewer", password=PASSWORD, is_staff=True)
    viewer.user_permissions.add(*Permission.objects.filter(codename="view_extractionrun"))
    client.force_login(viewer)
    page = client.get(LIST)
    assert page.status_code == 200
    assert b"retry_jobs_action" not in page.content
