"""Which embeddings grants reach: ``Embedding.objects.visible_to(grants)`` in the database,
``is_visible`` in Python, and the keyword index's corpora through the same condition, all
by one rule, on both databases."""

from __future__ import annotations

import itertools

import pytest

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.querysets import is_visible
from cogitator_memory.embeddings.stores.base import stored
from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.types import NewEmbedding
from cogitator_memory.grants import Grants, visible_rows_q
from cogitator_memory.keywords.models import DocumentKind, KeywordCorpus, KeywordPosting

pytestmark = pytest.mark.django_db

AGENTS = (None, "agent-a", "agent-b")
USERS = (None, "u1", "u2")
THREADS = (None, "t1")
GRANTS = {
    "everything": Grants.everything(),
    "nothing": Grants.nothing(),
    "agent-a": Grants.for_agents(["agent-a"]),
    "agent-a u1, agent-b": Grants.for_agents(["agent-a", "agent-b"], {"agent-a": ["u1"]}),
    "agent-b no user": Grants.for_agents(["agent-b"], {"agent-b": []}),
}


@pytest.fixture
def every_owner() -> list[Embedding]:
    """An embedding of every agent, user and thread (or none of them), each a corpus."""
    rows = []
    for number, (agent, user, thread) in enumerate(itertools.product(AGENTS, USERS, THREADS)):
        scope = {"agentId": agent, "userId": user, "threadId": thread}
        rows.append(
            NewEmbedding(
                source_type="document",
                source_id=f"doc-{number}",
                vector=[1.0, 0.0, 0.0],
                content=f"parcel number {number}",
                metadata={key: value for key, value in scope.items() if value is not None},
            )
        )
    ExactEmbeddingStore().add(rows)
    return list(Embedding.objects.all())


@pytest.mark.parametrize("include_shared", [False, True])
@pytest.mark.parametrize("name", list(GRANTS))
def test_the_queryset_and_the_python_check_agree(
    every_owner: list[Embedding], name: str, include_shared: bool
):
    # given
    grants = GRANTS[name]
    # when
    in_database = set(
        Embedding.objects.visible_to(grants, include_shared=include_shared).values_list(
            "pk", flat=True
        )
    )
    in_python = {
        row.pk
        for row in every_owner
        if is_visible(stored(row), grants, include_shared=include_shared)
    }
    # then
    assert in_database == in_python


def test_shared_rows_are_those_of_no_agent_user_or_thread(every_owner: list[Embedding]):
    # given
    grants = Grants.for_agents(["agent-b"])
    # when
    without = Embedding.objects.visible_to(grants)
    with_shared = Embedding.objects.visible_to(grants, include_shared=True)
    # then: shared is opt-in, and a row of no agent naming a user or thread is not shared
    assert {row.agent_id for row in without} == {"agent-b"}
    extra = with_shared.exclude(pk__in=without.values("pk"))
    assert [(row.agent_id, row.user_id, row.thread_id) for row in extra] == [(None, None, None)]


def test_grants_that_reach_nothing_see_no_row_shared_or_not(every_owner: list[Embedding]):
    assert not Embedding.objects.visible_to(Grants.nothing()).exists()
    assert list(
        Embedding.objects.visible_to(Grants.nothing(), include_shared=True).values_list(
            "agent_id", "user_id", "thread_id"
        )
    ) == [(None, None, None)]


@pytest.mark.parametrize("include_shared", [False, True])
@pytest.mark.parametrize("name", list(GRANTS))
def test_the_keyword_corpora_admitted_are_those_of_the_rows_reached(
    every_owner: list[Embedding], name: str, include_shared: bool
):
    # given
    grants = GRANTS[name]
    visible = Embedding.objects.visible_to(grants, include_shared=include_shared)
    # when
    condition = visible_rows_q(grants, include_shared=include_shared)
    corpora = KeywordCorpus.objects.filter(kind=DocumentKind.EMBEDDING)
    admitted = set()
    if condition is not None:
        admitted = set(corpora.filter(condition).values_list("pk", flat=True))
    # then
    of_rows = set(
        KeywordPosting.objects.filter(document_id__in=visible.values("pk")).values_list(
            "corpus_id", flat=True
        )
    )
    assert admitted == of_rows
