"""A process-local copy of keyword corpora's postings, so a search of a corpus read before
costs the one query that reads its corpus rows.

A search reads the rows of the corpora it admits (``search/keyword_index.py``: their ids,
sizes, ``version`` and ``removals``) as it always did. For each one this cache holds, the
row tells whether the copy is current (same version), lacks only documents added since
(the postings after the last one read, by id: writers of a corpus take turns on its row,
so its postings' ids grow in the order their transactions commit), or lost documents
(``removals`` changed: the documents still there are read again and the others dropped).
A copy that does not add up to the row's document count after that is read anew.

What the cache may and may not do:

- It is filled and brought up to date only outside transactions (autocommit), where every
  row read is committed. Inside one (``ATOMIC_REQUESTS``, a test, a write that searches),
  a copy is used only when its version is the row's, else the search reads the database
  as before: uncommitted rows never enter the cache, and a transaction's own writes are
  seen.
- A corpus row changes in the same transaction as its postings (``keywords/postings.py``),
  so a deleted or redacted document, a cleared thread or a new owner changes the version
  and is seen at the next search: a removed document is never ranked from the cache, and
  which corpora a search admits is still decided by the database (and every hit is still
  checked against its source by the callers, as before).
- ``COGITATOR_MEMORY["KEYWORDS"]["CACHE_POSTINGS"]`` bounds the postings held (least
  recently searched corpora go first); a search whose corpora would take more than half
  of it reads the database. 0 turns the cache off.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from django.db import connections, router

from cogitator_memory.conf import memory_settings
from cogitator_memory.keywords.models import KeywordPosting
from cogitator_memory.keywords.postings import EMPTY_TERM

__all__ = [
    "CorpusRow",
    "CorpusView",
    "cache_capacity",
    "clear_cache",
    "corpus_views",
    "forget_corpora",
]

# The most corpora a search reads from the cache; a search over more (an agent's every
# thread) reads the database.
MAX_CORPORA = 256
# Rows per fetch while loading postings (each batch is grouped by term at once).
LOAD_CHUNK = 200_000
# Share of a copy's documents removed since it was loaded past which it is loaded anew
# (their postings are only skipped until then).
RELOAD_DEAD_SHARE = 0.25


@dataclass(frozen=True)
class CorpusRow:
    """A corpus row as a search read it."""

    id: int
    documents: int
    total_length: int
    version: int
    removals: int


@dataclass(frozen=True)
class CorpusView:
    """A consistent snapshot of one cached corpus for a search: documents by slot, and
    per term asked the slots of the live documents holding it and their counts."""

    ids: list[str]
    slots: dict[str, int]
    lengths: np.ndarray  # float64, per slot
    seqs: np.ndarray  # float64 per slot, NaN where a document has none
    alive: np.ndarray  # bool per slot
    documents: int
    tokens: int
    terms: dict[str, tuple[np.ndarray, np.ndarray]]  # term -> (slots int64, counts float64)


class _Corpus:
    """The postings of one corpus, in arrays that grow as documents are added."""

    def __init__(self, row: CorpusRow) -> None:
        self.corpus_id = row.id
        self.version = row.version
        self.removals = row.removals
        self.ids: list[str] = []
        self.slots: dict[str, int] = {}
        self.lengths = array("q")
        self.seqs = array("d")
        self.empty_ids = array("q")
        self.alive = bytearray()
        # term -> chunks of (slots, counts), one per batch of postings read
        self.terms: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.max_id = 0
        self.postings = 0
        self.documents = 0
        self.dead = 0
        self.tokens = 0
        # numpy copies made for searches, dropped when what they copy changes
        self._term_arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._doc_arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def add_rows(self, rows: Sequence[tuple[int, str, str, int, int, int | None]]) -> None:
        """Add (posting id, document, term, count, length, seq) postings, in bulk: the
        rows are grouped by term with numpy, one chunk per term."""
        if not rows:
            return
        # Column by column (zip(*rows) is slow for hundreds of thousands of rows).
        posting_ids = [row[0] for row in rows]
        document_ids = [row[1] for row in rows]
        terms = [row[2] for row in rows]
        counts = [row[3] for row in rows]
        lengths = [row[4] for row in rows]
        seqs = [row[5] for row in rows]
        self.max_id = max(self.max_id, max(posting_ids))
        self.postings += len(rows)
        slots, alive, empty_ids = self.slots, self.alive, self.empty_ids
        at: dict[str, int] = dict.fromkeys(document_ids, 0)
        for document_id in at:
            slot = slots.get(document_id)
            if slot is None or (not alive[slot] and empty_ids[slot]):
                # A new document (or one added again after it went).
                slot = slots[document_id] = len(self.ids)
                self.ids.append(document_id)
                self.lengths.append(0)
                self.seqs.append(float("nan"))
                empty_ids.append(0)
                alive.append(0)
            at[document_id] = slot
        row_slots = np.array([at[document_id] for document_id in document_ids], dtype=np.int32)
        is_empty = np.array([term == EMPTY_TERM for term in terms], dtype=bool)
        for n in np.flatnonzero(is_empty).tolist():
            slot = int(row_slots[n])
            empty_ids[slot] = posting_ids[n]
            self.lengths[slot] = lengths[n]
            seq = seqs[n]
            self.seqs[slot] = float("nan") if seq is None else float(seq)
            if not alive[slot]:
                alive[slot] = 1
                self.documents += 1
                self.tokens += lengths[n]
        rest = np.flatnonzero(~is_empty)
        if len(rest):
            numbers: dict[str, int] = {}
            term_numbers = np.array(
                [numbers.setdefault(terms[n], len(numbers)) for n in rest.tolist()],
                dtype=np.int64,
            )
            order = np.argsort(term_numbers, kind="stable")
            grouped = term_numbers[order]
            rows_at = rest[order]
            slot_column = row_slots[rows_at]
            count_column = np.array(counts, dtype=np.int32)[rows_at]
            starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
            stops = np.r_[starts[1:], len(grouped)]
            names = list(numbers)
            for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
                term = names[int(grouped[start])]
                self.terms.setdefault(term, []).append(
                    (slot_column[start:stop], count_column[start:stop])
                )
                self._term_arrays.pop(term, None)
        self._doc_arrays = None

    def consolidate(self) -> None:
        """One chunk per term."""
        for chunks in self.terms.values():
            if len(chunks) > 1:
                chunks[:] = [
                    (
                        np.concatenate([chunk[0] for chunk in chunks]),
                        np.concatenate([chunk[1] for chunk in chunks]),
                    )
                ]

    def prune(self, empty_ids: set[int]) -> None:
        """Drop the documents whose empty-term posting is not among ``empty_ids``."""
        for slot, posting_id in enumerate(self.empty_ids):
            if self.alive[slot] and posting_id not in empty_ids:
                self.alive[slot] = 0
                self.documents -= 1
                self.tokens -= self.lengths[slot]
                self.dead += 1
        self._term_arrays.clear()
        self._doc_arrays = None

    def view(self, terms: Sequence[str]) -> CorpusView:
        if self._doc_arrays is None:
            self._doc_arrays = (
                np.array(self.lengths, dtype=np.float64),
                np.array(self.seqs, dtype=np.float64),
                np.frombuffer(bytes(self.alive), dtype=np.uint8).astype(bool),
            )
        lengths, seqs, alive = self._doc_arrays
        held: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term in terms:
            arrays = self._term_arrays.get(term)
            if arrays is None:
                chunks = self.terms.get(term)
                if chunks is None:
                    continue
                if len(chunks) > 1:
                    chunks[:] = [
                        (
                            np.concatenate([chunk[0] for chunk in chunks]),
                            np.concatenate([chunk[1] for chunk in chunks]),
                        )
                    ]
                slots = chunks[0][0].astype(np.int64)
                counts = chunks[0][1].astype(np.float64)
                if self.dead:
                    live = alive[slots]
                    slots, counts = slots[live], counts[live]
                arrays = self._term_arrays[term] = (slots, counts)
            held[term] = arrays
        return CorpusView(
            ids=self.ids,
            slots=self.slots,
            lengths=lengths,
            seqs=seqs,
            alive=alive,
            documents=self.documents,
            tokens=self.tokens,
            terms=held,
        )


class _Cache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.corpora: OrderedDict[tuple[str, str, int], _Corpus] = OrderedDict()
        self.postings = 0

    def clear(self) -> None:
        with self.lock:
            self.corpora.clear()
            self.postings = 0


_cache = _Cache()


def clear_cache() -> None:
    """Drop every cached corpus."""
    _cache.clear()


def forget_corpora(corpus_ids: Iterable[int]) -> int:
    """Drop the cached copies of these corpora (of every database this process read),
    so nothing of their documents stays in memory: forgetting a thread or a user drops
    the corpora it touched. Returns how many copies went."""
    wanted = set(corpus_ids)
    if not wanted:
        return 0
    with _cache.lock:
        keys = [key for key in _cache.corpora if key[2] in wanted]
        for key in keys:
            _cache.postings -= _cache.corpora.pop(key).postings
    return len(keys)


def cache_capacity() -> int:
    """Postings the cache may hold (``KEYWORDS["CACHE_POSTINGS"]``)."""
    return int(memory_settings.KEYWORDS.get("CACHE_POSTINGS", 0) or 0)


def _posting_columns(table: str) -> str:
    return f"SELECT id, document_id, term, count, length, seq FROM {table} "


def _load(cursor: object, table: str, row: CorpusRow) -> _Corpus:
    corpus = _Corpus(row)
    cursor.execute(_posting_columns(table) + "WHERE corpus_id = %s", [row.id])  # type: ignore[attr-defined]
    while rows := cursor.fetchmany(LOAD_CHUNK):  # type: ignore[attr-defined]
        corpus.add_rows(rows)
    corpus.consolidate()
    return corpus


def _bring_up_to_date(cursor: object, table: str, corpus: _Corpus, row: CorpusRow) -> _Corpus:
    if corpus.removals != row.removals:
        cursor.execute(  # type: ignore[attr-defined]
            f"SELECT id FROM {table} WHERE corpus_id = %s AND term = %s", [row.id, EMPTY_TERM]
        )
        corpus.prune({posting_id for (posting_id,) in cursor.fetchall()})  # type: ignore[attr-defined]
        if corpus.dead > RELOAD_DEAD_SHARE * max(len(corpus.ids), 1):
            return _load(cursor, table, row)
    if corpus.documents != row.documents:
        # "+corpus_id": the primary key's range, not every posting of the corpus.
        cursor.execute(  # type: ignore[attr-defined]
            _posting_columns(table) + "WHERE +corpus_id = %s AND id > %s",
            [row.id, corpus.max_id],
        )
        corpus.add_rows(cursor.fetchall())  # type: ignore[attr-defined]
    if corpus.documents < row.documents:
        # Documents moved in from another corpus (a new owner): their postings are older.
        return _load(cursor, table, row)
    corpus.version, corpus.removals = row.version, row.removals
    return corpus


def corpus_views(rows: Sequence[CorpusRow], terms: Sequence[str]) -> list[CorpusView] | None:
    """Snapshots of these corpora for ``terms`` from the cache, loading or bringing up to
    date what it may; None when the search should read the database instead."""
    capacity = cache_capacity()
    if not rows or capacity <= 0 or len(rows) > MAX_CORPORA:
        return None
    # At most a posting per token and one per document. A search whose corpora would
    # take more than half the cache reads the tables: two such searches taking turns
    # would otherwise evict each other's corpora and load them anew every time.
    if 2 * sum(row.documents + row.total_length for row in rows) > capacity:
        return None
    alias = router.db_for_read(KeywordPosting)
    connection = connections[alias]
    name = str(connection.settings_dict.get("NAME"))
    in_transaction = connection.in_atomic_block
    views: list[CorpusView] = []
    with _cache.lock:
        keys = [(alias, name, row.id) for row in rows]
        stale = [
            (key, row)
            for key, row in zip(keys, rows, strict=True)
            if (held := _cache.corpora.get(key)) is None or held.version != row.version
        ]
        if stale and in_transaction:
            return None
        if stale:
            table = connection.ops.quote_name(KeywordPosting._meta.db_table)
            with connection.cursor() as cursor:
                for key, row in stale:
                    held = _cache.corpora.pop(key, None)
                    if held is not None:
                        _cache.postings -= held.postings
                        fresh = _bring_up_to_date(cursor, table, held, row)
                    else:
                        fresh = _load(cursor, table, row)
                    _cache.corpora[key] = fresh
                    _cache.postings += fresh.postings
        for key in keys:
            _cache.corpora.move_to_end(key)
        # Least recently searched first, never one of this search's.
        wanted = set(keys)
        while _cache.postings > capacity:
            oldest = next((key for key in _cache.corpora if key not in wanted), None)
            if oldest is None:
                break
            _cache.postings -= _cache.corpora.pop(oldest).postings
        for key in keys:
            views.append(_cache.corpora[key].view(terms))
    return views
