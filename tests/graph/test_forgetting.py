"""The graph forgets what stands on entries that go (``graph.forgetting``): evidence of
them goes, edges and nodes standing only on them are purged, those standing on more are
trimmed; forgetting a user or deleting a thread takes the nodes and edges of its scope."""

from __future__ import annotations

import threading
import time

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.db import connection, transaction

from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph import MemoryGraph
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode, GraphStatus
from cogitator_memory.graph.review import RejectGraphNodes
from cogitator_memory.items.statements import NewEvidence
from cogitator_memory.review import Via
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.locking import lock_thread
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
graph = MemoryGraph()


def said(text: str, thread_id: str | None = None, user: str = "ana") -> str:
    if thread_id is None:
        thread_id = threads.create_thread("concierge", metadata={"userId": user}).pk
    return threads.add_entry(thread_id, role="user", content=text).pk


def test_what_stands_only_on_entries_that_go_is_purged_and_the_rest_trimmed() -> None:
    # given Lena stands on two entries, Porto on one, and an edge on the one that goes
    first = said("My sister Lena lives in Porto.")
    second = said("Lena called.")
    lena = graph.add_node(
        ANA,
        name="Lena",
        evidence=[NewEvidence("My sister Lena", first), NewEvidence("Lena called", second)],
    )
    porto = graph.add_node(ANA, name="Porto", evidence=[NewEvidence("Porto", first)])
    lives = graph.add_edge(
        ANA, source=lena, target=porto, relation="lives_in", evidence=[NewEvidence("lives", first)]
    )
    # an edge on both entries, to a node with no evidence of its own
    home = graph.add_node(ANA, name="Home")
    likes = graph.add_edge(
        ANA,
        source=lena,
        target=home,
        relation="likes",
        evidence=[NewEvidence("Lena", first), NewEvidence("called", second)],
    )
    # when the first entry is deleted
    report = MemoryCascade().delete_entries([first])
    # then the edge and the node that stood on it alone are gone, the others trimmed
    assert not GraphEdge.objects.filter(pk=lives.pk).exists()
    assert not GraphNode.objects.filter(pk=porto.pk).exists()
    assert GraphNode.objects.filter(pk__in=[lena.pk, home.pk]).count() == 2
    assert list(GraphEvidence.objects.filter(node=lena).values_list("quote", flat=True)) == [
        "Lena called"
    ]
    assert list(GraphEvidence.objects.filter(edge=likes).values_list("quote", flat=True)) == [
        "called"
    ]
    assert (report.graph.nodes, report.graph.edges, report.graph.trimmed) == (1, 1, 2)
    assert not GraphEvidence.objects.filter(entry_id=first).exists()

    # when the second goes too: the edge goes, then Home (no evidence, no edge left) and
    # Lena (no evidence left, no edge left)
    report = MemoryCascade().delete_entries([second])
    assert not GraphNode.objects.exists()
    assert not GraphEdge.objects.exists()
    assert (report.graph.nodes, report.graph.edges, report.graph.trimmed) == (2, 1, 0)


def test_a_node_that_loses_its_quotes_but_keeps_an_edge_is_trimmed() -> None:
    first = said("Lena lives in Porto.")
    second = said("She loves it there.")
    lena = graph.add_node(ANA, name="Lena", evidence=[NewEvidence("Lena", first)])
    porto = graph.add_node(ANA, name="Porto")
    graph.add_edge(
        ANA, source=lena, target=porto, relation="loves", evidence=[NewEvidence("loves", second)]
    )
    report = MemoryCascade().delete_entries([first])
    assert GraphNode.objects.filter(pk=lena.pk).exists()
    assert not GraphEvidence.objects.filter(node=lena).exists()
    assert (report.graph.nodes, report.graph.edges, report.graph.trimmed) == (0, 0, 1)


def test_a_redacted_entry_takes_its_quotes_out_of_the_graph() -> None:
    entry = said("My passport number is X123.")
    node = graph.add_node(ANA, name="Passport X123", evidence=[NewEvidence("X123", entry)])
    report = MemoryCascade().redact_entries([entry], reason="the user asked")
    assert not GraphNode.objects.filter(pk=node.pk).exists()
    assert report.graph.nodes == 1


def test_forgetting_a_user_deletes_the_nodes_and_edges_of_their_scopes_only() -> None:
    said("Hello.")
    thread_scope = MemoryScope("concierge", user_id="ana", thread_id="t1")
    a, b = graph.add_node(ANA, name="a"), graph.add_node(ANA, name="b")
    graph.add_edge(ANA, source=a, target=b, relation="knows")
    graph.add_node(thread_scope, name="c")
    kept_shared = graph.add_node(MemoryScope("concierge"), name="shared")
    kept_ben = graph.add_node(MemoryScope("concierge", user_id="ben"), name="b")
    # a review of Ana's node is in the admin log
    reviewer = User.objects.create_superuser("rev", "rev@example.com", "x")
    RejectGraphNodes(reviewer, grants=Grants.everything(), via=Via.ADMIN).execute(
        [a.pk], reason="wrong"
    )
    assert LogEntry.objects.filter(object_id=a.pk).exists()
    report = MemoryCascade().delete_user("ana")
    assert set(GraphNode.objects.values_list("pk", flat=True)) == {kept_shared.pk, kept_ben.pk}
    assert (report.graph.nodes, report.graph.edges) == (3, 1)
    assert not LogEntry.objects.filter(object_id=a.pk).exists()


def test_deleting_a_thread_deletes_the_graph_of_its_scope() -> None:
    thread = threads.create_thread("concierge", metadata={"userId": "ana"})
    scope = MemoryScope("concierge", user_id="ana", thread_id=thread.pk)
    a, b = graph.add_node(scope, name="a"), graph.add_node(scope, name="b")
    graph.add_edge(scope, source=a, target=b, relation="knows")
    kept = graph.add_node(ANA, name="a")
    report = MemoryCascade().delete_thread(thread.pk)
    assert list(GraphNode.objects.all()) == [kept]
    assert (report.graph.nodes, report.graph.edges) == (2, 1)


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_write_racing_the_deletion_of_the_entry_it_quotes_keeps_nothing_of_it() -> None:
    # given an entry, and a deletion of it that holds its thread while a write quotes it
    entry = said("Lena lives in Porto.")
    thread_id = Entry.objects.get(pk=entry).thread_id
    holding = threading.Event()

    def delete() -> None:
        try:
            with transaction.atomic():
                lock_thread(thread_id)
                holding.set()
                time.sleep(0.5)
                MemoryCascade().delete_entries([entry])
        finally:
            connection.close()

    deleting = threading.Thread(target=delete)
    deleting.start()
    assert holding.wait(5)
    # when the write comes while the deletion is open
    node = graph.add_node(
        ANA, name="Lena", trust="user", evidence=[NewEvidence("Lena lives", entry)]
    )
    deleting.join()
    # then the write waited, found the entry gone, and its quote stands on nothing
    assert not Entry.objects.filter(pk=entry).exists()
    assert node.status == GraphStatus.SUGGESTED
    assert list(GraphEvidence.objects.values_list("entry_id", "verified")) == [(None, False)]
