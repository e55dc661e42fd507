"""The keyword index: per document, how often it holds each token, and per group of
documents, the statistics BM25 needs.

Keyword search (``search/bm25.py``) and the BM25 of a thread's entries
(``search/entry_keywords.py``) read candidates and statistics from these tables instead
of scanning text. Each is a plain Django model, so SQLite and PostgreSQL store the same
rows and rank the same way. The rows are written in the transaction that writes their
source (``keywords/postings.py``).
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from cogitator_memory.grants import SharedRowsQuerySet
from cogitator_memory.index_operations import CoveringIndex

# The longest token kept; a longer one is cut to this length on both sides (documents
# and queries), so it still finds itself.
MAX_TERM_LENGTH = 100


class DocumentKind(models.TextChoices):
    EMBEDDING = "embedding", _("embedding")
    ENTRY = "entry", _("entry")


class KeywordCorpusQuerySet(SharedRowsQuerySet["KeywordCorpus"]):
    """Corpora; those of embeddings carry their rows' owner."""


class KeywordCorpus(models.Model):
    """Indexed documents of one kind that share every column a search filters on: the
    unit whose statistics (documents, tokens, documents per term) are summed over the
    corpora a search admits."""

    key = models.CharField(
        _("key"),
        max_length=64,
        unique=True,
        help_text=_("A digest of the kind and the columns below; one corpus per value."),
    )
    kind = models.CharField(_("kind"), max_length=16, choices=DocumentKind.choices)
    thread_id = models.CharField(_("thread id"), max_length=255, null=True, blank=True)  # noqa: DJ001
    agent_id = models.CharField(_("agent id"), max_length=255, null=True, blank=True)  # noqa: DJ001
    user_id = models.CharField(_("user id"), max_length=255, null=True, blank=True)  # noqa: DJ001
    source_type = models.CharField(_("source type"), max_length=32, default="", blank=True)
    index_name = models.CharField(_("index"), max_length=64, default="", blank=True)
    documents = models.BigIntegerField(_("documents"), default=0)
    total_length = models.BigIntegerField(
        _("total length"), default=0, help_text=_("Tokens of all its documents.")
    )
    version = models.BigIntegerField(
        _("version"),
        default=0,
        help_text=_(
            "A random number drawn anew by every write of its documents: a cached copy "
            "of its postings is current while it holds the same one."
        ),
    )
    removals = models.BigIntegerField(
        _("removals"),
        default=0,
        help_text=_("Writes that took documents out of it (or moved some in)."),
    )

    # Its rows' owner (agent, user, thread): searches see the corpora the caller's grants
    # reach, as they see the rows (``grants.visible_rows_q``).
    objects = KeywordCorpusQuerySet.as_manager()

    class Meta:
        verbose_name = _("keyword corpus")
        verbose_name_plural = _("keyword corpora")
        indexes = [
            models.Index(fields=["kind", "thread_id"], name="cm_kwcorpus_thread"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.thread_id or '-'} {self.index_name}"


class KeywordTerm(models.Model):
    """How many documents of a corpus hold a term; kept for the corpora of embeddings
    only (``postings.COUNTED_KINDS``): a thread's entries are counted from their
    postings."""

    corpus = models.ForeignKey(
        KeywordCorpus,
        on_delete=models.CASCADE,
        related_name="terms",
        verbose_name=_("corpus"),
        # The unique (corpus, term) constraint is its index.
        db_index=False,
        # Written only next to its corpus's upsert, in one transaction: a foreign key
        # would add a deferred check per row to every commit of add_entry.
        db_constraint=False,
    )
    term = models.CharField(_("term"), max_length=MAX_TERM_LENGTH)
    documents = models.BigIntegerField(_("documents"), default=0)

    class Meta:
        verbose_name = _("keyword term")
        verbose_name_plural = _("keyword terms")
        constraints = [
            models.UniqueConstraint(fields=["corpus", "term"], name="cm_kwterm_corpus_term"),
        ]

    def __str__(self) -> str:
        return self.term


class KeywordPosting(models.Model):
    """A document's count of one term, with the document's length. Every document also
    has one posting of the empty term (count 0): it carries the length of a document
    that holds no term and tells which corpus to subtract it from when it goes."""

    id = models.BigAutoField(primary_key=True)
    corpus = models.ForeignKey(
        KeywordCorpus,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("corpus"),
        # The (corpus, term, ...) index serves lookups by corpus.
        db_index=False,
        # As KeywordTerm's: no per-row check at commit.
        db_constraint=False,
    )
    document_id = models.CharField(
        _("document id"), max_length=255, help_text=_("The embedding's or entry's id.")
    )
    term = models.CharField(_("term"), max_length=MAX_TERM_LENGTH)
    count = models.PositiveIntegerField(_("count"))
    length = models.PositiveIntegerField(_("document length"))
    seq = models.BigIntegerField(
        _("seq"), null=True, blank=True, help_text=_("An entry's place in its thread.")
    )

    class Meta:
        verbose_name = _("keyword posting")
        verbose_name_plural = _("keyword postings")
        indexes = [
            # Candidates of a term, the strongest first, then the newest (index-only on
            # PostgreSQL, which keeps the document id in the index).
            CoveringIndex(
                fields=["corpus", "term", "-count", "length", "-id"],
                covering=["document_id"],
                name="cm_kwposting_term",
            ),
            # A document's postings: the counts of candidates, and deletion.
            models.Index(fields=["document_id", "term"], name="cm_kwposting_document"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id} {self.term} {self.count}"
