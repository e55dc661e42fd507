"""Stored embeddings: a vector of a piece of text, with where it came from and who may see it.

Every row keeps its vector as float32 bytes (``vector``), which the exact in-process store
scans on any database. On PostgreSQL with pgvector the same rows also carry a native
``embedding vector`` column, added by the migration where the extension can be created
(``embeddings/schema.py``) and searched through HNSW indexes per dimension; it is not a
model field, so the models and migrations stay the same on every database.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from cogitator_memory.embeddings.querysets import EmbeddingQuerySet

# Metadata keys that scope an embedding, mirrored into indexed columns below; defined with
# the stores' data types, which the querysets read too.
from cogitator_memory.embeddings.types import AGENT_ID_KEY as AGENT_ID_KEY
from cogitator_memory.embeddings.types import INDEX_KEY as INDEX_KEY
from cogitator_memory.embeddings.types import THREAD_ID_KEY as THREAD_ID_KEY
from cogitator_memory.embeddings.types import USER_ID_KEY as USER_ID_KEY
from cogitator_memory.jobs import JobRecord, due_index, status_known


def new_embedding_id() -> str:
    return f"emb_{uuid.uuid4().hex}"


class Embedding(models.Model):
    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_embedding_id, editable=False
    )
    source_type = models.CharField(
        _("source type"), max_length=32, help_text=_("What was embedded: message, item, ...")
    )
    source_id = models.CharField(_("source id"), max_length=255)
    index_name = models.CharField(
        _("index"),
        max_length=64,
        default="",
        blank=True,
        help_text=_("The index the vector belongs to (metadata.index), e.g. messages."),
    )
    content = models.TextField(_("content"), default="", blank=True)
    dimensions = models.PositiveIntegerField(_("dimensions"))
    vector = models.BinaryField(_("vector"), help_text=_("float32, little-endian."))
    metadata = models.JSONField(_("metadata"), default=dict, blank=True)
    # Copies of metadata.agentId / threadId / userId: scoped searches filter on them.
    agent_id = models.CharField(_("agent id"), max_length=255, null=True, blank=True)  # noqa: DJ001
    thread_id = models.CharField(_("thread id"), max_length=255, null=True, blank=True)  # noqa: DJ001
    user_id = models.CharField(_("user id"), max_length=255, null=True, blank=True)  # noqa: DJ001
    created_at = models.DateTimeField(_("created at"), default=timezone.now)

    objects = EmbeddingQuerySet.as_manager()

    class Meta:
        verbose_name = _("embedding")
        verbose_name_plural = _("embeddings")
        constraints = [
            models.UniqueConstraint(
                fields=["source_type", "source_id", "index_name"], name="cm_embedding_source"
            ),
        ]
        indexes = [
            models.Index(fields=["source_id"], name="cm_embedding_source_id"),
            models.Index(fields=["agent_id", "thread_id"], name="cm_embedding_scope"),
            models.Index(fields=["index_name", "dimensions"], name="cm_embedding_index_dims"),
            # A user's vectors, of one agent or every one (forgetting a user), and a
            # thread's (its owner changing, a filter on the thread).
            models.Index(
                fields=["user_id", "agent_id"],
                condition=models.Q(user_id__isnull=False),
                name="cm_embedding_user",
            ),
            models.Index(
                fields=["thread_id"],
                condition=models.Q(thread_id__isnull=False),
                name="cm_embedding_thread",
            ),
        ]

    def __str__(self) -> str:
        return self.id

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source_type": self.source_type,
            "source_id": self.source_id,
            "content": self.content,
            "metadata": dict(self.metadata or {}),
            "dimensions": self.dimensions,
            "created_at": self.created_at,
        }


class PendingVector(JobRecord):
    """An entry waiting for its vector in the message index: a job of record, written in
    the transaction that adds the entry (``EntryVectors.entries_added``) and deleted in
    the one that stores its vector. Workers claim pending vectors in batches (one
    provider call each), so two workers never embed the same entry, and the sweeper
    wakes a worker for those whose message was lost or whose worker was (see
    ``cogitator_memory.jobs``). It goes with its entry."""

    entry = models.OneToOneField(
        "cogitator_memory.Entry",
        verbose_name=_("entry"),
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="+",
    )
    # The batch that holds it: set by the claim that took it, so that on SQLite (no row
    # locks) a worker reads back exactly the rows its own UPDATE took.
    claim = models.CharField(_("claim"), max_length=32, blank=True, default="")

    class Meta:
        verbose_name = _("pending vector")
        verbose_name_plural = _("pending vectors")
        constraints = [
            status_known("cm_pending_vector"),
        ]
        indexes = [due_index("cm_pending_vector")]
