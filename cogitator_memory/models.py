"""Every model of the app, re-exported so Django finds them and callers import one place."""

from cogitator_memory.access.models import Grant
from cogitator_memory.cascade.models import ForgetRun
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode
from cogitator_memory.items.models import (
    Entity,
    Evidence,
    ExtractionRun,
    ExtractionWindow,
    MemoryItem,
)
from cogitator_memory.keywords.models import KeywordCorpus, KeywordPosting, KeywordTerm
from cogitator_memory.outbox.models import OutboxMessage
from cogitator_memory.sessions.models import ChannelSession, SessionStatus
from cogitator_memory.threads.models import Entry, EntryType, Role, Thread, ThreadUser
from cogitator_memory.upkeep.models import PlaybookDraft
from cogitator_memory.upkeep.records import UpkeepCursor, UpkeepRun, UpkeepScopeState

__all__ = [
    "ChannelSession",
    "CompactionRun",
    "Embedding",
    "Entity",
    "Entry",
    "EntryType",
    "Evidence",
    "ExtractionRun",
    "ExtractionWindow",
    "ForgetRun",
    "Grant",
    "GraphEdge",
    "GraphEvidence",
    "GraphNode",
    "KeywordCorpus",
    "KeywordPosting",
    "KeywordTerm",
    "MemoryFileHead",
    "MemoryFileVersion",
    "MemoryItem",
    "OutboxMessage",
    "PlaybookDraft",
    "Role",
    "SessionStatus",
    "Thread",
    "ThreadUser",
    "UpkeepCursor",
    "UpkeepRun",
    "UpkeepScopeState",
]
