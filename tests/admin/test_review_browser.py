"""The review of memory items in a real browser: Playwright driving Debian's Chromium.

A reviewer logs in, opens the suggested items, sees a quote marked inside its entry,
activates one and rejects another; the states and the admin log change. A reviewer
without the permissions sees no buttons, and a forged POST is refused. Screenshots go to
test-output/ (the README's pictures of the review screen are taken this way).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission
from django.urls import reverse
from playwright.sync_api import expect
from pytest_django.live_server_helper import LiveServer

from cogitator_memory.access.models import Grant
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads import services
from tests.admin.test_browser import SCREENSHOT_DIR, chromium_page

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct-horse-battery-staple"
LIST = "/admin/cogitator_memory/memoryitem/"
REVIEW_PERMISSIONS = ("activate_memoryitem", "reject_memoryitem", "let_go_memoryitem")


@dataclass
class Suggestions:
    home: MemoryItem
    seat: MemoryItem


def suggestions() -> Suggestions:
    thread = services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-trip")
    said = services.add_entry(
        thread.pk, role="user", content="I moved to Lisbon last May, and I always take the aisle."
    )
    scope = MemoryScope("concierge", user_id="ana")
    items = MemoryItems()

    def write(attribute: str, value: str, quote_text: str) -> MemoryItem:
        return items.write(
            scope,
            NewItem(
                kind="fact",
                subject="Ana",
                attribute=attribute,
                value=value,
                trust="user",
                confidence=0.9,
                evidence=[NewEvidence(quote=quote_text, entry_id=said.pk)],
            ),
            activate=False,
        ).item

    return Suggestions(
        home=write("home city", "Lisbon", "moved to Lisbon last May"),
        seat=write("seat", "window", "I always take the window"),
    )


def reviewer(django_user_model: type, name: str, *codenames: str) -> None:
    user = django_user_model.objects.create_user(name, password=PASSWORD, is_staff=True)
    for codename in ("view_memoryitem", "view_thread", *codenames):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    Grant.objects.create(user=user, agent_id="concierge")


def log_in(page, live_server: LiveServer, name: str, next_path: str) -> None:
    page.goto(f"{live_server.url}{reverse('admin:login')}?next={next_path}")
    page.fill("#id_username", name)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"**{next_path}")


def test_a_reviewer_activates_one_suggestion_and_rejects_another(
    live_server: LiveServer, django_user_model: type
) -> None:
    # given
    found = suggestions()
    reviewer(
        django_user_model,
        "reviewer",
        "activate_memoryitem",
        "reject_memoryitem",
        "let_go_memoryitem",
    )
    home_page = reverse("admin:cogitator_memory_memoryitem_change", args=[quote(found.home.pk)])
    seat_page = reverse("admin:cogitator_memory_memoryitem_change", args=[quote(found.seat.pk)])
    SCREENSHOT_DIR.mkdir(exist_ok=True)

    with chromium_page() as page:
        # when: the reviewer opens the suggested items
        log_in(page, live_server, "reviewer", LIST)
        expect(page.locator("#result_list")).to_contain_text("Lisbon")
        expect(page.locator("#result_list")).to_contain_text("window")
        page.screenshot(path=SCREENSHOT_DIR / "review-suggested-items.png", full_page=True)

        # then: the item's page marks the quote inside its entry
        page.goto(f"{live_server.url}{home_page}")
        expect(page.locator(".cm-quote__entry mark")).to_have_text("moved to Lisbon last May")
        expect(page.locator(".cm-quote--holds")).to_have_count(1)
        page.screenshot(path=SCREENSHOT_DIR / "review-item-with-quote.png", full_page=True)

        # when: it is activated
        page.locator('button[data-action="activate"]').click()
        page.wait_for_url(f"**{home_page}")
        expect(page.locator("ul.messagelist li.success")).to_contain_text("activated")

        # and the other one, whose quote does not hold, is rejected with a reason
        page.goto(f"{live_server.url}{seat_page}")
        expect(page.locator(".cm-quote--fails")).to_have_count(1)
        page.fill("#cm-reject-reason", "She said aisle, not window.")
        page.locator('button[data-action="reject"]').click()
        page.wait_for_url(f"**{seat_page}")
        expect(page.locator("ul.messagelist li.success")).to_contain_text("rejected")
        page.screenshot(path=SCREENSHOT_DIR / "review-item-rejected.png", full_page=True)

    # then: the states and the admin log changed
    found.home.refresh_from_db()
    found.seat.refresh_from_db()
    assert (found.home.status, found.seat.status) == (ItemStatus.ACTIVE, ItemStatus.STALE)
    assert found.seat.stale_because["note"] == "She said aisle, not window."
    assert sorted(LogEntry.objects.values_list("object_id", flat=True)) == sorted(
        [found.home.pk, found.seat.pk]
    )


def test_a_reviewer_without_the_permissions_gets_no_buttons_and_a_403(
    live_server: LiveServer, django_user_model: type
) -> None:
    found = suggestions()
    reviewer(django_user_model, "viewer")
    home_page = reverse("admin:cogitator_memory_memoryitem_change", args=[quote(found.home.pk)])

    with chromium_page() as page:
        log_in(page, live_server, "viewer", home_page)
        expect(page.locator(".cm-quote__entry mark")).to_have_count(1)
        expect(page.locator("button[data-action]")).to_have_count(0)
        # a forged POST, with the page's own CSRF token
        token = page.evaluate(
            "() => document.cookie.split('; ').find(c => c.startsWith('csrftoken=')).split('=')[1]"
        )
        status = page.evaluate(
            """async ([url, token]) => (await fetch(url, {method: 'POST',
                headers: {'X-CSRFToken': token}})).status""",
            [f"{live_server.url}{LIST}{quote(found.home.pk)}/activate/", token],
        )
        assert status == 403

    found.home.refresh_from_db()
    assert found.home.status == ItemStatus.SUGGESTED
    assert not LogEntry.objects.exists()
