"""The memory file browser in a real browser: Playwright driving Debian's Chromium.

A staff user logs in, finds a file in the list, opens it, chooses two of its versions and
sees their diff with the removed and the added lines marked, side by side and unified.
The side-by-side page is saved to test-output/ (the README's picture of it is taken this
way; see tests/admin/test_browser.py for Chromium and the database).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import expect
from pytest_django.live_server_helper import LiveServer

from cogitator_memory.access.models import Grant
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.models import Author, MemoryFileHead
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from tests.admin.test_browser import SCREENSHOT_DIR, chromium_page
from tests.admin.test_review_browser import PASSWORD, log_in

pytestmark = pytest.mark.django_db(transaction=True)

LIST = "/admin/cogitator_memory/memoryfilehead/"
PATH = "/memories/user.md"
VERSIONS = (
    "# Ana\n- Lives in Porto.\n- Allergic to peanuts.\n- Takes the window seat.\n",
    "# Ana\n- Lives in Porto.\n- Allergic to peanuts.\n- Takes the aisle seat.\n",
    "# Ana\n- Moved to Lisbon last May.\n- Allergic to peanuts.\n- Takes the aisle seat.\n"
    "- <b>Prefers</b> trains to planes.\n",
)


def a_file_with_three_versions() -> MemoryFileHead:
    files = MemoryFiles()
    ana = FileAccess(scope=MemoryScope("concierge", user_id="ana"), author=Author.MODEL)
    for text in VERSIONS:
        files.put(ana, PATH, text)
    files.put(ana, "/memories/trips/lisbon.md", "Flights in May.\n")
    return MemoryFileHead.objects.get(path=PATH)


def test_a_staff_user_opens_a_file_and_compares_two_versions(
    live_server: LiveServer, django_user_model: type
) -> None:
    # given
    head = a_file_with_three_versions()
    user = django_user_model.objects.create_user("desk", password=PASSWORD, is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_memoryfilehead"))
    Grant.objects.create(user=user, agent_id="concierge")
    page_path = f"{LIST}{head.pk}/change/"
    SCREENSHOT_DIR.mkdir(exist_ok=True)

    with chromium_page() as page:
        # when: the file is found in the list and opened
        log_in(page, live_server, "desk", LIST)
        expect(page.locator("#result_list")).to_contain_text("/memories/trips/lisbon.md")
        page.get_by_role("link", name=PATH).click()
        page.wait_for_url(f"**{page_path}")
        expect(page.locator("tr.cm-version")).to_have_count(3)

        # and versions 1 and 3 are chosen
        page.locator('tr[data-sequence="1"] input[name="from"]').check()
        page.locator('tr[data-sequence="3"] input[name="to"]').check()
        page.locator("#cm-compare").click()
        page.wait_for_url("**from=*")

        # then: the diff marks what went and what came, side by side
        expect(page.locator("#cm-diff-heading")).to_have_text(f"{PATH} #1 → {PATH} #3")
        removed = page.locator("td.cm-diff__line--removed")
        added = page.locator("td.cm-diff__line--added")
        expect(removed).to_have_text(["- Lives in Porto.", "- Takes the window seat."])
        expect(added).to_have_text(
            [
                "- Moved to Lisbon last May.",
                "- Takes the aisle seat.",
                "- <b>Prefers</b> trains to planes.",
            ]
        )
        # the model's markup is text, not markup
        expect(page.locator(".cm-diff b")).to_have_count(0)
        page.screenshot(path=SCREENSHOT_DIR / "memory-file-diff.png", full_page=True)

        # and unified, the removed lines before the added ones, with their signs
        page.select_option("#cm-diff-view", "unified")
        page.locator("#cm-compare").click()
        page.wait_for_url("**view=unified*")
        lines = page.locator("tr.cm-diff__line--removed, tr.cm-diff__line--added")
        expect(lines.locator("td.cm-diff__sign")).to_have_text(["-", "+", "-", "+", "+"])
        expect(page.locator("tr.cm-diff__line--removed td.cm-diff__text")).to_have_text(
            ["- Lives in Porto.", "- Takes the window seat."]
        )
