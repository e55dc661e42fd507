"""Forgetting a user (``UserCascade``): every thread of theirs, their messages in threads of
others that list them (with their replies), their scope in every agent, their vectors and
channel sessions, and their traces; one transaction per thread and per agent's scope, with
progress after each."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from django.db import transaction
from django.db.models import Model

from cogitator_memory import policy
from cogitator_memory.cascade.plans import chunks, ids_of
from cogitator_memory.cascade.preview import previewing
from cogitator_memory.cascade.replies import entry_rows
from cogitator_memory.cascade.report import CascadeReport
from cogitator_memory.cascade.scopes import (
    agents_with_data,
    forget_user_scope,
)
from cogitator_memory.cascade.threads import ThreadCascade
from cogitator_memory.cascade.traces import (
    forget_admin_log,
    vacuum_after_commit,
)
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import EmbeddingFilter
from cogitator_memory.exceptions import InvalidInput, NoGrant, ThreadNotFound
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.grants import MEMORY_USERS_KEY, USER_ID_KEY, memory_users
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode
from cogitator_memory.items.models import (
    Entity,
    Evidence,
    ExtractionRun,
    ExtractionWindow,
    MemoryItem,
)
from cogitator_memory.jsondata import storable_text
from cogitator_memory.keywords.cache import clear_cache
from cogitator_memory.keywords.models import KeywordCorpus, KeywordPosting, KeywordTerm
from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.threads import services as thread_services
from cogitator_memory.threads.locking import lock_thread
from cogitator_memory.threads.models import Entry, EntryType, Role, Thread, ThreadUser

Progress = Callable[[int, int], None]
"""``progress(done, total)``: batches of a cascade over a user done, of all it found."""

# The tables a cascade over a user empties the most (vacuumed after it on PostgreSQL).
USER_TABLES: tuple[type[Model], ...] = (
    Thread,
    ThreadUser,
    Entry,
    MemoryItem,
    Evidence,
    Entity,
    MemoryFileVersion,
    MemoryFileHead,
    Embedding,
    KeywordCorpus,
    KeywordTerm,
    KeywordPosting,
    ChannelSession,
    CompactionRun,
    ExtractionRun,
    ExtractionWindow,
    GraphNode,
    GraphEdge,
    GraphEvidence,
)


class UserCascade(ThreadCascade):
    """``delete_user``."""

    def delete_user(
        self,
        user_id: str,
        *,
        agent_ids: Iterable[str] | None = None,
        progress: Progress | None = None,
        report: CascadeReport | None = None,
    ) -> CascadeReport:
        """Forget a user in these agents (None: every agent the grants reach; every agent
        for trusted code):

        - every thread whose user is the user, whole (``delete_thread`` each);
        - the messages the user wrote (``metadata.userId`` of a user message) in threads of
          others that list the user in ``metadata.memoryUserIds``, with their replies and
          copies, and the user taken off the list;
        - the items, entities and memory files of every scope of the user;
        - the vectors whose user is the user, the user's channel sessions, the admin log
          rows, Celery results and cached keyword corpora of what went; on PostgreSQL a
          ``VACUUM`` of the tables it emptied, in the background.

        One transaction per thread and per agent's scope: run again after a failure, it
        goes on where it stopped (and finds nothing once done). ``progress(done, total)``
        is called as batches finish; ``report``, when given, is the report the cascade
        adds to as it goes (a job of record reads it at each step) and returns. Raises
        ``InvalidInput`` for a bad user id and ``NoGrant`` for an agent (or the user) the
        grants do not reach."""
        if not storable_text(user_id) or not user_id or len(user_id) > 255:
            raise InvalidInput({"user_id": "A user id is a non-empty text."})
        agents, every_agent = self._agents_for(user_id, agent_ids)
        own = list(
            Thread.objects.filter(agent_id__in=agents, user_id=user_id)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        listing = ThreadUser.objects.filter(user_id=user_id).values_list("thread_id", flat=True)
        others_all = (
            Thread.objects.filter(pk__in=list(listing), agent_id__in=agents)
            .exclude(user_id=user_id)
            .order_by("pk")
        )
        others = list(
            (others_all if self.grants is None else others_all.visible_to(self.grants)).values_list(
                "pk", flat=True
            )
        )
        report = report if report is not None else CascadeReport()
        report.threads_out_of_reach = others_all.count() - len(others)
        total = len(own) + len(others) + len(agents) + 1
        done = 0

        def tick() -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(done, total)

        if progress is not None:
            progress(0, total)
        gone: list[str] = []
        for thread_id in own:
            gone.extend(self._thread_batch(thread_id, report, missing_ok=True))
            tick()
        for thread_id in others:
            gone.extend(self._messages_of_user_batch(thread_id, user_id, report))
            tick()
        for agent_id in agents:
            with transaction.atomic():
                forget_user_scope(agent_id, user_id, report, items=self.items)
            tick()
        with transaction.atomic():
            self._user_traces(user_id, agents, every_agent, report)
        self._look_again(gone, report)
        if not report.is_empty():
            vacuum_after_commit(USER_TABLES)
        tick()
        return report

    def _agents_for(self, user_id: str, agent_ids: Iterable[str] | None) -> tuple[list[str], bool]:
        """The agents to forget the user in, and whether they are every agent."""
        if agent_ids is not None:
            agents = ids_of(agent_ids, "agent_ids")
            for agent_id in agents:
                policy.require_write(self.grants, agent_id, user_id, user_field="user_id")
            return agents, False
        if self.grants is None or self.grants.agent_ids is None:
            return agents_with_data(), True
        granted = sorted(self.grants.agent_ids)
        agents = [agent_id for agent_id in granted if self.grants.allows(agent_id, user_id)]
        if not agents:
            raise NoGrant(
                granted[0] if granted else "",
                user_id,
                agent_granted=bool(granted),
                user_field="user_id",
            )
        return agents, False

    def _messages_of_user_batch(
        self, thread_id: str, user_id: str, report: CascadeReport
    ) -> list[str]:
        """Delete the user's messages (and replies, and copies) in a thread of another,
        and take the user off its ``memoryUserIds``, in one transaction."""
        with transaction.atomic():
            try:
                thread = lock_thread(thread_id, grants=self.grants)
            except ThreadNotFound:
                return []
            said = Entry.objects.filter(
                thread_id=thread.pk,
                role=Role.USER,
                type=EntryType.MESSAGE,
                **{f"metadata__{USER_ID_KEY}": user_id},
            ).values_list("pk", flat=True)
            changes = self._plan_tree(
                thread.pk,
                entry_rows(list(said), thread_id=thread.pk),
                redact=False,
                keep_replies=False,
            )
            gone = self._apply(changes, None, report)
            listed = memory_users(thread.metadata)
            if user_id in listed:
                metadata = dict(thread.metadata or {})
                kept = [user for user in listed if user != user_id]
                if kept:
                    metadata[MEMORY_USERS_KEY] = kept
                else:
                    metadata.pop(MEMORY_USERS_KEY, None)
                thread_services.update_thread(thread.pk, metadata, replace=True)
                report.note_thread_changed(thread.pk)
        return gone

    def _user_traces(
        self, user_id: str, agents: Sequence[str], every_agent: bool, report: CascadeReport
    ) -> None:
        """The user's vectors (of every agent, or of those given), channel sessions, and
        every cached keyword corpus of this process."""
        store = get_embedding_store()
        # A store outside the database is changed at once, not rolled back: a dry run
        # (cascade.preview) leaves its vectors alone, and does not count them.
        filters = (
            []
            if not store.transactional and previewing()
            else [EmbeddingFilter(user_id=user_id)]
            if every_agent
            else [EmbeddingFilter(agent_id=agent_id, user_id=user_id) for agent_id in agents]
        )
        for vector_filter in filters:
            report.vectors += store.delete_by_filter(vector_filter)
        sessions = ChannelSession.objects.filter(user_id=user_id, agent_id__in=list(agents))
        session_ids = list(sessions.values_list("pk", flat=True))
        for chunk in chunks(session_ids):
            report.sessions += ChannelSession.objects.filter(pk__in=chunk).delete()[0]
            report.admin_log_entries += forget_admin_log(ChannelSession, chunk)
        transaction.on_commit(clear_cache)

    # --- rewind --------------------------------------------------------------------------------
