"""Random sequences of writes, moves, deletions, redactions and grant changes, after each
of which every search mode returns exactly what the caller may open.

The model is plain Python: which threads exist (agent and user), which messages each holds
and whether each is redacted, and what each principal is granted. Every step is applied
through the services (threads, entries) and the grant model; the message index is kept as
the embedding task keeps it. After every step, for every scope (those of fixed grants and
those the principals' grants make, through ``grants_for_user``), keyword, vector and hybrid
search must return exactly the live, unredacted messages of the threads the scope may open:
nothing else (no leak), and nothing less (every message holds the query word). The same
machine runs over the exact store (both databases) and the pgvector store (PostgreSQL).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import override_settings
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from cogitator_memory.access.models import Grant
from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.embeddings import message_index
from cogitator_memory.embeddings.types import EmbeddingFilter
from cogitator_memory.grants import Grants
from cogitator_memory.search.bm25 import keyword_search
from cogitator_memory.search.hybrid import hybrid_search, semantic_search
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Thread
from tests.examples import examples
from tests.search.support import CONCEPT_PROVIDER, embeddings_settings

AGENTS = ["a1", "a2"]
USERS = ["u1", "u2", None]
WORD = "zebra"
WORDS = ["dinner", "car", "doctor", "trip", "invoice"]
FIXED_SCOPES = [
    Grants.everything(),
    Grants.nothing(),
    Grants.for_agents(["a1"]),
    Grants.for_agents(["a1"], {"a1": ["u1"]}),
    Grants.for_agents(["a1", "a2"], {"a1": ["u2"], "a2": ["u1", "u2"]}),
    Grants.for_agents(["a2"], {"a2": ["u1"]}),
]
# A principal's grants: agent -> None (every user) or the users named.
GRANTS = st.dictionaries(
    st.sampled_from(AGENTS),
    st.one_of(st.none(), st.lists(st.sampled_from(["u1", "u2"]), min_size=1, unique=True)),
    max_size=2,
)
MESSAGES = EmbeddingFilter(index=message_index.MESSAGES_INDEX)
picks = st.integers(min_value=0, max_value=63)


@dataclass
class ModelThread:
    id: str
    agent_id: str
    user_id: str | None
    # entry id -> redacted
    messages: dict[str, bool] = field(default_factory=dict)


class SearchScopeMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        # Each example runs in a savepoint rolled back at teardown.
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        self.threads: list[ModelThread] = []
        self.principals = [User.objects.create_user(f"desk-{n}", password="pw") for n in range(2)]
        self.counter = 0

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self._atomic.__exit__(None, None, None)

    def _thread(self, pick: int) -> ModelThread:
        return self.threads[pick % len(self.threads)]

    def _messages(self) -> list[tuple[ModelThread, str]]:
        return [(thread, entry_id) for thread in self.threads for entry_id in thread.messages]

    # --- steps -----------------------------------------------------------------------

    @rule(agent=st.sampled_from(AGENTS), user=st.sampled_from(USERS))
    def create_thread(self, agent: str, user: str | None) -> None:
        metadata = {"userId": user} if user is not None else {}
        thread = services.create_thread(agent, metadata)
        self.threads.append(ModelThread(thread.pk, agent, user))

    @precondition(lambda self: self.threads)
    @rule(pick=picks, word=st.sampled_from(WORDS))
    def add_message(self, pick: int, word: str) -> None:
        thread = self._thread(pick)
        self.counter += 1
        entry = services.add_entry(
            thread.id, role="user", content=f"{WORD} {word} number{self.counter}"
        )
        message_index.index_entries([entry.pk])
        thread.messages[entry.pk] = False

    @precondition(lambda self: self._messages())
    @rule(pick=picks)
    def delete_entry(self, pick: int) -> None:
        thread, entry_id = self._messages()[pick % len(self._messages())]
        services.delete_entry(entry_id)
        del thread.messages[entry_id]

    @precondition(lambda self: self._messages())
    @rule(pick=picks)
    def redact_entry(self, pick: int) -> None:
        thread, entry_id = self._messages()[pick % len(self._messages())]
        services.redact_entry(entry_id, reason="asked")
        thread.messages[entry_id] = True

    @precondition(lambda self: self.threads)
    @rule(pick=picks, user=st.sampled_from(USERS), replace=st.booleans())
    def move_thread(self, pick: int, user: str | None, replace: bool) -> None:
        thread = self._thread(pick)
        if replace:
            metadata = {"userId": user} if user is not None else {"topic": "moved"}
        else:
            metadata = {"userId": user}
        services.update_thread(thread.id, metadata, replace=replace)
        thread.user_id = user

    @precondition(lambda self: self.threads)
    @rule(pick=picks)
    def clear_thread(self, pick: int) -> None:
        thread = self._thread(pick)
        services.clear_thread(thread.id)
        thread.messages.clear()

    @precondition(lambda self: self.threads)
    @rule(pick=picks)
    def delete_thread(self, pick: int) -> None:
        thread = self._thread(pick)
        services.delete_thread(thread.id)
        self.threads.remove(thread)

    @rule(principal=st.integers(min_value=0, max_value=1), grants=GRANTS)
    def regrant(self, principal: int, grants: dict[str, list[str] | None]) -> None:
        user = self.principals[principal]
        Grant.objects.filter(user=user).delete()
        for agent_id, user_ids in grants.items():
            Grant.objects.create(user=user, agent_id=agent_id, user_ids=user_ids)

    # --- what must hold ----------------------------------------------------------------

    def _expected(self, grants: Grants) -> set[str]:
        return {
            entry_id
            for thread in self.threads
            if grants.allows(thread.agent_id, thread.user_id)
            for entry_id, redacted in thread.messages.items()
            if not redacted
        }

    @invariant()
    def threads_are_visible_by_the_model(self) -> None:
        for scope in FIXED_SCOPES:
            visible = set(Thread.objects.visible_to(scope).values_list("pk", flat=True))
            assert visible == {
                thread.id
                for thread in self.threads
                if scope.allows(thread.agent_id, thread.user_id)
            }, scope

    @invariant()
    def every_search_mode_returns_exactly_what_the_scope_may_open(self) -> None:
        scopes = [*FIXED_SCOPES, *(grants_for_user(user) for user in self.principals)]
        for scope in scopes:
            expected = self._expected(scope)
            found = {
                "keyword": keyword_search(WORD, limit=100, filter=MESSAGES, grants=scope),
                "vector": semantic_search(WORD, limit=100, filter=MESSAGES, grants=scope),
                "hybrid": hybrid_search(WORD, limit=100, filter=MESSAGES, grants=scope).hits,
            }
            for mode, hits in found.items():
                ids = [hit.embedding.source_id for hit in hits]
                assert len(ids) == len(set(ids)), (mode, scope)
                assert set(ids) == expected, (mode, scope)


# In CI 8 sequences of 20 steps: each step checks 8 scopes in 3 search modes, nearly all
# of the test's time.
MACHINE_SETTINGS = settings(
    max_examples=examples(full=20, ci=8),
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    report_multiple_bugs=False,
)


@pytest.mark.django_db
def test_searches_of_the_exact_store_return_exactly_what_the_scope_may_open() -> None:
    with override_settings(COGITATOR_MEMORY=embeddings_settings(CONCEPT_PROVIDER)):
        run_state_machine_as_test(SearchScopeMachine, settings=MACHINE_SETTINGS)


@pytest.mark.postgres_only
@pytest.mark.django_db
def test_searches_of_the_pgvector_store_return_exactly_what_the_scope_may_open() -> None:
    config = embeddings_settings(CONCEPT_PROVIDER, STORE="pgvector")
    with override_settings(COGITATOR_MEMORY=config):
        run_state_machine_as_test(SearchScopeMachine, settings=MACHINE_SETTINGS)
