"""Writing the keyword index in the transaction that writes its source.

A document (an embedding's content, or a conversation entry's text) is tokenized as
keyword search tokenizes it (``keywords/tokenizer.py``: stems, stopwords left out). For
each distinct token it gets a posting (document, term, count, document length), plus one
posting of the empty term carrying its length. Its corpus (``KeywordCorpus``: the
documents of one kind sharing thread, agent, user, source type and index) counts its
documents and tokens, and ``KeywordTerm`` counts per corpus the documents holding each
term (for embeddings: ``COUNTED_KINDS``; a thread's entries, one corpus, are counted from
their postings when searched). Removing a document subtracts what adding it added.

The statistics stay exact under concurrent writers: every change is a relative
increment (``documents = documents + n``) written by an upsert in the same transaction
as the postings and the source row, so a rolled-back write takes its increments with
it, and a committed one has added exactly its own. Writers of one corpus serialize on
its row, which each locks first (corpora in the order of their keys, then terms in
order), so two writers never wait on each other's term rows the other way round.

Every write also draws a new random ``version`` for each corpus it changes, and a write
that takes documents out (or moves some in) counts one more ``removals``: a process that
keeps a corpus's postings in memory (``keywords/cache.py``) knows from these two columns
whether its copy is current, needs the postings added since, or needs pruning.

On PostgreSQL, adding documents is one statement (the corpus upsert, the term counts
and the postings as data-modifying WITH queries over arrays); SQLite, which has no such
queries, runs the same three as separate statements.

``KeywordIndex`` takes the model classes, so the data migration that fills the index
for rows written before it existed runs the same code with the historical models.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections, router
from django.db.models import F

from cogitator_memory.keywords.models import (
    MAX_TERM_LENGTH,
    KeywordCorpus,
    KeywordPosting,
    KeywordTerm,
)
from cogitator_memory.keywords.tokenizer import tokenize
from cogitator_memory.prepared import prepares_statements

__all__ = [
    "COUNTED_KINDS",
    "EMPTY_TERM",
    "IndexedDocument",
    "KeywordIndex",
    "corpus_key",
    "document_terms",
    "new_version",
]

# The term of the posting every document has, whatever it holds.
EMPTY_TERM = ""
# The kinds whose documents per term are counted in ``KeywordTerm``: a search of
# embeddings may sum them over thousands of corpora (an agent's every thread). A thread's
# entries are one corpus, whose documents per term a search counts from the postings (or
# the cache holds), so add_entry writes no counters.
COUNTED_KINDS = frozenset({"embedding"})
# Documents per round of statements; a round's upserts stay well under SQLite's
# parameter limit.
WRITE_CHUNK = 500
# Rows per multi-row statement (three to nine parameters each).
UPSERT_CHUNK = 300


@dataclass(frozen=True)
class IndexedDocument:
    """A document to index: its id, its text, and the columns searches filter on."""

    document_id: str
    text: str
    thread_id: str | None = None
    agent_id: str | None = None
    user_id: str | None = None
    source_type: str = ""
    index_name: str = ""
    seq: int | None = None

    def corpus_columns(self) -> tuple[str | None, str | None, str | None, str, str]:
        return (self.thread_id, self.agent_id, self.user_id, self.source_type, self.index_name)


def document_terms(text: str) -> tuple[int, Counter[str]]:
    """A text's length in tokens and its count of each token, as the index keeps them."""
    tokens = [token[:MAX_TERM_LENGTH] for token in tokenize(text)]
    return len(tokens), Counter(tokens)


def corpus_key(
    kind: str,
    thread_id: str | None,
    agent_id: str | None,
    user_id: str | None,
    source_type: str,
    index_name: str,
) -> str:
    """The unique key of a corpus: a digest of its kind and columns (NULL kept apart
    from an empty text, which a unique constraint over nullable columns would not)."""
    columns = [kind, thread_id, agent_id, user_id, source_type, index_name]
    return hashlib.sha256(json.dumps(columns).encode()).hexdigest()


def new_version() -> int:
    """A corpus's version after a write: random, so a rolled-back write's version is
    never drawn again by the next one (and never 0, a corpus never written)."""
    return random.getrandbits(62) + 1


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class KeywordIndex:
    """Adds and removes documents of the keyword index (models given for migrations)."""

    def __init__(
        self,
        corpus_model: Any = KeywordCorpus,
        term_model: Any = KeywordTerm,
        posting_model: Any = KeywordPosting,
    ) -> None:
        self.corpus_model = corpus_model
        self.term_model = term_model
        self.posting_model = posting_model
        # False for the models of migration 0020, before corpora had a version: the
        # backfill there writes the columns of its day.
        self.versioned = any(field.name == "version" for field in corpus_model._meta.fields)

    @property
    def connection(self) -> Any:
        return connections[router.db_for_write(self.posting_model)]

    def _table(self, model: Any) -> str:
        quoted: str = self.connection.ops.quote_name(model._meta.db_table)
        return quoted

    # --- statistics -----------------------------------------------------------------

    def _bump_corpora(
        self, kind: str, deltas: dict[tuple[Any, ...], tuple[int, int]], *, moved: bool = False
    ) -> dict[tuple[Any, ...], int]:
        """Add (documents, tokens) to each corpus named by its columns, creating it, with
        a new version (and one more removal when documents ``moved`` in); returns the
        corpora's ids."""
        table = self._table(self.corpus_model)
        keyed = sorted(
            ((corpus_key(kind, *columns), columns, delta) for columns, delta in deltas.items()),
            key=lambda row: row[0],
        )
        by_key = {key: columns for key, columns, _ in keyed}
        ids: dict[tuple[Any, ...], int] = {}
        with self.connection.cursor() as cursor:
            removals = 1 if moved else 0
            stamps = self.versioned
            width = 11 if stamps else 9
            for chunk in _chunks(keyed, UPSERT_CHUNK):
                values = ", ".join([f"({', '.join(['%s'] * width)})"] * len(chunk))
                params: list[Any] = []
                for key, columns, (documents, tokens) in chunk:
                    params.extend([key, kind, *columns, documents, tokens])
                    if stamps:
                        params.extend([new_version(), removals])
                stamp_columns = ", version, removals" if stamps else ""
                stamp_updates = (
                    f", version = excluded.version, removals = {table}.removals + excluded.removals"
                    if stamps
                    else ""
                )
                # RETURNING gives the id of a row inserted or updated alike (SQLite 3.35+).
                cursor.execute(
                    f"INSERT INTO {table} (key, kind, thread_id, agent_id, user_id, "
                    f"source_type, index_name, documents, total_length{stamp_columns}) "
                    f"VALUES {values} "
                    f"ON CONFLICT (key) DO UPDATE SET "
                    f"documents = {table}.documents + excluded.documents, "
                    f"total_length = {table}.total_length + excluded.total_length"
                    f"{stamp_updates} RETURNING id, key",
                    params,
                )
                for corpus_id, key in cursor.fetchall():
                    ids[by_key[key]] = corpus_id
        return ids

    def _bump_terms(self, deltas: dict[tuple[int, str], int]) -> None:
        """Add to the documents counted per (corpus, term), creating the rows."""
        table = self._table(self.term_model)
        rows = sorted((corpus_id, term, n) for (corpus_id, term), n in deltas.items() if n)
        with self.connection.cursor() as cursor:
            for chunk in _chunks(rows, UPSERT_CHUNK):
                values = ", ".join(["(%s, %s, %s)"] * len(chunk))
                cursor.execute(
                    f"INSERT INTO {table} (corpus_id, term, documents) VALUES {values} "
                    f"ON CONFLICT (corpus_id, term) DO UPDATE SET "
                    f"documents = {table}.documents + excluded.documents",
                    [value for row in chunk for value in row],
                )

    def _drop_unused_terms(self, deltas: dict[tuple[int, str], int]) -> None:
        """Delete the counts of terms no document of their corpus holds any more: the
        vocabulary of a corpus keeps no word of a document that went."""
        by_corpus: dict[int, list[str]] = defaultdict(list)
        for corpus_id, term in deltas:
            by_corpus[corpus_id].append(term)
        for corpus_id, terms in sorted(by_corpus.items()):
            for chunk in _chunks(sorted(terms), UPSERT_CHUNK):
                self.term_model.objects.filter(
                    corpus_id=corpus_id, term__in=chunk, documents__lte=0
                ).delete()

    # --- documents ------------------------------------------------------------------

    def add(self, kind: str, documents: Sequence[IndexedDocument]) -> None:
        """Index these documents (none of them indexed yet); call inside the transaction
        that writes them."""
        for chunk in _chunks(list(documents), WRITE_CHUNK):
            self._add_chunk(kind, chunk)

    def _add_chunk(self, kind: str, documents: Sequence[IndexedDocument]) -> None:
        counted = [(document, *document_terms(document.text)) for document in documents]
        corpus_deltas: dict[tuple[Any, ...], tuple[int, int]] = {}
        for document, length, _ in counted:
            columns = document.corpus_columns()
            seen, tokens = corpus_deltas.get(columns, (0, 0))
            corpus_deltas[columns] = (seen + 1, tokens + length)
        if self.connection.vendor == "postgresql" and self.versioned:
            self._add_in_one_statement(kind, counted, corpus_deltas)
            return
        corpus_ids = self._bump_corpora(kind, corpus_deltas)
        term_deltas: dict[tuple[int, str], int] = defaultdict(int)
        postings: list[tuple[int, str, str, int, int, int | None]] = []
        for document, length, counts in counted:
            corpus_id = corpus_ids[document.corpus_columns()]
            postings.append((corpus_id, document.document_id, EMPTY_TERM, 0, length, document.seq))
            for term, count in counts.items():
                term_deltas[(corpus_id, term)] += 1
                postings.append(
                    (corpus_id, document.document_id, term, count, length, document.seq)
                )
        if kind in COUNTED_KINDS:
            self._bump_terms(term_deltas)
        self._insert_postings(postings)

    def _add_in_one_statement(
        self,
        kind: str,
        counted: Sequence[tuple[IndexedDocument, int, Counter[str]]],
        corpus_deltas: dict[tuple[Any, ...], tuple[int, int]],
    ) -> None:
        """PostgreSQL: the corpus upsert, the term counts and the postings in one
        statement (one round trip, one plan), its arrays the only parameters. Locks are
        taken in the order of the other writes: corpora by key, then terms by corpus and
        term (in code point order, as Python sorts them)."""
        corpora = sorted(
            (corpus_key(kind, *columns), columns, delta) for columns, delta in corpus_deltas.items()
        )
        key_of = {columns: key for key, columns, _ in corpora}
        term_deltas: dict[tuple[str, str], int] = defaultdict(int)
        postings: list[tuple[str, str, str, int, int, int | None]] = []
        for document, length, counts in counted:
            key = key_of[document.corpus_columns()]
            postings.append((key, document.document_id, EMPTY_TERM, 0, length, document.seq))
            for term, count in counts.items():
                term_deltas[(key, term)] += 1
                postings.append((key, document.document_id, term, count, length, document.seq))
        corpus_table = self._table(self.corpus_model)
        term_table = self._table(self.term_model)
        posting_table = self._table(self.posting_model)
        columns = list(
            zip(*[(key, kind, *cols, *delta) for key, cols, delta in corpora], strict=True)
        )
        term_columns = list(zip(*[(*pair, n) for pair, n in term_deltas.items()], strict=True))
        posting_columns = list(zip(*postings, strict=True))
        terms_query = ""
        if kind not in COUNTED_KINDS:
            term_deltas.clear()
            term_columns = []
        if term_deltas:
            terms_query = (
                f", added_terms AS (INSERT INTO {term_table} (corpus_id, term, documents) "
                f"SELECT c.id, v.term, v.n FROM unnest(%s::text[], %s::text[], %s::bigint[]) "
                f"AS v(key, term, n) JOIN c ON c.key = v.key "
                f'ORDER BY c.key, v.term COLLATE "C" '
                f"ON CONFLICT (corpus_id, term) DO UPDATE SET "
                f"documents = {term_table}.documents + excluded.documents)"
            )
        params: list[Any] = [
            *(list(column) for column in columns),
            [new_version() for _ in corpora],
            *((list(column) for column in term_columns) if term_deltas else ()),
            *(list(column) for column in posting_columns),
        ]
        import psycopg

        connection = self.connection
        connection.ensure_connection()
        # A prepared statement with server-side parameters: its text is the same on every
        # add (arrays are its only parameters), so it is parsed and planned once per
        # connection, and the arrays are sent as values rather than quoted into the text.
        # A connection whose prepare_threshold is None (OPTIONS, for a pooler in
        # transaction mode) prepares nothing.
        raw = connection.connection
        prepare = True if prepares_statements(connection) else None
        with psycopg.Cursor(raw) as cursor:
            cursor.execute(
                f"WITH c AS (INSERT INTO {corpus_table} (key, kind, thread_id, agent_id, "
                f"user_id, source_type, index_name, documents, total_length, version, "
                f"removals) "
                f"SELECT v.*, 0 FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], "
                f"%s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[], "
                f"%s::bigint[]) AS v ORDER BY 1 "
                f"ON CONFLICT (key) DO UPDATE SET "
                f"documents = {corpus_table}.documents + excluded.documents, "
                f"total_length = {corpus_table}.total_length + excluded.total_length, "
                f"version = excluded.version RETURNING id, key)"
                f"{terms_query} "
                f"INSERT INTO {posting_table} (corpus_id, document_id, term, count, length, seq) "
                f"SELECT c.id, v.document_id, v.term, v.count, v.length, v.seq "
                f"FROM unnest(%s::text[], %s::text[], %s::text[], %s::integer[], "
                f"%s::integer[], %s::bigint[]) AS v(key, document_id, term, count, length, seq) "
                f"JOIN c ON c.key = v.key",
                params,
                prepare=prepare,
            )

    def _insert_postings(self, rows: list[tuple[int, str, str, int, int, int | None]]) -> None:
        # Plain SQL: add_entry writes a few postings on every turn, and building model
        # instances and compiling bulk_create cost several times the INSERT itself.
        table = self._table(self.posting_model)
        with self.connection.cursor() as cursor:
            for chunk in _chunks(rows, UPSERT_CHUNK // 2):
                values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(chunk))
                cursor.execute(
                    f"INSERT INTO {table} (corpus_id, document_id, term, count, length, seq) "
                    f"VALUES {values}",
                    [value for row in chunk for value in row],
                )

    def remove(self, kind: str, document_ids: Iterable[str]) -> int:
        """Take these documents out of the index (ids not indexed are skipped); call
        inside the transaction that deletes them or their text. Returns how many were
        indexed."""
        removed = 0
        for chunk in _chunks(list(dict.fromkeys(document_ids)), WRITE_CHUNK):
            removed += self._remove_chunk(kind, chunk)
        return removed

    def _remove_chunk(self, kind: str, document_ids: Sequence[str]) -> int:
        # The documents' postings by their ids (the (document, term) index), then those
        # in corpora of this kind: a join from the corpora of the kind would read the
        # postings of every such corpus (every thread's), not the documents'.
        found = list(
            self.posting_model.objects.filter(document_id__in=document_ids).values_list(
                "corpus_id", "term", "length"
            )
        )
        if not found:
            return 0
        keys = dict(
            self.corpus_model.objects.filter(
                pk__in=sorted({corpus_id for corpus_id, _term, _length in found}), kind=kind
            ).values_list("id", "key")
        )
        rows = [row for row in found if row[0] in keys]
        if not rows:
            return 0
        corpus_deltas: dict[int, tuple[int, int]] = {}
        term_deltas: dict[tuple[int, str], int] = defaultdict(int)
        for corpus_id, term, length in rows:
            if term == EMPTY_TERM:
                documents, tokens = corpus_deltas.get(corpus_id, (0, 0))
                corpus_deltas[corpus_id] = (documents - 1, tokens - length)
            else:
                if kind in COUNTED_KINDS:
                    term_deltas[(corpus_id, term)] -= 1
        # The same lock order as adding: corpora by key, then terms.
        table = self._table(self.corpus_model)
        with self.connection.cursor() as cursor:
            for corpus_id in sorted(corpus_deltas, key=lambda corpus_id: keys[corpus_id]):
                documents, tokens = corpus_deltas[corpus_id]
                cursor.execute(
                    f"UPDATE {table} SET documents = documents + %s, "
                    f"total_length = total_length + %s, version = %s, "
                    f"removals = removals + 1 WHERE id = %s",
                    [documents, tokens, new_version(), corpus_id],
                )
        self._bump_terms(term_deltas)
        self._drop_unused_terms(term_deltas)
        # By document too: a condition on the few corpora would lead the planner to read
        # every posting of those corpora (SQLite does), a shared one's included.
        postings = self.posting_model.objects.filter(document_id__in=document_ids)
        others = {corpus_id for corpus_id, _term, _length in found} - set(corpus_deltas)
        if others:
            postings = postings.exclude(corpus_id__in=sorted(others))
        postings.delete()
        return sum(-documents for documents, _ in corpus_deltas.values())

    def move_thread_user(self, kind: str, thread_id: str, user_id: str | None) -> None:
        """Give the corpora of a thread's documents a new user: each becomes (or joins)
        the corpus of its columns with that user."""
        corpora = list(self.corpus_model.objects.filter(kind=kind, thread_id=thread_id))
        for corpus in sorted(corpora, key=lambda row: row.key):
            if corpus.user_id == user_id:
                continue
            columns = (
                corpus.thread_id,
                corpus.agent_id,
                user_id,
                corpus.source_type,
                corpus.index_name,
            )
            key = corpus_key(kind, *columns)
            target = self.corpus_model.objects.filter(key=key).first()
            if target is None:
                self.corpus_model.objects.filter(pk=corpus.pk).update(
                    user_id=user_id, key=key, version=new_version(), removals=F("removals") + 1
                )
                continue
            # Both exist: move the postings and add the counts to the target.
            target_id = self._bump_corpora(
                kind, {columns: (corpus.documents, corpus.total_length)}, moved=True
            )[columns]
            terms = self.term_model.objects.filter(corpus_id=corpus.pk)
            self._bump_terms(
                {(target_id, term): n for term, n in terms.values_list("term", "documents")}
            )
            self.posting_model.objects.filter(corpus_id=corpus.pk).update(corpus_id=target_id)
            terms.delete()
            self.corpus_model.objects.filter(pk=corpus.pk).delete()


keyword_index = KeywordIndex()
