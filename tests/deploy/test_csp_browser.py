"""The Content-Security-Policy in a real browser (Playwright driving Debian's Chromium):
the admin's login, its lists and the app's review screens load their scripts, styles and
images with no violation of the policy, and the login goes through django-axes.

A listener added before any page script runs records each ``securitypolicyviolation``
event; Chromium's console messages about the policy are recorded too. The database is
only touched outside the browser block (see tests/admin/test_browser.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse
from playwright.sync_api import Page
from pytest_django.live_server_helper import LiveServer

from tests.admin.test_browser import chromium_page
from tests.admin.test_review_browser import log_in
from tests.admin.test_review_screen_browser import item_page, new_reviewer, trip

pytestmark = pytest.mark.django_db(transaction=True)

RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(`${event.violatedDirective} ${event.blockedURI} ${event.sourceFile}`);
});
"""

# The image Redoc's sidebar links to on another site; it removes it when it fails to load.
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


class PolicyWatch:
    """What the browser reported against the policy on the pages it opened."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.console: list[str] = []
        self.violations: list[str] = []
        self.headers: dict[str, str] = {}
        page.add_init_script(RECORD_VIOLATIONS)
        page.on("console", self._console)
        page.on("response", self._response)

    def _console(self, message: Any) -> None:
        if "Content Security Policy" in message.text:
            self.console.append(message.text)

    def _response(self, response: Any) -> None:
        if response.request.resource_type == "document":
            self.headers[response.url] = response.headers.get("content-security-policy", "")

    def visit(self, url: str) -> None:
        self.page.goto(url)
        self.page.wait_for_load_state("load")
        self.collect()

    def collect(self) -> None:
        self.violations += self.page.evaluate("window.__violations || []")


@pytest.fixture(autouse=True)
def axes_on(settings: Any) -> None:
    settings.AXES_ENABLED = True


def test_the_admin_and_the_review_screens_load_with_no_violation_of_the_policy(
    live_server: LiveServer,
) -> None:
    # given
    found = trip()
    new_reviewer()
    pages = [
        "/admin/cogitator_memory/memoryitem/",
        item_page(found.home),
        "/admin/cogitator_memory/compactionrun/",
        "/admin/cogitator_memory/extractionrun/",
        reverse("admin:cogitator_memory_thread_changelist"),
        reverse("admin:cogitator_memory_entry_change", args=[quote(found.compaction.pk)]),
    ]

    with chromium_page(1400) as page:
        watch = PolicyWatch(page)
        # when: the login page, then the login through it, then the pages
        watch.visit(f"{live_server.url}{reverse('admin:login')}")
        log_in(page, live_server, "reviewer", "/admin/")
        watch.collect()
        for path in pages:
            watch.visit(f"{live_server.url}{path}")
        # the review list's own script ran: its select-all box works
        watch.visit(f"{live_server.url}{pages[0]}")
        toggle = page.locator("#action-toggle")
        if toggle.count():
            toggle.check()
            assert page.locator("input.action-select:checked").count() > 0
        watch.collect()

    # then: every page came with the policy, and nothing was refused
    assert len(watch.headers) >= len(pages) + 1
    assert all("default-src 'self'" in policy for policy in watch.headers.values()), watch.headers
    assert watch.violations == []
    assert watch.console == []


def test_an_inline_script_is_refused_by_the_policy(live_server: LiveServer) -> None:
    # the watch sees a violation when there is one: the policy refuses inline scripts
    with chromium_page() as page:
        watch = PolicyWatch(page)
        watch.visit(f"{live_server.url}{reverse('admin:login')}")
        page.evaluate(
            "() => { const s = document.createElement('script');"
            " s.textContent = 'window.ran = true'; document.body.append(s); }"
        )
        watch.collect()
        ran = page.evaluate("window.ran === true")
    assert not ran
    assert any("script-src" in violation for violation in watch.violations), watch.violations


def test_the_api_documentation_pages_render_offline_with_no_violation_of_the_policy(
    live_server: LiveServer,
) -> None:
    # given: a browser whose requests to any other site fail, as offline
    elsewhere: list[str] = []
    with chromium_page() as page:
        watch = PolicyWatch(page)

        def only_this_site(route: Any) -> None:
            if route.request.url.startswith(live_server.url):
                route.continue_()
            else:
                elsewhere.append(route.request.url)
                route.abort()

        page.route("**/*", only_this_site)
        # when
        watch.visit(f"{live_server.url}/api/schema/swagger/")
        page.locator(".swagger-ui .info .title").wait_for()
        swagger_title = page.locator(".swagger-ui .info .title").inner_text()
        watch.visit(f"{live_server.url}/api/schema/redoc/")
        page.locator(".api-info h1").wait_for()
        redoc_title = page.locator(".api-info h1").inner_text()
        watch.collect()
    # then: both show the schema, from the site's own files alone; the policy refuses one
    # image, the Redocly logo Redoc links to, which Redoc hides when it cannot load
    assert swagger_title.startswith("cogitator-memory API")
    assert redoc_title.startswith("cogitator-memory API")
    assert elsewhere == []
    assert [v for v in watch.violations if REDOC_LOGO not in v] == []
    assert [message for message in watch.console if REDOC_LOGO not in message] == []
