"""The keyword index of conversation entries: a thread's messages and tool results that
are not redacted, by their text (``threads/text.py``).

``EntryKeywords``, a dependent (``cogitator_memory.dependents``), indexes entries in the
transaction that inserts them and takes them out in the transaction that deletes or
redacts them (and clears or deletes their thread), so a new entry is found at once and a
gone or redacted one never is (``search/entry_keywords.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cogitator_memory.dependents import Forgotten
from cogitator_memory.keywords.models import (
    DocumentKind,
    KeywordCorpus,
    KeywordPosting,
    KeywordTerm,
)
from cogitator_memory.keywords.postings import IndexedDocument, keyword_index
from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry
from cogitator_memory.threads.text import entry_text

__all__ = ["EntryKeywords", "entry_document", "index_entries"]


def entry_document(entry: Entry) -> IndexedDocument | None:
    """What the index keeps of an entry; None for an event or a redacted entry."""
    if entry.type not in CONVERSATION_TYPES or entry.redaction is not None:
        return None
    return IndexedDocument(
        document_id=entry.pk, text=entry_text(entry), thread_id=entry.thread_id, seq=entry.seq
    )


def index_entries(entries: Iterable[Entry]) -> None:
    """Index new entries; call inside the transaction that inserts them."""
    documents = [document for entry in entries if (document := entry_document(entry))]
    if documents:
        keyword_index.add(DocumentKind.ENTRY, documents)


class EntryKeywords:
    """Keeps the keyword index in step with the entries: new ones in, gone ones out."""

    name = "entry_keywords"
    models = (KeywordCorpus, KeywordTerm, KeywordPosting)

    def entries_added(self, entries: Sequence[Entry]) -> None:
        index_entries(entries)

    def forget_entries(self, entry_ids: Sequence[str], forgotten: Forgotten) -> None:
        forgotten["keyword_documents"] += keyword_index.remove(DocumentKind.ENTRY, entry_ids)

    def owner_changed(self, thread_id: str, agent_id: str, user_id: str | None) -> None:
        """Entries are indexed per thread alone: nothing to change."""
