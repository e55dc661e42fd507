"""The knowledge graph: nodes (what memory knows of), edges (how they relate) and the
evidence each stands on.

A node belongs to one exact scope (the four scope columns, and ``scope_key``, their
digest): its ``key`` (the name folded, as an entity's) is unique per scope and ``type``.
An edge joins two nodes of one scope, so its scope is theirs; it is unique per source,
target and ``relation``. Who said a node or an edge is its ``trust``; whether it counts
is its ``status``: suggested until a person (or a statement that is active on its own)
makes it active, rejected when a reviewer refuses it. ``GraphEvidence`` rows are the
lineage: each quote a node or an edge stands on, with the entry it came from. Rows are
written by ``graph/services.py`` only.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from cogitator_memory.files.models import SHA256_LENGTH
from cogitator_memory.graph.querysets import (
    GraphEdgeQuerySet,
    GraphEvidenceQuerySet,
    GraphNodeQuerySet,
)
from cogitator_memory.items.models import Entity, ScopeFields, Trust

__all__ = [
    "GraphEdge",
    "GraphEvidence",
    "GraphNode",
    "GraphStatus",
    "new_graph_edge_id",
    "new_graph_node_id",
]

MAX_NAME = 255
MAX_TYPE = 64
MAX_RELATION = 128


def new_graph_node_id() -> str:
    return f"gnode_{uuid.uuid4().hex}"


def new_graph_edge_id() -> str:
    return f"gedge_{uuid.uuid4().hex}"


class GraphStatus(models.TextChoices):
    """Whether a node or an edge counts: the words of items' statuses, where they fit."""

    SUGGESTED = "suggested", _("suggested")
    ACTIVE = "active", _("active")
    REJECTED = "rejected", _("rejected")


class GraphRow(ScopeFields):
    """What nodes and edges share: the exact scope (with its digest, the one column a
    traversal compares at every hop), trust, status, the time they held, and when they
    were written."""

    scope_key = models.CharField(
        _("scope key"),
        max_length=SHA256_LENGTH,
        editable=False,
        help_text=_("A digest of the agent, user, project and thread."),
    )
    properties = models.JSONField(_("properties"), default=dict, blank=True)
    trust = models.CharField(
        _("trust"), max_length=8, choices=Trust.choices, help_text=_("Who said it.")
    )
    status = models.CharField(
        _("status"), max_length=12, choices=GraphStatus.choices, default=GraphStatus.SUGGESTED
    )
    valid_from = models.DateTimeField(
        _("valid from"), null=True, blank=True, help_text=_("When it began to hold, if known.")
    )
    valid_to = models.DateTimeField(
        _("valid to"),
        null=True,
        blank=True,
        help_text=_("When it stopped holding (exclusive); empty while it holds."),
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        abstract = True


class GraphNode(GraphRow):
    """A person, a place, a thing or an idea memory knows of."""

    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_graph_node_id, editable=False
    )
    type = models.CharField(
        _("type"),
        max_length=MAX_TYPE,
        default="entity",
        help_text=_("What kind of thing it is (person, place, ...), in lower case."),
    )
    name = models.CharField(_("name"), max_length=MAX_NAME)
    # The name folded for matching (case and spacing aside); unique per scope and type.
    key = models.CharField(_("key"), max_length=MAX_NAME, editable=False)
    aliases = models.JSONField(
        _("aliases"), default=list, blank=True, help_text=_("Other names of the same thing.")
    )
    entity = models.ForeignKey(
        Entity,
        verbose_name=_("entity"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="graph_nodes",
        help_text=_("The subject of memory items the node stands for, if any."),
    )

    objects = GraphNodeQuerySet.as_manager()

    class Meta:
        verbose_name = _("graph node")
        verbose_name_plural = _("graph nodes")
        permissions = [
            ("activate_graphnode", _("Can activate suggested graph nodes")),
            ("reject_graphnode", _("Can reject graph nodes")),
        ]
        constraints = [
            models.UniqueConstraint(fields=["scope_key", "type", "key"], name="cm_graph_node_key"),
            models.CheckConstraint(
                condition=models.Q(status__in=[choice.value for choice in GraphStatus]),
                name="cm_graph_node_status_known",
            ),
            models.CheckConstraint(
                condition=models.Q(trust__in=[choice.value for choice in Trust]),
                name="cm_graph_node_trust_known",
            ),
        ]
        indexes = [
            # Scoped reads and the review screen's suggested nodes.
            models.Index(fields=["agent_id", "user_id", "status"], name="cm_graph_node_owner"),
            # The nodes of a scope by name (a search, the upsert's read).
            models.Index(fields=["scope_key", "key"], name="cm_graph_node_scope_key"),
            # A user's nodes in every agent, and one thread's (forgetting them).
            models.Index(
                fields=["user_id", "agent_id"],
                condition=models.Q(user_id__isnull=False),
                name="cm_graph_node_user",
            ),
            models.Index(
                fields=["thread_id"],
                condition=models.Q(thread_id__isnull=False),
                name="cm_graph_node_thread",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class GraphEdge(GraphRow):
    """How two nodes of one scope relate: ``source`` ``relation`` ``target``."""

    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_graph_edge_id, editable=False
    )
    # Indexed with the status below (``cm_graph_edge_source``, ``cm_graph_edge_target``).
    source = models.ForeignKey(
        GraphNode,
        verbose_name=_("source"),
        on_delete=models.CASCADE,
        related_name="edges_out",
        db_index=False,
    )
    target = models.ForeignKey(
        GraphNode,
        verbose_name=_("target"),
        on_delete=models.CASCADE,
        related_name="edges_in",
        db_index=False,
    )
    relation = models.CharField(
        _("relation"),
        max_length=MAX_RELATION,
        help_text=_("How the source relates to the target, in lower case words joined by _."),
    )
    weight = models.FloatField(_("weight"), default=1.0)

    objects = GraphEdgeQuerySet.as_manager()

    class Meta:
        verbose_name = _("graph edge")
        verbose_name_plural = _("graph edges")
        permissions = [
            ("activate_graphedge", _("Can activate suggested graph edges")),
            ("reject_graphedge", _("Can reject graph edges")),
        ]
        constraints = [
            # The nodes fix the scope: (source, target, relation) is unique per scope.
            models.UniqueConstraint(
                fields=["source", "target", "relation"], name="cm_graph_edge_key"
            ),
            models.CheckConstraint(
                condition=~models.Q(source=models.F("target")), name="cm_graph_edge_no_loop"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=[choice.value for choice in GraphStatus]),
                name="cm_graph_edge_status_known",
            ),
            models.CheckConstraint(
                condition=models.Q(trust__in=[choice.value for choice in Trust]),
                name="cm_graph_edge_trust_known",
            ),
        ]
        indexes = [
            # A traversal steps from a node along its edges of the statuses asked for, in
            # both directions.
            models.Index(fields=["source", "status"], name="cm_graph_edge_source"),
            models.Index(fields=["target", "status"], name="cm_graph_edge_target"),
            models.Index(fields=["agent_id", "user_id", "status"], name="cm_graph_edge_owner"),
            models.Index(
                fields=["user_id", "agent_id"],
                condition=models.Q(user_id__isnull=False),
                name="cm_graph_edge_user",
            ),
            models.Index(
                fields=["thread_id"],
                condition=models.Q(thread_id__isnull=False),
                name="cm_graph_edge_thread",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} {self.relation} {self.target_id}"


class GraphEvidence(models.Model):
    """One quote a node or an edge stands on: the entry it is in (gone entries leave it
    null), the tool call, and whether the quote holds in the entry's text."""

    node = models.ForeignKey(
        GraphNode,
        verbose_name=_("node"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="evidence",
    )
    edge = models.ForeignKey(
        GraphEdge,
        verbose_name=_("edge"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="evidence",
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

    objects = GraphEvidenceQuerySet.as_manager()

    class Meta:
        verbose_name = _("graph evidence")
        verbose_name_plural = _("graph evidence")
        constraints = [
            # Each quote supports one node or one edge, never both, never neither.
            models.CheckConstraint(
                condition=models.Q(node__isnull=False, edge__isnull=True)
                | models.Q(node__isnull=True, edge__isnull=False),
                name="cm_graph_evidence_one_owner",
            ),
        ]

    def __str__(self) -> str:
        return self.quote[:80]
