"""The review decisions on graph nodes and edges (``graph.review``): the permission each
takes, the refusal of API keys, the statuses each applies to, all or nothing, the reason
of a rejection, the admin log, and the caller's grants."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from rest_framework_api_key.models import APIKey

from cogitator_memory.exceptions import (
    GraphEdgeNotReviewable,
    GraphNodeNotFound,
    GraphNodeNotReviewable,
    InvalidGraphInput,
    ReviewRefused,
)
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph import MemoryGraph
from cogitator_memory.graph.models import GraphEdge, GraphNode, GraphStatus
from cogitator_memory.graph.review import (
    ActivateGraphEdges,
    ActivateGraphNodes,
    RejectGraphEdges,
    RejectGraphNodes,
)
from cogitator_memory.review import ReviewAction, Via

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
CONCIERGE = Grants.for_agents(["concierge"])
graph = MemoryGraph()
DECISIONS: list[type[ReviewAction[Any]]] = [
    ActivateGraphNodes,
    RejectGraphNodes,
    ActivateGraphEdges,
    RejectGraphEdges,
]


def reviewer(*codenames: str) -> User:
    user = User.objects.create_user("rev", password="pw")
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)


def rows(trust: str = "model") -> tuple[GraphNode, GraphEdge]:
    lena = graph.add_node(ANA, name="Lena", trust=trust)
    porto = graph.add_node(ANA, name="Porto", trust=trust)
    return lena, graph.add_edge(ANA, source=lena, target=porto, relation="lives_in", trust=trust)


def test_each_decision_names_its_permission_and_its_statuses() -> None:
    assert [(d.permission, d.statuses, d.takes_reason) for d in DECISIONS] == [
        ("cogitator_memory.activate_graphnode", ("suggested", "rejected"), False),
        ("cogitator_memory.reject_graphnode", ("suggested", "active"), True),
        ("cogitator_memory.activate_graphedge", ("suggested", "rejected"), False),
        ("cogitator_memory.reject_graphedge", ("suggested", "active"), True),
    ]


def test_a_reviewer_activates_and_rejects_and_the_admin_log_says_so() -> None:
    # given suggestions of a model
    lena, lives = rows()
    user = reviewer("activate_graphnode", "reject_graphedge")
    # when
    [node] = ActivateGraphNodes(user, grants=CONCIERGE, via=Via.ADMIN).execute([lena.pk])
    [edge] = RejectGraphEdges(user, grants=CONCIERGE, via=Via.API).execute(
        [lives.pk], reason="she moved"
    )
    # then
    assert (node.status, edge.status) == (GraphStatus.ACTIVE, GraphStatus.REJECTED)
    messages = dict(LogEntry.objects.values_list("object_id", "change_message"))
    assert messages == {lena.pk: "activated (admin)", lives.pk: "rejected: she moved (API)"}
    # and a rejected edge is out of the walks of active rows
    graph.activate_nodes([lena.pk, lives.target_id])
    assert set(graph.neighbourhood(lena.pk).depth_of) == {lena.pk}


def test_no_permission_or_an_api_key_is_refused_and_nothing_changes() -> None:
    lena, lives = rows()
    with pytest.raises(ReviewRefused) as refused:
        ActivateGraphNodes(reviewer("reject_graphnode"), grants=CONCIERGE, via=Via.API).execute(
            [lena.pk]
        )
    assert refused.value.message == (
        "You need the permission cogitator_memory.activate_graphnode to activate graph nodes."
    )
    boss = User.objects.create_superuser("boss", "boss@example.com", "pw")
    _key, api_key = APIKey.objects.create_key(name="bot")
    with pytest.raises(ReviewRefused, match="an API key cannot reject graph edges"):
        RejectGraphEdges(boss, grants=CONCIERGE, via=Via.API, api_key=api_key).execute(
            [lives.pk], reason="no"
        )
    assert GraphNode.objects.get(pk=lena.pk).status == GraphStatus.SUGGESTED
    assert GraphEdge.objects.get(pk=lives.pk).status == GraphStatus.SUGGESTED
    assert not LogEntry.objects.exists()


def test_a_status_the_decision_does_not_take_refuses_the_whole_batch() -> None:
    lena, lives = rows()
    active = graph.add_node(ANA, name="Ana", trust="system")
    boss = User.objects.create_superuser("boss", "boss@example.com", "pw")
    with pytest.raises(GraphNodeNotReviewable) as refused:
        ActivateGraphNodes(boss, grants=CONCIERGE, via=Via.API).execute([lena.pk, active.pk])
    assert refused.value.refused == {active.pk: "active"}
    assert str(refused.value) == (
        f"Graph node {active.pk!r} is active; activate applies to suggested or rejected "
        "graph nodes only."
    )
    assert GraphNode.objects.get(pk=lena.pk).status == GraphStatus.SUGGESTED
    graph.reject_edges([lives.pk])
    with pytest.raises(GraphEdgeNotReviewable):
        RejectGraphEdges(boss, grants=CONCIERGE, via=Via.API).execute([lives.pk], reason="x")
    with pytest.raises(InvalidGraphInput) as no_reason:
        RejectGraphNodes(boss, grants=CONCIERGE, via=Via.API).execute([lena.pk], reason=" ")
    assert set(no_reason.value.errors) == {"reason"}


def test_rows_out_of_grants_are_not_found_before_any_permission() -> None:
    lena, _lives = rows()
    nobody = reviewer()
    only_ben = Grants.for_agents(["concierge"], {"concierge": ["ben"]})
    with pytest.raises(GraphNodeNotFound):
        ActivateGraphNodes(nobody, grants=only_ben, via=Via.API).execute([lena.pk])
