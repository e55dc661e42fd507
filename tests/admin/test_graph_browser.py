"""The knowledge graph in a real browser: Playwright driving Debian's Chromium.

A staff user opens a node, sees its neighbourhood (each edge, the node at its other end)
and the quotes of the node and its edges marked in their entries, then merges two nodes
that name one person through the confirmation page and sees the node kept with the other's
name as an alias and its edge. Screenshots go to test-output/.
"""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission
from django.urls import reverse
from playwright.sync_api import expect
from pytest_django.live_server_helper import LiveServer

from cogitator_memory.access.models import Grant
from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph.models import GraphEdge, GraphNode
from cogitator_memory.graph.services import MemoryGraph
from cogitator_memory.items.statements import NewEvidence
from cogitator_memory.threads import services
from tests.admin.test_browser import SCREENSHOT_DIR, chromium_page
from tests.admin.test_review_browser import PASSWORD, log_in

pytestmark = pytest.mark.django_db(transaction=True)

LIST = "/admin/cogitator_memory/graphnode/"


def test_a_staff_user_reads_a_neighbourhood_and_merges_two_nodes(
    live_server: LiveServer, django_user_model: type
) -> None:
    # given: what a model made of one turn, with the same person twice
    thread = services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-work")
    said = services.add_entry(
        thread.pk, role="user", content="Ana Lima works at Acme; Annie lives in Porto."
    )
    scope = MemoryScope("concierge", user_id="ana")
    graph = MemoryGraph()
    ana = graph.add_node(
        scope, name="Ana Lima", type="person", evidence=[NewEvidence("Ana Lima", said.pk)]
    )
    annie = graph.add_node(scope, name="Annie", type="person")
    acme = graph.add_node(scope, name="Acme", type="company")
    porto = graph.add_node(scope, name="Porto", type="place")
    graph.add_edge(
        scope,
        source=ana,
        target=acme,
        relation="works_at",
        evidence=[NewEvidence("works at Acme", said.pk)],
    )
    graph.add_edge(scope, source=annie, target=porto, relation="lives_in")
    user = django_user_model.objects.create_user("curator", password=PASSWORD, is_staff=True)
    codenames = ("view_graphnode", "change_graphnode", "view_graphedge", "view_thread")
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    Grant.objects.create(user=user, agent_id="concierge")
    ana_page = reverse("admin:cogitator_memory_graphnode_change", args=[quote(ana.pk)])
    SCREENSHOT_DIR.mkdir(exist_ok=True)

    with chromium_page() as page:
        # when: the node's page is opened from the list
        log_in(page, live_server, "curator", LIST)
        page.get_by_role("link", name="Ana Lima").click()
        page.wait_for_url(f"**{ana_page}")
        # then: its edge, the node at the other end linked, and the quotes marked
        edge = page.locator(".cm-neighbourhood .cm-edge")
        expect(edge).to_have_count(1)
        expect(edge.locator(".cm-edge__relation")).to_have_text("works_at")
        expect(edge.locator(".cm-edge__other")).to_have_text("Acme")
        expect(edge.locator(".cm-quote__entry mark")).to_have_text("works at Acme")
        expect(page.locator(".cm-review .cm-quote__entry mark").first).to_have_text("Ana Lima")
        page.screenshot(path=SCREENSHOT_DIR / "graph-node-neighbourhood.png", full_page=True)

        # when: the two nodes of one person are merged, keeping "Ana Lima"
        page.goto(f"{live_server.url}{LIST}")
        for name in ("Ana Lima", "Annie"):
            row = page.locator("#result_list tr", has=page.get_by_role("link", name=name))
            row.locator("input.action-select").check()
        page.select_option("select[name=action]", "merge_selected")
        page.click("button[name=index]")
        # then: the confirmation page says what each node brings
        annie_brings = page.locator(f'.cm-merge__node[data-node-id="{annie.pk}"]')
        expect(annie_brings.locator(".cm-merge__edges")).to_contain_text("Annie — lives_in → Porto")
        page.check(f'input[name=keep][value="{ana.pk}"]')
        page.screenshot(path=SCREENSHOT_DIR / "graph-merge-confirmation.png", full_page=True)
        page.click(".cm-merge input[type=submit]")

        # then: the node kept, with the other's name as an alias and both edges
        page.wait_for_url(f"**{ana_page}")
        expect(page.locator("ul.messagelist li.success")).to_contain_text("merged into Ana Lima")
        expect(page.locator(".field-aliases")).to_contain_text("Annie")
        expect(page.locator(".cm-neighbourhood .cm-edge__other")).to_have_text(["Porto", "Acme"])
        page.screenshot(path=SCREENSHOT_DIR / "graph-node-merged.png", full_page=True)

    assert not GraphNode.objects.filter(pk=annie.pk).exists()
    assert set(GraphEdge.objects.values_list("source_id", flat=True)) == {ana.pk}
