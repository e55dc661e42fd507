"""The thread page in a real browser: Playwright driving Debian's Chromium.

Chromium comes from Debian (``apt-get install chromium``; ``scripts/ensure-system-packages.sh``
installs it for ``make test`` and CI), never from ``playwright install``, which downloads
a browser build of its own. Without it this test fails and says so; it does not skip.

The database is only touched outside the ``sync_playwright()`` block: Playwright's sync
API keeps an event loop in the test's thread while it is open, and Django refuses
database calls from a thread with a running loop.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.admin.utils import quote
from django.urls import reverse
from playwright.sync_api import Page, expect, sync_playwright
from pytest_django.live_server_helper import LiveServer

from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread

# The live server answers from another thread, so the data must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOT_DIR = Path(settings.BASE_DIR) / "test-output"
USERNAME = "root"
PASSWORD = "correct-horse-battery-staple"


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail(
            "Debian's Chromium is missing: no 'chromium' on PATH. Install it with "
            "'apt-get install -y chromium' (make test and .ci/run do so through "
            "scripts/ensure-system-packages.sh); this test never downloads a browser.",
            pytrace=False,
        )
    return path


@contextmanager
def chromium_page(width: int = 1280) -> Iterator[Page]:
    executable = chromium_path()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": 1000})
            page.set_default_timeout(15_000)
            yield page
        finally:
            browser.close()


@dataclass
class TwoBranches:
    thread: Thread
    question: Entry
    rome: Entry
    rome_detail: Entry
    florence: Entry


def two_branches() -> TwoBranches:
    """question -> rome -> label event -> redacted -> rome_detail, and question -> florence,
    the active branch."""
    thread = services.create_thread("agent-1", {"userId": "u-7"}, thread_id="trip")
    question = services.add_entry(thread.id, role="user", content="Where should I go in spring?")
    rome = services.add_entry(thread.id, role="assistant", content="Rome, for the gardens.")
    services.add_entry(thread.id, type="label", event={"label": "shortlist"})
    secret = services.add_entry(thread.id, role="user", content="My passport is X1234567")
    services.redact_entry(secret.id, reason="passport number")
    rome_detail = services.add_entry(thread.id, role="user", content="Tell me more about Rome.")
    florence = services.add_entry(
        thread.id, role="assistant", content="Florence is quieter.", parent_id=question.id
    )
    return TwoBranches(thread, question, rome, rome_detail, florence)


def active_entry_ids(page: Page) -> set[str]:
    ids = page.locator("li.cm-entry--active").evaluate_all(
        "items => items.map(item => item.dataset.entryId)"
    )
    return set(ids)


def test_checkout_on_the_other_branch_moves_the_active_path_in_a_real_browser(
    live_server: LiveServer, django_user_model: type
) -> None:
    # given
    django_user_model.objects.create_superuser(USERNAME, "root@example.com", PASSWORD)
    trip = two_branches()
    change_path = reverse("admin:cogitator_memory_thread_change", args=[quote(trip.thread.pk)])
    SCREENSHOT_DIR.mkdir(exist_ok=True)

    with chromium_page() as page:
        # when: log in and open the thread
        page.goto(f"{live_server.url}{reverse('admin:login')}?next={change_path}")
        page.fill("#id_username", USERNAME)
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        page.wait_for_url(f"**{change_path}")

        # then: both branches (after the trunk that forks), the active path ending at florence
        expect(page.locator("li.cm-branch")).to_have_count(3)
        expect(page.locator(f"#entry-{trip.rome_detail.pk}")).to_contain_text("Tell me more")
        expect(page.locator(f"#entry-{trip.florence.pk}")).to_contain_text("active leaf")
        assert active_entry_ids(page) == {trip.question.pk, trip.florence.pk}
        page.screenshot(path=SCREENSHOT_DIR / "admin-thread-before-checkout.png", full_page=True)

        # when: checkout at the end of the other branch
        page.locator(f"#entry-{trip.rome_detail.pk} .cm-action--checkout").click()
        page.wait_for_url(f"**{change_path}")

        # then: the page says so and marks the new active path
        expect(page.locator("ul.messagelist li.success")).to_contain_text(
            f"Checked out entry {trip.rome_detail.pk}"
        )
        expect(page.locator(f"#entry-{trip.rome_detail.pk}")).to_contain_text("active leaf")
        expect(page.locator("li.cm-entry--leaf")).to_have_count(1)
        rendered_active = active_entry_ids(page)
        page.screenshot(path=SCREENSHOT_DIR / "admin-thread-after-checkout.png", full_page=True)

    # then: every entry from the root to rome_detail is on the path, and nothing else
    branch = Entry.objects.filter(thread=trip.thread).exclude(pk=trip.florence.pk)
    assert rendered_active == set(branch.values_list("pk", flat=True))
    assert Thread.objects.get(pk=trip.thread.pk).active_leaf_id == trip.rome_detail.pk
