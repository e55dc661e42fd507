"""The playbook review in a real browser: Playwright driving Debian's Chromium.

A reviewer logs in, opens a draft, sees its diff against the playbook, promotes it
through the confirmation page, and sees the playbook change while its file history keeps
the earlier version and the new one. A reviewer without the permission gets no button,
and a forged POST is refused.
"""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission
from playwright.sync_api import expect
from pytest_django.live_server_helper import LiveServer

from cogitator_memory.access.models import Grant
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.paths import PLAYBOOK_PATH
from cogitator_memory.upkeep import read_playbook, read_playbook_draft
from tests.admin.test_browser import SCREENSHOT_DIR, chromium_page
from tests.admin.test_playbook import ANA, Drafted, drafted
from tests.admin.test_review_browser import log_in

# The live server answers from another thread, so the data must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

LIST = "/admin/cogitator_memory/playbookdraft/"
PASSWORD = "correct-horse-battery-staple"


def staff(django_user_model: type, name: str, *codenames: str) -> None:
    user = django_user_model.objects.create_user(name, password=PASSWORD, is_staff=True)
    for codename in ("view_playbookdraft", "view_memoryfilehead", *codenames):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    Grant.objects.create(user=user, agent_id="concierge")


def draft_page(found: Drafted, view: str = "change") -> str:
    return f"{LIST}{quote(found.draft.pk)}/{view}/"


def test_a_reviewer_promotes_a_draft_and_the_playbook_keeps_both_versions(
    live_server: LiveServer, django_user_model: type
) -> None:
    # given: a playbook of one rule and a draft that rewrites it and adds one
    found = drafted()
    staff(django_user_model, "reviewer", "promote_playbookdraft", "discard_playbookdraft")
    before = read_playbook(ANA)
    assert before is not None
    playbook_head = MemoryFileHead.objects.get(agent_id="concierge", path=PLAYBOOK_PATH)
    file_page = f"/admin/cogitator_memory/memoryfilehead/{quote(playbook_head.pk)}/change/"
    SCREENSHOT_DIR.mkdir(exist_ok=True)

    with chromium_page() as page:
        # when: the reviewer opens the drafts and the draft
        log_in(page, live_server, "reviewer", LIST)
        expect(page.locator("#result_list")).to_contain_text("1 added, 1 rewritten")
        page.locator("#result_list a", has_text="Draft").first.click()
        page.wait_for_url(f"**{draft_page(found)}")

        # then: its diff against the playbook, its rules and their lessons
        diff = page.locator(".cm-playbook-diff")
        expect(diff.locator(".cm-diff__line--removed", has_text=found.old_rule)).to_have_count(1)
        expect(
            diff.locator(".cm-diff__line--added", has_text="Confirm dates and seats")
        ).to_have_count(1)
        expect(
            diff.locator(".cm-diff__line--added", has_text="Never suggest food with nuts.")
        ).to_have_count(1)
        expect(page.locator(".cm-playbook-rule")).to_have_count(2)
        expect(page.locator(f'[data-lesson-id="{found.allergies.pk}"]')).to_contain_text(
            "allergic to nuts"
        )
        page.screenshot(path=SCREENSHOT_DIR / "playbook-draft.png", full_page=True)

        # when: promoted through the confirmation page
        page.locator('a[data-action="promote"]').click()
        page.wait_for_url(f"**{draft_page(found, 'promote')}")
        expect(page.locator("#content")).to_contain_text("becomes the playbook")
        page.locator('input[data-confirm="promote"]').click()
        page.wait_for_url(f"**{LIST}")
        expect(page.locator("ul.messagelist li.success")).to_contain_text("promoted")

        # then: the playbook's file page shows both versions, and the new text
        page.goto(f"{live_server.url}{file_page}")
        expect(page.locator("tr.cm-version")).to_have_count(2)
        expect(page.locator(".cm-diff")).to_contain_text("Never suggest food with nuts.")
        page.screenshot(path=SCREENSHOT_DIR / "playbook-promoted.png", full_page=True)

    after = read_playbook(ANA)
    assert after is not None and after.version_id != before.version_id
    assert "Never suggest food with nuts." in after.text
    assert read_playbook_draft(ANA) is None
    contents = list(
        MemoryFileVersion.objects.filter(agent_id="concierge", path=PLAYBOOK_PATH)
        .order_by("sequence")
        .values_list("content", flat=True)
    )
    assert contents == [before.text, after.text]
    assert LogEntry.objects.get().change_message.startswith("promoted")


def test_a_reviewer_without_the_permission_cannot_promote(
    live_server: LiveServer, django_user_model: type
) -> None:
    found = drafted()
    staff(django_user_model, "viewer")
    before = read_playbook(ANA)

    with chromium_page() as page:
        log_in(page, live_server, "viewer", draft_page(found))
        expect(page.locator(".cm-playbook-rule")).to_have_count(2)
        expect(page.locator("[data-action]")).to_have_count(0)
        # a forged POST, with the page's own CSRF token
        token = page.evaluate(
            "() => document.cookie.split('; ').find(c => c.startsWith('csrftoken=')).split('=')[1]"
        )
        status = page.evaluate(
            """async ([url, token]) => (await fetch(url, {method: 'POST',
                headers: {'X-CSRFToken': token}})).status""",
            [f"{live_server.url}{draft_page(found, 'promote')}", token],
        )
        assert status == 403

    assert read_playbook(ANA) == before
    assert read_playbook_draft(ANA) is not None
    assert not LogEntry.objects.exists()
