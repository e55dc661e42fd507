"""Forgetting in the admin as a staff user meets it, at 1400 px wide, in a real browser
(Playwright driving Debian's Chromium): the confirmation page of "Delete with replies"
with what would go counted per store, and "Forget a user" from the admin index to the run's
report. Screenshots go to test-output/screenshots/. The database is only touched outside
the browser block (see test_browser.py)."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from playwright.sync_api import expect
from pytest_django.live_server_helper import LiveServer

from cogitator_memory.access.models import Grant
from cogitator_memory.cascade.models import ForgetRun
from cogitator_memory.jobs import RunStatus
from cogitator_memory.threads.models import Entry, Thread
from tests.admin.test_browser import SCREENSHOT_DIR, chromium_page
from tests.admin.test_review_browser import PASSWORD, log_in
from tests.admin.test_review_screen_browser import fits_the_window
from tests.cascade.conftest import AGENT, build_world

pytestmark = pytest.mark.django_db(transaction=True)

WIDTH = 1400
SHOTS = SCREENSHOT_DIR / "screenshots"
PERMISSIONS = (
    "view_thread",
    "view_entry",
    "delete_entry",
    "redact_entry",
    "rewind_thread",
    "delete_thread",
    "forget_user_memory",
)


def new_keeper() -> None:
    """A staff user who may forget, granted the concierge agent."""
    user = User.objects.create_user("keeper", password=PASSWORD, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=PERMISSIONS))
    Grant.objects.create(user=user, agent_id=AGENT)


def counts_of(page: object) -> dict[str, str]:
    rows = page.locator("#cm-forget-counts tbody tr")  # type: ignore[attr-defined]
    return {
        rows.nth(index).locator("td").nth(0).inner_text(): rows.nth(index)
        .locator("td")
        .nth(1)
        .inner_text()
        for index in range(rows.count())
    }


def test_delete_with_replies_shows_what_goes_per_store_before_it_goes(
    live_server: LiveServer,
) -> None:
    # given
    world = build_world()
    new_keeper()
    ana = world.users["ana"]
    chat_page = reverse("admin:cogitator_memory_thread_change", args=[quote(ana.chat)])
    SHOTS.mkdir(parents=True, exist_ok=True)

    with chromium_page(WIDTH) as page:
        log_in(page, live_server, "keeper", chat_page)
        # then: each entry of the tree has its forgetting buttons
        first = page.locator(f"#entry-{ana.entries['e1']}")
        expect(first.locator(".cm-action--delete")).to_be_visible()
        expect(first.locator(".cm-action--redact")).to_be_visible()
        fits_the_window(page)

        # when: "Delete…" on the first user message
        first.locator(".cm-action--delete").click()
        page.wait_for_url("**/entry/forget/delete/")

        # then: the confirmation page counts what goes, per store, and changes nothing
        expect(page.locator("h1")).to_contain_text("Delete with replies")
        table = page.locator("#cm-forget-counts")
        expect(table).to_be_visible()
        counts = counts_of(page)
        assert counts["Chosen entries"] == "1"
        assert counts["Their replies"] == "3"
        assert counts["Copies in forks"] == "8"
        assert counts["Entries deleted"] == "12"
        assert counts["Memory items purged"] == "1"
        assert counts["Memory file versions redacted or deleted"] == "2"
        expect(page.locator(".cm-forget__submit")).to_have_value("Delete")
        page.screenshot(path=SHOTS / "forget-confirm-delete-with-replies.png", full_page=True)
        fits_the_window(page)

        # when: confirmed
        page.locator(".cm-forget__submit").click()
        page.wait_for_url(f"**{chat_page}")

        # then: back on the thread, which says what went
        expect(page.locator("ul.messagelist li.success")).to_contain_text(
            "Deleted with their replies; entries deleted: 12"
        )
        expect(page.locator(f"#entry-{ana.entries['e1']}")).to_have_count(0)
        page.screenshot(path=SHOTS / "forget-after-delete-with-replies.png", full_page=True)
        fits_the_window(page)

    assert not Entry.objects.filter(pk=ana.entries["e1"]).exists()


def test_forgetting_a_user_from_the_admin_index_to_the_runs_report(
    live_server: LiveServer,
) -> None:
    # given
    build_world()
    new_keeper()
    SHOTS.mkdir(parents=True, exist_ok=True)
    forget_page = reverse("admin:cogitator_memory_forgetrun_forget_user")

    with chromium_page(WIDTH) as page:
        log_in(page, live_server, "keeper", "/admin/")
        # when: from the index to the forget runs, and their "Forget a user"
        page.locator("#content-main a", has_text="Forget runs").first.click()
        page.locator(".cm-forget-user-link").click()
        page.wait_for_url(f"**{forget_page}")
        expect(page.locator("h1")).to_have_text("Forget a user")
        page.fill("#id_user_id", "ana")
        page.screenshot(path=SHOTS / "forget-user-form.png", full_page=True)
        fits_the_window(page)
        page.locator('input[type=submit][value="Count what would go"]').click()

        # then: what would go, per store, and the user id to type
        expect(page.locator("h1")).to_have_text("Forget user ana")
        counts = counts_of(page)
        assert counts["Threads deleted"] == "4"
        assert counts["Entries of the user's threads"] == "26"
        assert counts["Entries in threads of others"] == "2"
        assert counts["Memory items purged"] == "2"
        expect(page.locator("#cm-confirm")).to_be_visible()
        page.screenshot(path=SHOTS / "forget-user-confirm.png", full_page=True)
        fits_the_window(page)

        # when: the id typed wrong, then right
        page.fill("#cm-confirm", "bea")
        page.locator(".cm-forget__submit").click()
        expect(page.locator(".errornote")).to_contain_text("Type the id of the user")
        page.fill("#cm-confirm", "ana")
        page.locator(".cm-forget__submit").click()
        page.wait_for_url("**/forgetrun/fgt_*/change/")

        # then: the run's page, done, with what went counted per store
        run = page.locator("#cm-forget-run")
        expect(run).to_have_attribute("data-status", "done")
        expect(run.locator(".cm-forget-run__status")).to_have_text("Done: the user is forgotten.")
        counts = counts_of(page)
        assert counts["Threads deleted"] == "4"
        assert counts["Entries deleted"] == "28"
        page.screenshot(path=SHOTS / "forget-user-run-done.png", full_page=True)
        fits_the_window(page)

    run_row = ForgetRun.objects.get()
    assert (run_row.status, run_row.user_id) == (RunStatus.DONE, "ana")
    assert not Thread.objects.filter(user_id="ana").exists()
    assert Thread.objects.filter(user_id="bea").exists()
