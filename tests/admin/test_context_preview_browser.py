"""The context preview in a real browser: Playwright driving Debian's Chromium.

A staff user granted the thread's agent opens the thread's page, follows the preview
link, fills the form with a budget too small for the whole history and submits; the page
shows the built messages and a block left out, linked to its entry. The database is only
touched outside the browser block (see ``tests/admin/test_browser.py``).
"""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission
from django.urls import reverse
from playwright.sync_api import expect
from pytest_django.live_server_helper import LiveServer

from cogitator_memory.access.models import Grant
from cogitator_memory.threads import services
from tests.admin.test_browser import SCREENSHOT_DIR, chromium_page

# The live server answers from another thread, so the data must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct-horse-battery-staple"


def test_preview_from_the_thread_page_shows_the_messages_and_what_was_left_out(
    live_server: LiveServer, django_user_model: type
) -> None:
    # given: a staff user granted agent-1, and its thread of three turns
    user = django_user_model.objects.create_user("reviewer", password=PASSWORD, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_thread", "view_entry"])
    )
    Grant.objects.create(user=user, agent_id="agent-1")
    thread = services.create_thread("agent-1", {"userId": "u-7"}, thread_id="parcel")
    question = services.add_entry(thread.pk, role="user", content="Where is my parcel?")
    services.add_entry(thread.pk, role="assistant", content="It left the depot.")
    services.add_entry(thread.pk, role="user", content="When will it arrive?")
    change_path = reverse("admin:cogitator_memory_thread_change", args=[quote(thread.pk)])
    entry_path = reverse("admin:cogitator_memory_entry_change", args=[quote(question.pk)])
    SCREENSHOT_DIR.mkdir(exist_ok=True)

    with chromium_page() as page:
        # when: log in, open the thread and follow the preview link
        page.goto(f"{live_server.url}{reverse('admin:login')}?next={change_path}")
        page.fill("#id_username", "reviewer")
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        page.wait_for_url(f"**{change_path}")
        page.get_by_role("link", name="Preview context").click()
        page.wait_for_url("**/preview-context/")

        # when: fill the form (room for the newest turn only) and submit
        page.fill("#id_current_input", "Any news?")
        page.fill("#id_max_tokens", "130")
        page.select_option("#id_strategy", "recent")
        page.fill("#id_system_prompt", "You track parcels.")
        page.click("#cm-preview-form input[type=submit]")
        page.wait_for_url("**/preview-context/?*")

        # then: the built messages, the newest turn last with its cache breakpoint
        messages = page.locator("#cm-messages tbody tr")
        expect(messages.first).to_contain_text("You track parcels.")
        expect(messages.last).to_contain_text("When will it arrive?")
        expect(messages.last).to_contain_text("cache breakpoint")
        expect(page.locator("#cm-messages")).not_to_contain_text("Where is my parcel?")
        # then: the oldest turn is listed as left out for the budget, linked to its entry
        dropped = page.locator("#cm-dropped tr.cm-dropped").filter(has_text=question.pk)
        expect(dropped).to_contain_text("recent")
        expect(dropped).to_contain_text("budget")
        expect(dropped.get_by_role("link", name=question.pk)).to_have_attribute("href", entry_path)
        expect(page.locator("#id_max_tokens")).to_have_value("130")
        page.screenshot(path=SCREENSHOT_DIR / "admin-thread-preview-context.png", full_page=True)
