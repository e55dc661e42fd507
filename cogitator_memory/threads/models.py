"""Threads and their entries, kept as trees."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import PartialEntryNotSaveable
from cogitator_memory.grants import USER_ID_MAX_LENGTH, memory_users, thread_owner
from cogitator_memory.threads.querysets import EntryQuerySet, ThreadQuerySet

# Keys the store writes into metadata; camelCase, as other stores of the same data do.
FORK_OF_KEY = "forkOf"
FORKED_FROM_KEY = "forkedFrom"
FORKS_KEY = "memoryForks"
PAUSED_RUN_KEY = "pausedRun"
REDACTED_KEY = "redacted"

REDACTED_TEXT = "[redacted]"


def new_thread_id() -> str:
    return f"{memory_settings.THREAD_ID_PREFIX}{uuid.uuid4().hex}"


def new_entry_id() -> str:
    return f"{memory_settings.ENTRY_ID_PREFIX}{uuid.uuid4().hex}"


class EntryType(models.TextChoices):
    MESSAGE = "message", _("message")
    TOOL_RESULT = "tool_result", _("tool result")
    MODEL_CHANGE = "model_change", _("model change")
    COMPACTION = "compaction", _("compaction")
    APPROVAL = "approval", _("approval")
    INTERRUPT = "interrupt", _("interrupt")
    LABEL = "label", _("label")
    CUSTOM = "custom", _("custom")


# Entries a model is sent as they are; the others are session events with a payload.
CONVERSATION_TYPES = frozenset({EntryType.MESSAGE.value, EntryType.TOOL_RESULT.value})
EVENT_TYPES = frozenset(choice.value for choice in EntryType) - CONVERSATION_TYPES


class Role(models.TextChoices):
    SYSTEM = "system", _("system")
    USER = "user", _("user")
    ASSISTANT = "assistant", _("assistant")
    TOOL = "tool", _("tool")


class Thread(models.Model):
    id = models.CharField(
        _("id"), primary_key=True, max_length=255, default=new_thread_id, editable=False
    )
    agent_id = models.CharField(
        _("agent id"), max_length=255, help_text=_("The agent the thread belongs to.")
    )
    metadata = models.JSONField(_("metadata"), default=dict, blank=True)
    # NULL, not "", is a thread of no user: grants that name users never match it.
    user_id = models.CharField(  # noqa: DJ001
        _("user id"),
        max_length=USER_ID_MAX_LENGTH,
        null=True,
        blank=True,
        editable=False,
        help_text=_(
            "The user the thread belongs to: a copy of metadata.userId, kept equal to it "
            "on every save. Grants that name users are checked against it."
        ),
    )
    active_leaf = models.ForeignKey(
        "cogitator_memory.Entry",
        verbose_name=_("active leaf"),
        null=True,
        blank=True,
        # Entries are removed by the thread services, which move the leaf first; the
        # constraint (deferred to commit) catches any other path that forgets to.
        on_delete=models.DO_NOTHING,
        related_name="+",
        help_text=_("The entry the active branch ends at."),
    )
    next_seq = models.PositiveBigIntegerField(
        _("last sequence number"),
        default=0,
        editable=False,
        help_text=_("The seq of the last entry added; the next one gets this plus one."),
    )
    fork_seq = models.PositiveBigIntegerField(
        _("first fork"),
        null=True,
        blank=True,
        editable=False,
        help_text=_(
            "The seq of the earliest entry with two children or more (0 for a thread of "
            "two roots); empty while the thread is one chain. Every entry up to it is on "
            "every branch, which spares reads a walk up the tree."
        ),
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(
        _("updated at"),
        default=timezone.now,
        help_text=_("Changes when the thread is created or its metadata is updated."),
    )

    objects = ThreadQuerySet.as_manager()

    class Meta:
        verbose_name = _("thread")
        verbose_name_plural = _("threads")
        # A user's memory starts with their threads; the export and the forgetting cover
        # what stands on them too (items, files, sessions, runs), so those permissions are
        # not a thread's. Rewinding marks items stale: a permission of its own in the
        # admin (checkout stays a change of the thread).
        permissions = [
            ("export_user_memory", _("Can export everything memory keeps of a user")),
            ("forget_user_memory", _("Can forget everything memory keeps of a user")),
            ("rewind_thread", _("Can rewind threads")),
        ]
        indexes = [
            models.Index(fields=["agent_id", "-updated_at", "-id"], name="cm_thread_agent_updated"),
            models.Index(fields=["-updated_at", "-id"], name="cm_thread_updated"),
            models.Index(fields=["agent_id", "user_id"], name="cm_thread_owner"),
            # A user's threads in every agent (the export, forgetting a user).
            models.Index(
                fields=["user_id", "agent_id"],
                condition=models.Q(user_id__isnull=False),
                name="cm_thread_user_agent",
            ),
        ]

    def __str__(self) -> str:
        return self.id

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The owner column follows the metadata on every save, so no writer can set one
        # without the other. InvalidInput for a userId that is not a text.
        self.user_id = thread_owner(self.metadata if isinstance(self.metadata, dict) else None)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "metadata" in update_fields:
            kwargs["update_fields"] = {*update_fields, "user_id"}
        # The users of metadata.memoryUserIds follow the same way (``ThreadUser``).
        users = memory_users(self.metadata if isinstance(self.metadata, dict) else None)
        adding = self._state.adding
        super().save(*args, **kwargs)
        if update_fields is None or "metadata" in update_fields:
            ThreadUser.keep(self.pk, users, adding=adding)

    def as_dict(self) -> dict[str, Any]:
        """The thread as plain data; keys never set are absent."""
        return {
            "id": self.id,
            "agent_id": self.agent_id,
            "metadata": dict(self.metadata or {}),
            "active_leaf_id": self.active_leaf_id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


class ThreadUser(models.Model):
    """A user listed in a thread's ``metadata.memoryUserIds`` (the other people whose
    messages the thread holds), one row per user, kept equal to the list on every save of
    the thread, so finding the threads of others a user wrote in is one indexed query."""

    thread = models.ForeignKey(
        Thread, verbose_name=_("thread"), on_delete=models.CASCADE, related_name="+"
    )
    user_id = models.CharField(_("user id"), max_length=USER_ID_MAX_LENGTH)

    class Meta:
        verbose_name = _("user of a thread")
        verbose_name_plural = _("users of threads")
        constraints = [
            models.UniqueConstraint(fields=["thread", "user_id"], name="cm_thread_user_unique"),
        ]
        indexes = [models.Index(fields=["user_id", "thread"], name="cm_thread_user")]

    def __str__(self) -> str:
        return f"{self.thread_id}: {self.user_id}"

    @staticmethod
    def keep(thread_id: str, users: list[str], *, adding: bool = False) -> None:
        """Make the rows of the thread the ``users`` (a new thread has none yet)."""
        rows = ThreadUser.objects.filter(thread_id=thread_id)
        have = set() if adding else set(rows.values_list("user_id", flat=True))
        wanted = set(users)
        if have - wanted:
            rows.filter(user_id__in=sorted(have - wanted)).delete()
        if wanted - have:
            ThreadUser.objects.bulk_create(
                [ThreadUser(thread_id=thread_id, user_id=user) for user in sorted(wanted - have)]
            )


class Entry(models.Model):
    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_entry_id, editable=False
    )
    thread = models.ForeignKey(
        Thread, verbose_name=_("thread"), on_delete=models.CASCADE, related_name="entries"
    )
    parent = models.ForeignKey(
        "self",
        verbose_name=_("parent"),
        null=True,
        blank=True,
        # Deleting an entry splices it out (its children move to its parent), which the
        # services do; a plain delete of an entry with children fails at commit instead
        # of silently cutting a branch off.
        on_delete=models.DO_NOTHING,
        related_name="children",
    )
    seq = models.PositiveBigIntegerField(
        _("sequence"), help_text=_("Order of insertion within the thread, from 1, no gaps.")
    )
    type = models.CharField(
        _("type"), max_length=20, choices=EntryType.choices, default=EntryType.MESSAGE
    )
    # NULL, not "", marks a field never set: reads leave it out instead of giving "".
    role = models.CharField(  # noqa: DJ001
        _("role"), max_length=20, choices=Role.choices, null=True, blank=True
    )
    content = models.JSONField(
        _("content"), null=True, blank=True, help_text=_("A text, or a list of content parts.")
    )
    name = models.CharField(_("name"), max_length=255, null=True, blank=True)  # noqa: DJ001
    tool_call_id = models.CharField(  # noqa: DJ001
        _("tool call id"), max_length=255, null=True, blank=True
    )
    tool_calls = models.JSONField(_("tool calls"), null=True, blank=True)
    tool_results = models.JSONField(_("tool results"), null=True, blank=True)
    event = models.JSONField(
        _("event"), null=True, blank=True, help_text=_("The payload of a session event.")
    )
    metadata = models.JSONField(_("metadata"), null=True, blank=True)
    token_count = models.PositiveIntegerField(_("token count"), default=0)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    redaction = models.JSONField(
        _("redaction"),
        null=True,
        blank=True,
        help_text=_("When and why the entry was redacted; empty if it never was."),
    )

    objects = EntryQuerySet.as_manager()

    class Meta:
        verbose_name = _("entry")
        verbose_name_plural = _("entries")
        # Deleting entries in the admin takes Django's delete_entry; redacting its own.
        permissions = [("redact_entry", _("Can redact entries"))]
        constraints = [
            models.UniqueConstraint(fields=["thread", "seq"], name="cm_entry_thread_seq"),
            models.CheckConstraint(
                condition=models.Q(type__in=[choice.value for choice in EntryType]),
                name="cm_entry_type_known",
            ),
        ]
        indexes = [
            models.Index(fields=["thread", "created_at", "seq"], name="cm_entry_thread_time"),
            # The admin's entry filters, each in the list's order (thread, then seq).
            models.Index(fields=["type", "thread", "seq"], name="cm_entry_type"),
            models.Index(fields=["role", "thread", "seq"], name="cm_entry_role"),
            models.Index(fields=["created_at"], name="cm_entry_created"),
        ]

    def __str__(self) -> str:
        return self.id

    def save(self, *args: Any, **kwargs: Any) -> None:
        if getattr(self, "_tool_fields_stripped", False):
            raise PartialEntryNotSaveable(
                f"Entry {self.id!r} was read without its tool calls; saving it would erase "
                "them. Read it with include_tool_calls=True to change it."
            )
        super().save(*args, **kwargs)

    @property
    def is_event(self) -> bool:
        return self.type in EVENT_TYPES

    @property
    def is_redacted(self) -> bool:
        return self.redaction is not None

    def as_dict(self) -> dict[str, Any]:
        """The entry as plain data: fields never set are absent, not None."""
        data: dict[str, Any] = {
            "id": self.id,
            "thread_id": self.thread_id,
            "parent_id": self.parent_id,
            "seq": self.seq,
            "type": self.type,
            "token_count": self.token_count,
            "created_at": self.created_at,
        }
        optional = {
            "role": self.role,
            "content": self.content,
            "name": self.name,
            "tool_call_id": self.tool_call_id,
            "tool_calls": self.tool_calls,
            "tool_results": self.tool_results,
            "event": self.event,
            "metadata": self.metadata,
            "redaction": self.redaction,
        }
        data.update({key: value for key, value in optional.items() if value is not None})
        return data
