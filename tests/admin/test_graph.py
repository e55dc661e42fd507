"""The knowledge graph in the admin: the node and edge lists within grants, a node's page
with its neighbourhood and quotes, reviews, and merging through the confirmation page."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.test import Client

from cogitator_memory.access.models import Grant
from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode
from cogitator_memory.graph.services import MemoryGraph
from cogitator_memory.items.statements import NewEvidence
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db

NODES = "/admin/cogitator_memory/graphnode/"
EDGES = "/admin/cogitator_memory/graphedge/"
ANA = MemoryScope("concierge", user_id="ana")
OTHER = MemoryScope("bank", user_id="bo")
REVIEWS = ("activate_graphnode", "reject_graphnode", "activate_graphedge", "reject_graphedge")


def page_of(row: GraphNode | GraphEdge, view: str = "change") -> str:
    base = NODES if isinstance(row, GraphNode) else EDGES
    return f"{base}{quote(row.pk)}/{view}/"


def staff(*permissions: str, agents: tuple[str, ...] = ("concierge",)) -> Client:
    user = User.objects.create_user(f"staff-{len(permissions)}", password="pw", is_staff=True)
    codenames = ("view_graphnode", "view_graphedge", *permissions)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    for agent in agents:
        Grant.objects.create(user=user, agent_id=agent)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def said() -> Entry:
    thread = threads.create_thread("concierge", {"userId": "ana"})
    return threads.add_entry(thread.pk, role="user", content="Ana works at <b>Acme</b> in Porto.")


def node(name: str, scope: MemoryScope = ANA, **fields: Any) -> GraphNode:
    fields.setdefault("trust", "model")
    return MemoryGraph().add_node(scope, name=name, **fields)


def edge(source: GraphNode, target: GraphNode, relation: str, **fields: Any) -> GraphEdge:
    fields.setdefault("trust", "model")
    return MemoryGraph().add_edge(
        MemoryScope.of(source), source=source, target=target, relation=relation, **fields
    )


def test_the_node_list_shows_the_nodes_within_grants_with_their_quote_counts(said: Entry) -> None:
    # given
    node("Ana", type="person", evidence=[NewEvidence("Ana works at", said.pk)])
    node("Zebulon", OTHER)
    # when
    page = staff().get(NODES).content.decode()
    # then
    assert "Ana" in page and "person" in page and "concierge / ana" in page
    assert "Zebulon" not in page
    assert '<td class="field-evidence_count">1</td>' in page


def test_the_node_list_is_searched_by_name_and_alias() -> None:
    # given
    node("Ana Lima", aliases=["Annie"])
    node("Porto")
    client = staff()
    # when
    by_alias = client.get(NODES, {"q": "ANNIE"}).content.decode()
    by_name = client.get(NODES, {"q": "porto"}).content.decode()
    # then
    assert "Ana Lima" in by_alias and "Porto" not in by_alias
    assert "Porto" in by_name and "Ana Lima" not in by_name


def test_a_nodes_page_shows_its_neighbourhood_and_quotes_escaped(said: Entry) -> None:
    # given
    ana = node("Ana", evidence=[NewEvidence("Ana works at", said.pk)])
    acme = node("Acme", type="company")
    porto = node("Porto")
    works = edge(ana, acme, "works_at", evidence=[NewEvidence("works at <b>Acme</b>", said.pk)])
    edge(porto, ana, "home_of")
    # when
    page = staff().get(page_of(ana)).content.decode()
    # then: each edge from the node's side, the other node linked, the edge's quote marked
    assert f'href="{page_of(acme)}" class="cm-edge__other">Acme</a>' in page
    assert f'href="{page_of(works)}" class="cm-edge__relation">works_at</a>' in page
    assert f'href="{page_of(porto)}" class="cm-edge__other">Porto</a>' in page
    assert "<mark>works at &lt;b&gt;Acme&lt;/b&gt;</mark>" in page
    assert "<mark>Ana works at</mark>" in page
    assert f"?highlight={said.pk}#entry-{said.pk}" in page
    assert "<b>Acme</b>" not in page


def test_a_node_out_of_grants_has_no_page() -> None:
    # given
    theirs = node("Zebulon", OTHER)
    # when
    response = staff().get(page_of(theirs))
    # then
    assert response.status_code in (302, 404)
    assert b"Zebulon" not in response.content


def test_the_review_buttons_activate_and_reject_with_a_reason() -> None:
    # given
    ana, bo = node("Ana"), node("Bo")
    knows = edge(ana, bo, "knows")
    client = staff(*REVIEWS)
    # when
    page = client.get(page_of(ana)).content.decode()
    client.post(page_of(ana, "activate"))
    client.post(page_of(knows, "reject"), {"reason": "made up"})
    # then
    assert 'data-action="activate"' in page and 'data-action="reject"' in page
    assert GraphNode.objects.get(pk=ana.pk).status == "active"
    assert GraphEdge.objects.get(pk=knows.pk).status == "rejected"
    assert LogEntry.objects.filter(change_message="rejected: made up (admin)").exists()


def test_without_the_permission_there_is_no_button_and_a_post_is_refused() -> None:
    # given
    ana = node("Ana")
    client = staff()
    # when
    page = client.get(page_of(ana)).content.decode()
    response = client.post(page_of(ana, "activate"))
    # then
    assert 'data-action="activate"' not in page
    assert response.status_code == 403
    assert GraphNode.objects.get(pk=ana.pk).status == "suggested"


def test_the_list_actions_activate_and_ask_for_a_reason_to_reject() -> None:
    # given
    ana, bo = node("Ana"), node("Bo")
    client = staff(*REVIEWS)
    chosen = {"_selected_action": [ana.pk, bo.pk]}
    # when
    asked = client.post(NODES, {**chosen, "action": "reject_selected"})
    client.post(NODES, {**chosen, "action": "reject_selected", "confirmed": "yes", "reason": "dup"})
    # then
    assert b'name="reason"' in asked.content
    assert set(GraphNode.objects.values_list("status", flat=True)) == {"rejected"}


def test_merging_asks_which_node_to_keep_and_lists_what_moves(said: Entry) -> None:
    # given
    ana = node("Ana", evidence=[NewEvidence("Ana works at", said.pk)])
    annie = node("Annie", aliases=["A. Lima"], evidence=[NewEvidence("in Porto", said.pk)])
    acme = node("Acme")
    edge(annie, acme, "works_at")
    client = staff("change_graphnode")
    chosen = {"_selected_action": [ana.pk, annie.pk], "action": "merge_selected"}
    # when
    asked = client.post(NODES, chosen).content.decode()
    merged = client.post(NODES, {**chosen, "confirmed": "yes", "keep": ana.pk})
    # then: the page names what each would bring
    assert 'name="keep"' in asked
    assert "names: Annie, A. Lima" in asked
    assert "Annie — works_at → Acme (suggested)" in asked
    assert "<q>in Porto</q>" in asked
    # then: the merge ran and shows the node kept
    assert merged.status_code == 302 and merged["Location"] == page_of(ana)
    kept = GraphNode.objects.get(pk=ana.pk)
    assert kept.aliases == ["Annie", "A. Lima"]
    assert not GraphNode.objects.filter(pk=annie.pk).exists()
    assert GraphEdge.objects.get().source_id == ana.pk
    assert GraphEvidence.objects.filter(node=kept).count() == 2


def test_merging_needs_the_change_permission_and_two_nodes() -> None:
    # given
    ana, annie = node("Ana"), node("Annie")
    viewer, changer = staff(), staff("change_graphnode")
    # when
    refused = viewer.post(
        NODES,
        {"_selected_action": [ana.pk, annie.pk], "action": "merge_selected", "keep": ana.pk},
    )
    alone = changer.post(NODES, {"_selected_action": [ana.pk], "action": "merge_selected"})
    # then
    assert GraphNode.objects.count() == 2
    assert refused.status_code in (200, 302)
    assert alone.status_code == 302


def test_a_merge_across_scopes_changes_nothing_and_says_why() -> None:
    # given
    ana = node("Ana")
    shared = node("Ana", MemoryScope("concierge"))
    client = staff("change_graphnode")
    # when
    response = client.post(
        NODES,
        {
            "_selected_action": [ana.pk, shared.pk],
            "action": "merge_selected",
            "confirmed": "yes",
            "keep": ana.pk,
        },
        follow=True,
    )
    # then
    assert "Nothing was merged" in response.content.decode()
    assert GraphNode.objects.count() == 2


def test_the_edge_list_and_page(said: Entry) -> None:
    # given
    works = edge(
        node("Ana"), node("Acme"), "works_at", evidence=[NewEvidence("Ana works at", said.pk)]
    )
    edge(node("Zebulon", OTHER), node("Bank", OTHER), "works_at")
    client = staff()
    # when
    listed = client.get(EDGES).content.decode()
    page = client.get(page_of(works)).content.decode()
    # then
    assert "Ana — works_at → Acme" in listed and "Zebulon —" not in listed
    assert "<mark>Ana works at</mark>" in page
