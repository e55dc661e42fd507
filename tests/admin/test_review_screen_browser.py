"""The review screen as a new reviewer meets it, at 1400 px wide, in a real browser
(Playwright driving Debian's Chromium).

Each test opens a page as a staff reviewer granted the concierge agent, checks what the
page promises in the DOM (nothing wider than the window, the elements there and visible)
and saves a screenshot to test-output/screenshots/. The database is only touched outside
the browser block (see test_browser.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from cogitator_memory.access.models import Grant
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ExtractionRun, ItemStatus, MemoryItem, RunStatus
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry
from tests.admin.test_browser import SCREENSHOT_DIR, chromium_page
from tests.admin.test_review_browser import PASSWORD, log_in

pytestmark = pytest.mark.django_db(transaction=True)

WIDTH = 1400
SHOTS = SCREENSHOT_DIR / "screenshots"
LIST = "/admin/cogitator_memory/memoryitem/"
PERMISSIONS = (
    "view_memoryitem",
    "activate_memoryitem",
    "reject_memoryitem",
    "let_go_memoryitem",
    "view_thread",
    "view_entry",
    "view_extractionrun",
    "view_compactionrun",
)
DECISION_NAMES = ("activate", "reject", "let-go")


@dataclass
class Trip:
    said: Entry
    answer: Entry
    home: MemoryItem
    seat: MemoryItem
    tea: MemoryItem
    rejected: MemoryItem
    compaction: Entry


def new_reviewer() -> None:
    user = User.objects.create_user("reviewer", password=PASSWORD, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=PERMISSIONS))
    Grant.objects.create(user=user, agent_id="concierge")


def trip() -> Trip:
    """A long conversation of Ana's with the concierge, the items a model drew from it
    (suggested, one rejected), a compaction of it, and the runs that made them."""
    thread = services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-trip")
    for number in range(30):
        services.add_entry(
            thread.pk, role="user", name="Ana", content=f"Earlier question number {number}."
        )
        services.add_entry(thread.pk, role="assistant", content=f"Earlier answer {number}.")
    said = services.add_entry(
        thread.pk,
        role="user",
        name="Ana",
        content="I moved to Lisbon last May, and I always take the aisle. "
        "Green tea in the morning, never coffee after noon, and please remember that my "
        "partner Joaquim is allergic to shellfish whenever you book a restaurant for us.",
    )
    answer = services.add_entry(
        thread.pk, role="assistant", content="Noted: Lisbon, aisle seats, green tea."
    )
    for number in range(30):
        services.add_entry(thread.pk, role="user", name="Ana", content=f"Later note {number}.")
    items = MemoryItems()
    scope = MemoryScope("concierge", user_id="ana")

    def write(attribute: str, value: str, *quotes: tuple[str, Entry]) -> MemoryItem:
        return items.write(
            scope,
            NewItem(
                kind="preference" if attribute != "home city" else "fact",
                subject="Ana",
                attribute=attribute,
                value=value,
                trust="model",
                confidence=0.8,
                evidence=[NewEvidence(quote=text, entry_id=entry.pk) for text, entry in quotes],
            ),
            activate=False,
        ).item

    home = write(
        "home city",
        "Lisbon, Portugal (moved in May of last year, according to the conversation)",
        ("I moved to Lisbon last May", said),
        ("Noted: Lisbon", answer),
    )
    seat = write("seat", "window", ("I always take the window", said))
    tea = write(
        "morning drink",
        "green tea",
        (
            "Green tea in the morning, never coffee after noon, and please remember that my "
            "partner Joaquim is allergic to shellfish whenever you book a restaurant",
            said,
        ),
    )
    rejected = write("partner's allergy", "peanuts", ("allergic to shellfish", said))
    items.reject([rejected.pk], "She said shellfish, not peanuts.")
    compaction = services.add_entry(
        thread.pk,
        type="compaction",
        event={
            "strategy": "summary",
            "summary": "Ana moved to Lisbon last May. She takes aisle seats and drinks green "
            "tea in the morning, never coffee after noon.\n\nHer partner Joaquim is "
            "allergic to shellfish: every restaurant booked for them must know it. "
            + "She asked many earlier questions about trains and museums. "
            * 6,
            "first_kept_entry_id": None,
            "covered_to_entry_id": answer.pk,
        },
    )
    ExtractionRun.objects.create(
        thread=thread, status=RunStatus.DONE, windows_done=4, windows_total=4, items_written=4
    )
    CompactionRun.objects.create(
        thread=thread, status=RunStatus.DONE, compaction_entry_id=compaction.pk
    )
    return Trip(said, answer, home, seat, tea, rejected, compaction)


def fits_the_window(page: Page) -> None:
    """No horizontal scroll bar: neither the page's nor one of a box that scrolls (the
    admin scrolls a list too wide for its column inside ``.results``)."""
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= WIDTH, f"the page is {width} px wide, wider than the window"
    scrolling = page.evaluate(
        """() => [...document.querySelectorAll('body *')]
            .filter(node => ['auto', 'scroll'].includes(getComputedStyle(node).overflowX))
            .filter(node => node.scrollWidth > node.clientWidth + 1)
            .map(node => `${node.className}: ${node.scrollWidth}px in ${node.clientWidth}px`)"""
    )
    assert not scrolling, scrolling


def item_page(item: MemoryItem) -> str:
    return reverse("admin:cogitator_memory_memoryitem_change", args=[quote(item.pk)])


def test_the_list_shows_each_items_quotes_who_said_them_and_when_and_fits(
    live_server: LiveServer,
) -> None:
    # given
    found = trip()
    new_reviewer()
    SHOTS.mkdir(parents=True, exist_ok=True)

    with chromium_page(WIDTH) as page:
        # when
        log_in(page, live_server, "reviewer", LIST)
        # then: every suggested item, its quotes with who said them and when
        rows = page.locator("#result_list tbody tr")
        expect(rows).to_have_count(3)
        home = page.locator("#result_list tr", has_text="Lisbon, Portugal")
        cells = home.locator("td.field-quotes li.cm-quote-cell")
        expect(cells).to_have_count(2)
        expect(cells.nth(0)).to_contain_text("I moved to Lisbon last May")
        expect(cells.nth(0)).to_contain_text(f"Ana (user), {found.said.created_at:%Y-%m-%d}")
        expect(cells.nth(1)).to_contain_text("Noted: Lisbon")
        expect(cells.nth(1)).to_contain_text("assistant")
        # the quote that does not hold in its entry is marked so
        seat = page.locator("#result_list tr", has_text="window")
        expect(seat.locator(".cm-quote-cell--fails")).to_contain_text("(not in its entry)")
        page.screenshot(path=SHOTS / "review-list-quotes.png", full_page=True)
        fits_the_window(page)


def test_reject_stands_beside_activate_and_let_go_and_its_reason_is_shown_as_text(
    live_server: LiveServer,
) -> None:
    # given
    found = trip()
    new_reviewer()
    SHOTS.mkdir(parents=True, exist_ok=True)
    seat_page = item_page(found.seat)

    with chromium_page(WIDTH) as page:
        log_in(page, live_server, "reviewer", seat_page)
        # then: the three decisions in one row above the item, Reject with its reason
        bar = page.locator(".cm-decisions__row")
        buttons = [bar.locator(f'button[data-action="{name}"]') for name in DECISION_NAMES]
        for button in buttons:
            expect(button).to_be_visible()
        expect(bar.locator("#cm-reject-reason")).to_be_visible()
        tops = [button.bounding_box()["y"] for button in buttons]  # type: ignore[index]
        assert max(tops) - min(tops) < 10, tops
        # and nothing to save: the item changes by review only
        expect(page.locator('input[name="_save"], input[name="_continue"]')).to_have_count(0)
        page.screenshot(path=SHOTS / "review-item-decisions.png", full_page=True)
        fits_the_window(page)

        # when: rejected with a reason
        page.fill("#cm-reject-reason", "She said aisle, not window.")
        page.locator('button[data-action="reject"]').click()
        page.wait_for_url(f"**{seat_page}")

        # then: the reason reads as text beside the status, not as JSON
        expect(page.locator("ul.messagelist li.success")).to_contain_text("rejected")
        why = page.locator(".field-why_stale .readonly")
        expect(why).to_be_visible()
        expect(why).to_contain_text("Rejected by reviewer on")
        expect(why).to_contain_text("She said aisle, not window.")
        expect(page.locator(".field-why_stale")).not_to_contain_text("{")
        # a stale item takes only activation now
        expect(page.locator(".cm-decisions__row button")).to_have_count(1)
        expect(page.locator('button[data-action="activate"]')).to_be_visible()
        page.screenshot(path=SHOTS / "review-item-rejected-reason.png", full_page=True)
        fits_the_window(page)

    found.seat.refresh_from_db()
    assert found.seat.status == ItemStatus.STALE


def test_opening_a_quotes_entry_in_its_thread_marks_that_entry(live_server: LiveServer) -> None:
    # given
    found = trip()
    new_reviewer()
    SHOTS.mkdir(parents=True, exist_ok=True)

    with chromium_page(WIDTH) as page:
        log_in(page, live_server, "reviewer", item_page(found.tea))
        # when
        page.locator(".cm-quote__link").first.click()
        page.wait_for_url(f"**#entry-{found.said.pk}")
        # then: the quoted entry is the page's target, marked, and in view
        target = page.locator(f"#entry-{found.said.pk}")
        assert page.evaluate("() => document.querySelector(':target').id") == (
            f"entry-{found.said.pk}"
        )
        expect(target).to_have_class(re.compile(r"(^|\s)cm-entry--highlighted(\s|$)"))
        expect(target.locator(".cm-badge--highlighted")).to_have_text("quoted")
        expect(page.locator(".cm-entry--highlighted")).to_have_count(1)
        background = target.locator(".cm-entry__row").evaluate(
            "row => getComputedStyle(row).backgroundColor"
        )
        assert background == "rgb(255, 224, 102)"
        expect(target).to_be_in_viewport()
        page.screenshot(path=SHOTS / "review-quoted-entry-in-thread.png")
        fits_the_window(page)


def test_the_index_counts_the_items_waiting_and_rejected_items_have_their_filter(
    live_server: LiveServer,
) -> None:
    # given three suggested items of the reviewer's agent, and one of another agent
    trip()
    MemoryItems().write(
        MemoryScope("rival"),
        NewItem(kind="fact", subject="Bo", attribute="city", value="Oslo", trust="model"),
    )
    new_reviewer()
    SHOTS.mkdir(parents=True, exist_ok=True)

    with chromium_page(WIDTH) as page:
        # when
        log_in(page, live_server, "reviewer", "/admin/")
        # then: the index says how many wait, within the reviewer's grants
        queue = page.locator("#cm-review-queue .cm-review-queue__link")
        expect(queue).to_have_text("3 suggested memory items wait for review")
        page.screenshot(path=SHOTS / "review-index-queue.png", full_page=True)
        fits_the_window(page)

        # when: followed, it opens the review list on the suggested items
        queue.click()
        page.wait_for_url("**/memoryitem/?status=suggested")
        expect(page.locator("#result_list tbody tr")).to_have_count(3)

        # and the rejected ones have their own filter
        page.locator("#changelist-filter a", has_text="rejected").click()
        page.wait_for_url("**status=rejected")
        expect(page.locator("#result_list tbody tr")).to_have_count(1)
        expect(page.locator("#result_list")).to_contain_text("peanuts")
        page.screenshot(path=SHOTS / "review-rejected-filter.png", full_page=True)
        fits_the_window(page)


def test_compaction_runs_sit_beside_extraction_runs_and_a_compaction_reads_as_text(
    live_server: LiveServer,
) -> None:
    # given
    found = trip()
    new_reviewer()
    SHOTS.mkdir(parents=True, exist_ok=True)
    entry_page = reverse("admin:cogitator_memory_entry_change", args=[quote(found.compaction.pk)])

    with chromium_page(WIDTH) as page:
        log_in(page, live_server, "reviewer", "/admin/cogitator_memory/")
        # then: both kinds of runs are in the app's list
        models = page.locator("#content-main")
        expect(models.locator("a", has_text="Compaction runs")).to_be_visible()
        expect(models.locator("a", has_text="Extraction runs")).to_be_visible()

        # when: the compaction runs are opened
        models.locator("a", has_text="Compaction runs").click()
        expect(page.locator("#result_list tbody tr")).to_have_count(1)
        expect(page.locator("#result_list")).to_contain_text("ana-trip")
        page.screenshot(path=SHOTS / "admin-compaction-runs.png", full_page=True)
        fits_the_window(page)

        # and the run's compaction entry
        page.locator("#result_list td.field-entry_link a").click()
        page.wait_for_url(f"**{entry_page}")
        summary = page.locator(".cm-text--summary")
        expect(summary).to_be_visible()
        expect(summary).to_contain_text("Her partner Joaquim is allergic to shellfish")
        assert summary.evaluate("node => getComputedStyle(node).whiteSpace") == "pre-wrap"
        box = summary.bounding_box()
        assert box is not None and box["x"] + box["width"] <= WIDTH
        # the raw event is folded away, not what the page opens on
        expect(page.locator(".field-event")).to_be_hidden()
        expect(page.locator('input[name="_save"]')).to_have_count(0)
        page.screenshot(path=SHOTS / "admin-compaction-entry.png", full_page=True)
        fits_the_window(page)

        # when: the entries list
        page.goto(f"{live_server.url}/admin/cogitator_memory/entry/")
        # then: it fits and shows the compaction's summary as its content
        expect(page.locator("#result_list tbody tr").first).to_be_visible()
        expect(page.locator("#result_list")).to_contain_text("Ana moved to Lisbon last May")
        page.screenshot(path=SHOTS / "admin-entries-list.png")
        fits_the_window(page)
