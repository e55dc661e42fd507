"""Memory files: notes an agent keeps under ``/memories``, every change a version.

``MemoryFileVersion`` is the history: one row per change of one path in one scope,
numbered by ``sequence`` (1, 2, ... per scope and path). A deletion is a version without
content. Versions are only ever added, except that redaction replaces their content.

``MemoryFileHead`` is the heads table: one row per scope and path pointing at the newest
version, written in the transaction that adds the version. Reads of the files that stand
(a directory view, the listing, a run's index) read heads only, so their cost follows the
number of files, not the length of their histories. A partial index ("the row with no
newer sequence") cannot say which row is newest without a flag rewritten on the older
row, which is a heads table inside the history with worse locking; and a head row
carries what a directory view needs (size, deleted) without reading any content.
"""

from __future__ import annotations

import hashlib
import json
import uuid

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from cogitator_memory.files.querysets import FileHeadQuerySet, FileVersionQuerySet
from cogitator_memory.items.models import SCOPE_ID_MAX_LENGTH, ScopeFields

MAX_PATH_LENGTH = 2048
SHA256_LENGTH = 64


def new_file_version_id() -> str:
    return f"fv_{uuid.uuid4().hex}"


def scope_key(
    agent_id: str, user_id: str | None, project_id: str | None, thread_id: str | None
) -> str:
    """A digest naming one exact scope: a unique constraint treats NULLs as distinct, so
    ``(agent, user, project, thread, path, sequence)`` would let two versions of one path
    in a scope of no user share a sequence; the digest of all four (None kept apart from
    any text) is never NULL."""
    text = json.dumps([agent_id, user_id, project_id, thread_id], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Author(models.TextChoices):
    """Who wrote a version: memory itself (observations, the playbook), a person, or a
    model through the memory tool."""

    MEMORY = "memory", _("memory")
    USER = "user", _("user")
    MODEL = "model", _("model")


class MemoryFileVersion(ScopeFields):
    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_file_version_id, editable=False
    )
    scope_key = models.CharField(
        _("scope key"),
        max_length=SHA256_LENGTH,
        editable=False,
        help_text=_("A digest of the agent, user, project and thread."),
    )
    path = models.CharField(_("path"), max_length=MAX_PATH_LENGTH)
    sequence = models.PositiveIntegerField(
        _("sequence"), help_text=_("1 for the first version of the path in its scope, then 2, ...")
    )
    content = models.TextField(  # noqa: DJ001
        _("content"), null=True, blank=True, help_text=_("Empty (null) for a deletion.")
    )
    sha256 = models.CharField(  # noqa: DJ001
        _("sha256"),
        max_length=SHA256_LENGTH,
        null=True,
        blank=True,
        help_text=_("Of the content as written (kept when the content is redacted)."),
    )
    previous = models.ForeignKey(
        "self",
        verbose_name=_("previous version"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("The version this one was made from (of another path after a rename)."),
    )
    previous_id: str | None  # django-stubs does not derive it for a key to "self"
    place = models.ForeignKey(
        "cogitator_memory.Entry",
        verbose_name=_("place"),
        null=True,
        blank=True,
        # The thread is kept in place_thread_id: a version whose entry went stays off
        # every branch of that thread instead of showing on all of them.
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("The entry it was written after: only branches holding it see it."),
    )
    place_thread_id = models.CharField(  # noqa: DJ001
        _("place thread"), max_length=SCOPE_ID_MAX_LENGTH, null=True, blank=True, editable=False
    )
    renamed_from = models.CharField(  # noqa: DJ001
        _("renamed from"), max_length=MAX_PATH_LENGTH, null=True, blank=True
    )
    author = models.CharField(
        _("author"), max_length=8, choices=Author.choices, default=Author.MODEL
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    redaction = models.JSONField(
        _("redaction"), null=True, blank=True, help_text=_("When and why it was redacted.")
    )

    objects = FileVersionQuerySet.as_manager()

    class Meta:
        verbose_name = _("memory file version")
        verbose_name_plural = _("memory file versions")
        permissions = [
            ("redact_memoryfileversion", _("Can redact memory file versions")),
        ]
        constraints = [
            # The database, not a read-then-write, refuses a second writer of a version.
            models.UniqueConstraint(
                fields=["scope_key", "path", "sequence"], name="cm_file_version_sequence"
            ),
            models.CheckConstraint(
                condition=models.Q(author__in=[choice.value for choice in Author]),
                name="cm_file_version_author_known",
            ),
            models.CheckConstraint(
                condition=models.Q(sequence__gte=1), name="cm_file_version_sequence_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(content__isnull=True, sha256__isnull=True)
                | models.Q(content__isnull=False, sha256__isnull=False),
                name="cm_file_version_sha256_with_content",
            ),
        ]
        indexes = [
            # Redaction across the scopes of an agent, and renames followed by path.
            models.Index(fields=["agent_id", "path"], name="cm_file_version_agent_path"),
            models.Index(fields=["agent_id", "renamed_from"], name="cm_file_version_renamed"),
            # A user's versions, of one agent or every one (forgetting a user, the export).
            models.Index(
                fields=["user_id", "agent_id"],
                condition=models.Q(user_id__isnull=False),
                name="cm_file_version_user",
            ),
            # The versions kept for one thread alone (deleting the thread).
            models.Index(
                fields=["thread_id"],
                condition=models.Q(thread_id__isnull=False),
                name="cm_file_version_thread",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.path} #{self.sequence}"

    @property
    def is_deletion(self) -> bool:
        return self.content is None

    @property
    def is_redacted(self) -> bool:
        return self.redaction is not None


class MemoryFileHead(ScopeFields):
    """The newest version of one path in one scope (see the module docstring)."""

    scope_key = models.CharField(_("scope key"), max_length=SHA256_LENGTH, editable=False)
    path = models.CharField(_("path"), max_length=MAX_PATH_LENGTH)
    version = models.OneToOneField(
        MemoryFileVersion,
        verbose_name=_("version"),
        on_delete=models.CASCADE,
        related_name="+",
    )
    sequence = models.PositiveIntegerField(_("sequence"))
    deleted = models.BooleanField(_("deleted"), default=False)
    size = models.PositiveIntegerField(_("size"), default=0, help_text=_("Bytes, as UTF-8."))
    place_thread_id = models.CharField(  # noqa: DJ001
        _("place thread"), max_length=SCOPE_ID_MAX_LENGTH, null=True, blank=True, editable=False
    )
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    objects = FileHeadQuerySet.as_manager()

    class Meta:
        # The admin's file browser lists heads: to a person they are the files.
        verbose_name = _("memory file")
        verbose_name_plural = _("memory files")
        constraints = [
            models.UniqueConstraint(fields=["scope_key", "path"], name="cm_file_head_path"),
        ]
        indexes = [
            models.Index(fields=["agent_id", "path"], name="cm_file_head_agent_path"),
            # A user's files and the files of one thread (forgetting them).
            models.Index(
                fields=["user_id", "agent_id"],
                condition=models.Q(user_id__isnull=False),
                name="cm_file_head_user",
            ),
            models.Index(
                fields=["thread_id", "path"],
                condition=models.Q(thread_id__isnull=False),
                name="cm_file_head_thread",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.path} -> #{self.sequence}"
