"""Memory items: what conversations established, with their quotes, trust and times.

An item is one state of a slot: the value one ``attribute`` of one ``subject`` (an entity)
had from ``valid_from`` to ``valid_to`` in the world, as memory recorded it at
``recorded_at`` (and stopped holding it at ``expired_at``, when it was rejected, let go or
marked stale). Items are written by ``items/services.py`` only: writing adds a state, or
merges a statement into the state it repeats; the times of a slot's states are laid out
again after every write. ``Evidence`` rows are the lineage: each quote an item stands on,
with the entry it came from.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from cogitator_memory.grants import USER_ID_MAX_LENGTH
from cogitator_memory.items.querysets import EntityQuerySet, EvidenceQuerySet, ItemQuerySet

# Run statuses are shared by every job of record; imported from here before they were.
from cogitator_memory.jobs import OPEN_RUN_STATUSES as OPEN_RUN_STATUSES
from cogitator_memory.jobs import JobRun, due_index, run_constraints
from cogitator_memory.jobs import RunStatus as RunStatus

SCOPE_ID_MAX_LENGTH = 255


def new_item_id() -> str:
    return f"item_{uuid.uuid4().hex}"


def new_entity_id() -> str:
    return f"ent_{uuid.uuid4().hex}"


class ItemKind(models.TextChoices):
    FACT = "fact", _("fact")
    EVENT = "event", _("event")
    PREFERENCE = "preference", _("preference")
    INSTRUCTION = "instruction", _("instruction")
    OPINION = "opinion", _("opinion")
    LESSON = "lesson", _("lesson")


class Trust(models.TextChoices):
    """Who said it; the order of the choices is the order of trust, most trusted first."""

    SYSTEM = "system", _("system")
    USER = "user", _("user")
    MODEL = "model", _("model")
    TOOL = "tool", _("tool")
    WEB = "web", _("web")


# A higher number is more trusted.
TRUST_RANK = {choice.value: rank for rank, choice in enumerate(reversed(list(Trust)))}


class ItemStatus(models.TextChoices):
    SUGGESTED = "suggested", _("suggested")
    ACTIVE = "active", _("active")
    SUPERSEDED = "superseded", _("superseded")
    STALE = "stale", _("stale")
    LET_GO = "let_go", _("let go")


class ScopeFields(models.Model):
    """The scope a row belongs to: an agent, and optionally a user, a project and a
    thread. A row of no user (project, thread) is shared by every user (...) of its
    agent; the user column is what grants that name users are checked against."""

    agent_id = models.CharField(_("agent id"), max_length=SCOPE_ID_MAX_LENGTH)
    user_id = models.CharField(  # noqa: DJ001
        _("user id"), max_length=USER_ID_MAX_LENGTH, null=True, blank=True
    )
    project_id = models.CharField(  # noqa: DJ001
        _("project id"), max_length=SCOPE_ID_MAX_LENGTH, null=True, blank=True
    )
    thread_id = models.CharField(  # noqa: DJ001
        _("thread id"), max_length=SCOPE_ID_MAX_LENGTH, null=True, blank=True
    )

    class Meta:
        abstract = True


class Entity(ScopeFields):
    """What items are about: a person, a place, a thing, the user themself."""

    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_entity_id, editable=False
    )
    name = models.CharField(_("name"), max_length=255)
    # The name folded for matching (case and spacing aside); unique within a scope.
    key = models.CharField(_("key"), max_length=255, editable=False)
    kind = models.CharField(_("kind"), max_length=64, blank=True, default="")
    aliases = models.JSONField(_("aliases"), default=list, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)

    objects = EntityQuerySet.as_manager()

    class Meta:
        verbose_name = _("entity")
        verbose_name_plural = _("entities")
        indexes = [
            models.Index(fields=["agent_id", "key"], name="cm_entity_key"),
            # The entities of one user of an agent (forgetting a user).
            models.Index(fields=["agent_id", "user_id"], name="cm_entity_owner"),
            # A user's entities in every agent (the export).
            models.Index(
                fields=["user_id", "agent_id"],
                condition=models.Q(user_id__isnull=False),
                name="cm_entity_user",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class MemoryItem(ScopeFields):
    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_item_id, editable=False
    )
    kind = models.CharField(_("kind"), max_length=16, choices=ItemKind.choices)
    subject = models.ForeignKey(
        Entity,
        verbose_name=_("subject"),
        on_delete=models.PROTECT,
        related_name="items",
        help_text=_("The entity the item is about."),
    )
    attribute = models.CharField(
        _("attribute"),
        max_length=255,
        help_text=_("What about the subject: with the subject, the slot the item fills."),
    )
    value = models.TextField(_("value"), help_text=_("The slot's value in this state."))
    content = models.TextField(
        _("content"), blank=True, default="", help_text=_("The item as a sentence.")
    )
    trust = models.CharField(_("trust"), max_length=8, choices=Trust.choices)
    verified = models.BooleanField(
        _("verified"), default=False, help_text=_("Whether its quotes hold in their entries.")
    )
    confidence = models.FloatField(_("confidence"), default=0.5)
    status = models.CharField(
        _("status"), max_length=12, choices=ItemStatus.choices, default=ItemStatus.SUGGESTED
    )
    valid_from = models.DateTimeField(_("valid from"), help_text=_("When it began to hold."))
    valid_to = models.DateTimeField(
        _("valid to"),
        null=True,
        blank=True,
        help_text=_(
            "When it stopped holding (exclusive): the start of the next state of its slot, "
            "or the end it was said to have; empty while it holds."
        ),
    )
    valid_to_known_at = models.DateTimeField(
        _("end known at"),
        null=True,
        blank=True,
        editable=False,
        help_text=_("When memory learned the end in valid_to."),
    )
    ends_at = models.DateTimeField(
        _("ends at"),
        null=True,
        blank=True,
        help_text=_("The end the conversation gave it, if any (exclusive)."),
    )
    recorded_at = models.DateTimeField(_("recorded at"), help_text=_("When memory learned it."))
    expired_at = models.DateTimeField(
        _("expired at"),
        null=True,
        blank=True,
        help_text=_("When memory stopped holding it (rejected, let go or stale)."),
    )
    activated_at = models.DateTimeField(_("activated at"), null=True, blank=True)
    times_retrieved = models.PositiveIntegerField(_("times retrieved"), default=0)
    last_retrieved_at = models.DateTimeField(_("last retrieved at"), null=True, blank=True)
    stale_because = models.JSONField(_("stale because"), null=True, blank=True)
    metadata = models.JSONField(_("metadata"), default=dict, blank=True)

    objects = ItemQuerySet.as_manager()

    class Meta:
        verbose_name = _("memory item")
        verbose_name_plural = _("memory items")
        # One permission per review action, so a team can let one reviewer approve and
        # another only let go.
        permissions = [
            ("activate_memoryitem", _("Can activate suggested memory items")),
            ("reject_memoryitem", _("Can reject memory items")),
            ("let_go_memoryitem", _("Can let memory items go")),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=[choice.value for choice in ItemKind]),
                name="cm_item_kind_known",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=[choice.value for choice in ItemStatus]),
                name="cm_item_status_known",
            ),
            models.CheckConstraint(
                condition=models.Q(trust__in=[choice.value for choice in Trust]),
                name="cm_item_trust_known",
            ),
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0) & models.Q(confidence__lte=1),
                name="cm_item_confidence_range",
            ),
        ]
        indexes = [
            # The slot's states, laid out by time after every write.
            models.Index(fields=["subject", "attribute", "valid_from"], name="cm_item_slot"),
            # Scoped reads, newest first; the review screen's suggested items first.
            models.Index(fields=["agent_id", "user_id", "status"], name="cm_item_owner_status"),
            models.Index(fields=["agent_id", "-recorded_at"], name="cm_item_agent_recorded"),
            models.Index(fields=["status", "-recorded_at"], name="cm_item_status_recorded"),
            # The review list of every status, newest first (ties by id).
            models.Index(fields=["-recorded_at", "-id"], name="cm_item_recorded"),
            # The sleep-time pass reads the items activated since it last looked.
            models.Index(
                fields=["activated_at", "id"],
                condition=models.Q(activated_at__isnull=False),
                name="cm_item_activated",
            ),
            # A user's items in every agent (the export), and the items of one thread's
            # scope (deleting the thread): forgetting reads only those rows.
            models.Index(
                fields=["user_id", "agent_id"],
                condition=models.Q(user_id__isnull=False),
                name="cm_item_user",
            ),
            models.Index(
                fields=["thread_id"],
                condition=models.Q(thread_id__isnull=False),
                name="cm_item_thread",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.attribute}: {self.value}"

    @property
    def slot(self) -> tuple[str, str]:
        return (self.subject_id, self.attribute)

    def as_dict(self) -> dict[str, Any]:
        """The item as plain data; fields never set are absent."""
        data: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "agent_id": self.agent_id,
            "subject_id": self.subject_id,
            "attribute": self.attribute,
            "value": self.value,
            "content": self.content,
            "trust": self.trust,
            "verified": self.verified,
            "confidence": self.confidence,
            "status": self.status,
            "valid_from": self.valid_from,
            "recorded_at": self.recorded_at,
            "times_retrieved": self.times_retrieved,
            "metadata": dict(self.metadata or {}),
        }
        optional = {
            "user_id": self.user_id,
            "project_id": self.project_id,
            "thread_id": self.thread_id,
            "valid_to": self.valid_to,
            "expired_at": self.expired_at,
            "activated_at": self.activated_at,
            "last_retrieved_at": self.last_retrieved_at,
            "stale_because": self.stale_because,
        }
        data.update({key: value for key, value in optional.items() if value is not None})
        return data


class Evidence(models.Model):
    """One quote an item stands on: the entry it is in (gone entries leave it null),
    the tool call, and whether the quote holds in the entry's text."""

    item = models.ForeignKey(
        MemoryItem, verbose_name=_("item"), on_delete=models.CASCADE, related_name="evidence"
    )
    entry = models.ForeignKey(
        "cogitator_memory.Entry",
        verbose_name=_("entry"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    tool_call_id = models.CharField(  # noqa: DJ001
        _("tool call id"), max_length=255, null=True, blank=True
    )
    file_range = models.JSONField(_("file range"), null=True, blank=True)
    quote = models.TextField(_("quote"))
    verified = models.BooleanField(_("verified"), default=False)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)

    objects = EvidenceQuerySet.as_manager()

    class Meta:
        verbose_name = _("evidence")
        verbose_name_plural = _("evidence")

    def __str__(self) -> str:
        return self.quote[:80]


class ExtractionWindow(models.Model):
    """A window of a thread's branch that extraction has read: its natural key (thread,
    first and last entry, extractor version) makes a repeated or redelivered run skip it,
    and it is written in the transaction that writes the window's items."""

    thread = models.ForeignKey(
        "cogitator_memory.Thread",
        verbose_name=_("thread"),
        on_delete=models.CASCADE,
        related_name="+",
    )
    first_entry_id = models.CharField(_("first entry"), max_length=64)
    last_entry_id = models.CharField(_("last entry"), max_length=64)
    version = models.CharField(_("extractor version"), max_length=16)
    entries = models.PositiveIntegerField(_("entries"), default=0)
    items_written = models.PositiveIntegerField(_("items written"), default=0)
    calls = models.PositiveIntegerField(_("model calls"), default=0)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)

    class Meta:
        verbose_name = _("extraction window")
        verbose_name_plural = _("extraction windows")
        constraints = [
            models.UniqueConstraint(
                fields=["thread", "first_entry_id", "last_entry_id", "version"],
                name="cm_extraction_window_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}: {self.first_entry_id}..{self.last_entry_id}"


def new_extraction_run_id() -> str:
    return f"extr_{uuid.uuid4().hex}"


class ExtractionRun(JobRun):
    """One extraction of a thread asked for through the API: the job of record a client
    polls. Its id is the Celery task's id; the task keeps status, progress (windows done
    of windows to read) and what the run did current, so the status does not depend on
    a Celery result backend."""

    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_extraction_run_id, editable=False
    )
    windows_done = models.PositiveIntegerField(_("windows done"), default=0)
    windows_total = models.PositiveIntegerField(_("windows to read"), null=True, blank=True)
    windows_skipped = models.PositiveIntegerField(_("windows read before"), default=0)
    calls = models.PositiveIntegerField(_("model calls"), default=0)
    items_written = models.PositiveIntegerField(_("items written"), default=0)

    class Meta:
        verbose_name = _("extraction run")
        verbose_name_plural = _("extraction runs")
        constraints = run_constraints("cm_extraction_run")
        indexes = [
            models.Index(fields=["thread", "-created_at"], name="cm_extraction_run_thread"),
            # The admin's list, newest first.
            models.Index(fields=["-created_at", "-id"], name="cm_extraction_run_created"),
            due_index("cm_extraction_run"),
        ]
