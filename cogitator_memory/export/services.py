"""Everything memory keeps of one user, as one JSON document written as it is read.

``export_user`` answers the right of access. It checks the user id and the agents first
(so a caller learns of bad input or a missing grant before anything is written), then
returns an iterator of JSON texts which, joined, are one document::

    {"format": "cogitator-memory/user-export", "format_version": 1,
     "user_id": "u1", "agents": ["support"], "generated_at": "2026-12-01T17:00:00Z",
     "threads": [{...thread..., "entries": [{...}, ...]}, ...],
     "items": [{...item..., "subject": {...}, "evidence": [{...}, ...]}, ...],
     "entities": [...], "file_versions": [...], "sessions": [...],
     "extraction_runs": [...], "compaction_runs": [...],
     "graph_nodes": [{...node..., "evidence": [...]}, ...], "graph_edges": [...],
     "counts": {"threads": 2, "entries": 9, ...}}

What belongs to the user: threads whose ``user_id`` is theirs, with every entry of every
branch in ``seq`` order; items, entities and file versions of their scope (the rows whose
``user_id`` is theirs, of any project and thread; rows of no user are the agent's, shared by
its users, and are not exported); the knowledge graph's nodes and edges of their scope, each
with its evidence; their channel sessions; the extraction and compaction runs of their
threads. Derived indexes (vectors, keyword postings) are copies of the texts
exported here and are left out. Records have the shapes of ``export.records``.

Only the agents in ``agents`` are read: those asked for, or else every agent the caller's
grants reach for this user (for trusted code and unrestricted grants, every agent holding
anything of the user). Every read goes through ``visible_to(grants)`` as well.

Nothing is held in memory but one chunk of rows (``CHUNK_SIZE``): each section is read with
``QuerySet.iterator`` and each record written as it comes. Sections are read one after the
other, not in one snapshot: rows written while an export runs may or may not be in it,
and ``counts`` says what was written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from django.db import models
from django.db.models import F, Prefetch
from django.utils import timezone

from cogitator_memory import policy
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.exceptions import InvalidInput, UserNotGranted
from cogitator_memory.export import records
from cogitator_memory.files.models import MemoryFileVersion
from cogitator_memory.grants import USER_ID_MAX_LENGTH, GrantedQuerySet, Grants
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode
from cogitator_memory.items.models import Entity, Evidence, ExtractionRun, MemoryItem
from cogitator_memory.jsondata import text_problem
from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.threads.models import Entry, Thread

__all__ = [
    "CHUNK_SIZE",
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_AGENTS",
    "ExportProgress",
    "UserExport",
    "export_user",
]

FORMAT = "cogitator-memory/user-export"
# Raised when a record changes shape in a way a reader of version 1 would misread.
FORMAT_VERSION = 1
# Rows fetched per round trip: the most the export holds at once. Entries are the large
# rows (a long tool result is tens of kB), so a chunk is a few MB at most.
CHUNK_SIZE = 200
# Agents one export may name: each is a grant check and a term of every query.
MAX_AGENTS = 100
AGENT_ID_MAX_LENGTH = 255

# The sections of the document, in order; each is a list of records.
SECTIONS = (
    "threads",
    "items",
    "entities",
    "file_versions",
    "sessions",
    "extraction_runs",
    "compaction_runs",
    "graph_nodes",
    "graph_edges",
)
# What ``counts`` at the end of the document counts: the sections, and the records
# written inside records (a thread's entries, an item's evidence).
COUNTED = ("threads", "entries", "items", "evidence", *SECTIONS[2:])

_Q = TypeVar("_Q", bound=models.QuerySet[Any])
# A graph node's or edge's record from the row and its evidence's records.
_GraphRecord = Callable[[Any, list[dict[str, Any]]], dict[str, Any]]


@dataclass(frozen=True)
class ExportProgress:
    """How far an export is: ``written`` records of ``total`` (None unless counted), the
    last one of ``section`` (``threads``, ``entries``, ``items``, ...)."""

    section: str
    written: int
    total: int | None


def export_user(
    user_id: str,
    *,
    agent_ids: Iterable[str] | None = None,
    grants: Grants | None = None,
    progress: Callable[[ExportProgress], None] | None = None,
) -> Iterator[str]:
    """Everything memory keeps of ``user_id`` (of ``agent_ids``, or of every agent the
    grants reach for the user), as JSON texts that joined are one document (see the
    module). ``grants`` None is trusted code. ``progress``, when given, is called after
    each record with an ``ExportProgress`` whose total is counted before the first.

    Checks before it returns, so nothing is written for a refused export: raises
    ``InvalidInput`` for a user id or agent id that no row can have (on ``user_id`` and
    ``agent_id``), ``NoGrant`` for a named agent whose memory of the user the grants do
    not reach, and ``UserNotGranted`` when no agent is named and none of the grants
    reaches the user.
    """
    export = UserExport.prepare(user_id, agent_ids=agent_ids, grants=grants)
    return export.stream(progress=progress)


@dataclass(frozen=True)
class UserExport:
    """The export of one user's memory in some agents, within ``grants``."""

    user_id: str
    agent_ids: tuple[str, ...]
    grants: Grants | None = None

    @classmethod
    def prepare(
        cls, user_id: str, *, agent_ids: Iterable[str] | None = None, grants: Grants | None = None
    ) -> UserExport:
        """The export of ``user_id``, its agents resolved and checked (see
        ``export_user`` for what it raises)."""
        user_id = _checked_user_id(user_id)
        if agent_ids is not None:
            agents = _checked_agent_ids(agent_ids)
            for agent_id in agents:
                policy.require_read(grants, agent_id, user_id, user_field="user_id")
        elif grants is None or grants.is_unrestricted:
            agents = agents_holding(user_id)
        else:
            agents = sorted(a for a in grants.agent_ids or () if grants.allows(a, user_id))
            if not agents:
                raise UserNotGranted(user_id)
        return cls(user_id, tuple(agents), grants)

    # --- what is read ----------------------------------------------------------------------

    def _owned(self, rows: _Q) -> _Q:
        """The rows of the user in the export's agents, within the grants."""
        rows = rows.filter(user_id=self.user_id, agent_id__in=self.agent_ids)
        if self.grants is not None:
            rows = cast(_Q, cast(GrantedQuerySet[Any], rows).visible_to(self.grants))
        return rows

    def _thread_ids(self) -> models.QuerySet[Thread, Any]:
        return self._owned(Thread.objects.all()).order_by().values("pk")

    def threads(self) -> models.QuerySet[Thread]:
        """The user's threads, by agent, oldest first."""
        return self._owned(Thread.objects.all()).order_by("agent_id", "created_at", "id")

    def entries(self, thread_id: str | None = None) -> models.QuerySet[Entry]:
        """The entries of one of the user's threads (every thread's without one), every
        branch, in ``seq`` order."""
        rows = Entry.objects.all()
        if self.grants is not None:
            rows = rows.visible_to(self.grants)
        if thread_id is None:
            return rows.filter(thread__in=self._thread_ids())
        return rows.filter(thread_id=thread_id).order_by("seq")

    def items(self) -> models.QuerySet[MemoryItem]:
        """The items of the user's scope, every status, with their subjects and evidence."""
        evidence = Evidence.objects.annotate(
            entry_thread_id=F("entry__thread_id"),
            entry_agent_id=F("entry__thread__agent_id"),
            entry_user_id=F("entry__thread__user_id"),
        ).order_by("id")
        return (
            self._owned(MemoryItem.objects.all())
            .select_related("subject")
            .prefetch_related(Prefetch("evidence", queryset=evidence))
            .order_by("agent_id", "recorded_at", "id")
        )

    def entities(self) -> models.QuerySet[Entity]:
        return self._owned(Entity.objects.all()).order_by("agent_id", "created_at", "id")

    def file_versions(self) -> models.QuerySet[MemoryFileVersion]:
        """Every version of every memory file of the user's scope, by scope and path."""
        return self._owned(MemoryFileVersion.objects.all()).order_by(
            "agent_id", "scope_key", "path", "sequence"
        )

    def sessions(self) -> models.QuerySet[ChannelSession]:
        return self._owned(ChannelSession.objects.all()).order_by("agent_id", "created_at", "id")

    def extraction_runs(self) -> models.QuerySet[ExtractionRun]:
        return ExtractionRun.objects.filter(thread__in=self._thread_ids()).order_by(
            "thread_id", "created_at", "id"
        )

    def compaction_runs(self) -> models.QuerySet[CompactionRun]:
        return CompactionRun.objects.filter(thread__in=self._thread_ids()).order_by(
            "thread_id", "created_at", "id"
        )

    def graph_nodes(self) -> models.QuerySet[GraphNode]:
        """The nodes of the user's scope, every status, with their evidence."""
        return (
            self._owned(GraphNode.objects.all())
            .prefetch_related(Prefetch("evidence", queryset=self._graph_evidence()))
            .order_by("agent_id", "created_at", "id")
        )

    def graph_edges(self) -> models.QuerySet[GraphEdge]:
        """The edges of the user's scope, every status, with their evidence."""
        return (
            self._owned(GraphEdge.objects.all())
            .prefetch_related(Prefetch("evidence", queryset=self._graph_evidence()))
            .order_by("agent_id", "created_at", "id")
        )

    @staticmethod
    def _graph_evidence() -> models.QuerySet[GraphEvidence]:
        return GraphEvidence.objects.annotate(
            entry_thread_id=F("entry__thread_id"),
            entry_agent_id=F("entry__thread__agent_id"),
            entry_user_id=F("entry__thread__user_id"),
        ).order_by("id")

    def count(self) -> int:
        """How many records the export will write (not counting evidence, which is
        written inside its item)."""
        return sum(
            rows.count()
            for rows in (
                self.threads(),
                self.entries(),
                self.items(),
                self.entities(),
                self.file_versions(),
                self.sessions(),
                self.extraction_runs(),
                self.compaction_runs(),
                self.graph_nodes(),
                self.graph_edges(),
            )
        )

    # --- how it is written -----------------------------------------------------------------

    def header(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "user_id": self.user_id,
            "agents": list(self.agent_ids),
            "generated_at": timezone.now(),
        }

    def stream(self, *, progress: Callable[[ExportProgress], None] | None = None) -> Iterator[str]:
        """The document, a record (or a piece of the structure around records) at a time."""
        tally = _Tally(progress, self.count() if progress is not None else None)
        flat: list[tuple[str, models.QuerySet[Any], Callable[[Any], dict[str, Any]]]] = [
            ("entities", self.entities(), records.entity_record),
            ("file_versions", self.file_versions(), records.file_version_record),
            ("sessions", self.sessions(), records.session_record),
            ("extraction_runs", self.extraction_runs(), records.extraction_run_record),
            ("compaction_runs", self.compaction_runs(), records.compaction_run_record),
        ]
        yield records.object_head(self.header())
        yield from _section("threads", self._thread_elements(tally))
        yield from _section("items", self._item_elements(tally))
        for section, rows, record in flat:
            yield from _section(section, _each(section, rows, record, tally))
        graph: list[tuple[str, models.QuerySet[Any], _GraphRecord]] = [
            ("graph_nodes", self.graph_nodes(), records.graph_node_record),
            ("graph_edges", self.graph_edges(), records.graph_edge_record),
        ]
        for name, found, write in graph:
            yield from _section(name, self._graph_elements(name, found, write, tally))
        yield f'\n"counts": {records.dumps(tally.counts)}}}\n'

    def _thread_elements(self, tally: _Tally) -> Iterator[Iterator[str]]:
        for thread in self.threads().iterator(chunk_size=CHUNK_SIZE):
            tally.add("threads")
            yield self._thread_pieces(thread, tally)

    def _thread_pieces(self, thread: Thread, tally: _Tally) -> Iterator[str]:
        """A thread and its entries, an entry at a time."""
        yield records.object_head(records.thread_record(thread)) + '"entries": ['
        separator = "\n"
        for entry in self.entries(thread.pk).iterator(chunk_size=CHUNK_SIZE):
            tally.add("entries")
            yield separator + records.dumps(records.entry_record(entry))
            separator = ",\n"
        yield "\n]}"

    def _item_elements(self, tally: _Tally) -> Iterator[str]:
        for item in self.items().iterator(chunk_size=CHUNK_SIZE):
            evidence = [
                records.evidence_record(quote, entry_in_export=self._holds_entry_of(quote))
                for quote in item.evidence.all()
            ]
            tally.add("items")
            tally.add("evidence", len(evidence), report=False)
            yield records.dumps(records.item_record(item, evidence))

    def _holds_entry_of(self, evidence: Evidence | GraphEvidence) -> bool:
        """Whether the entry a quote is in is one the export holds (a thread of the user,
        in the export's agents, within the grants)."""
        agent_id = getattr(evidence, "entry_agent_id", None)
        user_id = getattr(evidence, "entry_user_id", None)
        return (
            agent_id in self.agent_ids
            and user_id == self.user_id
            and (self.grants is None or self.grants.allows(agent_id, user_id))
        )

    def _graph_elements(
        self,
        section: str,
        rows: models.QuerySet[Any],
        record: _GraphRecord,
        tally: _Tally,
    ) -> Iterator[str]:
        for row in rows.iterator(chunk_size=CHUNK_SIZE):
            evidence = [
                records.evidence_record(quote, entry_in_export=self._holds_entry_of(quote))
                for quote in row.evidence.all()
            ]
            tally.add(section)
            tally.add("evidence", len(evidence), report=False)
            yield records.dumps(record(row, evidence))


@dataclass
class _Tally:
    """Counts what was written and reports progress."""

    progress: Callable[[ExportProgress], None] | None
    total: int | None
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED, 0))
    written: int = 0

    def add(self, section: str, number: int = 1, *, report: bool = True) -> None:
        self.counts[section] += number
        if not report:
            return
        self.written += number
        if self.progress is not None:
            self.progress(ExportProgress(section, self.written, self.total))


def _each(
    section: str,
    rows: models.QuerySet[Any],
    record: Callable[[Any], dict[str, Any]],
    tally: _Tally,
) -> Iterator[str]:
    for row in rows.iterator(chunk_size=CHUNK_SIZE):
        tally.add(section)
        yield records.dumps(record(row))


def _section(name: str, elements: Iterator[str] | Iterator[Iterator[str]]) -> Iterator[str]:
    """``"name": [``, the elements one a line (a text, or the pieces of a long one), ``],``."""
    yield f"\n{records.dumps(name)}: ["
    separator = "\n"
    for element in elements:
        if isinstance(element, str):
            yield separator + element
        else:
            yield separator + next(element, "")
            yield from element
        separator = ",\n"
    yield "\n],"


def agents_holding(user_id: str) -> list[str]:
    """Every agent that holds anything of ``user_id``: a thread, an item, an entity, a file
    version or a session (trusted code, with no grants to list the agents)."""
    found: set[str] = set()
    for model in (Thread, MemoryItem, Entity, MemoryFileVersion, ChannelSession):
        rows = model._default_manager.filter(user_id=user_id).order_by()
        found.update(rows.values_list("agent_id", flat=True).distinct())
    return sorted(found)


def _checked_user_id(user_id: object) -> str:
    if (
        isinstance(user_id, str)
        and 0 < len(user_id) <= USER_ID_MAX_LENGTH
        and text_problem(user_id) is None
    ):
        return user_id
    raise InvalidInput(
        {
            "user_id": f"A user id is a non-empty text of at most {USER_ID_MAX_LENGTH} "
            "characters, without NUL."
        }
    )


def _checked_agent_ids(agent_ids: Iterable[str]) -> list[str]:
    agents = list(agent_ids)
    for agent_id in agents:
        if (
            not isinstance(agent_id, str)
            or not agent_id.strip()
            or len(agent_id) > AGENT_ID_MAX_LENGTH
            or text_problem(agent_id) is not None
        ):
            raise InvalidInput(
                {
                    "agent_id": f"An agent id is a text of 1 to {AGENT_ID_MAX_LENGTH} "
                    "characters, not only spaces, without NUL."
                }
            )
    unique = sorted(set(agents))
    if not unique or len(unique) > MAX_AGENTS:
        raise InvalidInput(
            {"agent_id": f"Name from 1 to {MAX_AGENTS} agents, or none for every agent."}
        )
    return unique
