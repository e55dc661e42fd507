"""The memory API; mount it with ``path("api/memory/", include("cogitator_memory.api.urls"))``."""

from django.urls import path

from cogitator_memory.api import schema  # noqa: F401  (registers the OpenAPI extensions)
from cogitator_memory.api.views.branches import (
    ThreadCheckoutView,
    ThreadForkView,
    ThreadPathView,
    ThreadRewindView,
)
from cogitator_memory.api.views.brief import BriefView
from cogitator_memory.api.views.compaction import (
    CompactionRunView,
    ThreadCompactedHistoryView,
    ThreadCompactView,
)
from cogitator_memory.api.views.context import ContextView, RecallView
from cogitator_memory.api.views.entries import EntryDetailView, EntryRedactView, ThreadEntriesView
from cogitator_memory.api.views.export import UserExportView
from cogitator_memory.api.views.extraction import ExtractionRunView, ThreadExtractView
from cogitator_memory.api.views.files import (
    FileCommandView,
    FileContentView,
    FileHistoryView,
    FileListView,
)
from cogitator_memory.api.views.forgetting import ForgetRunView, UserForgetView
from cogitator_memory.api.views.graph import (
    GraphEdgeActivateView,
    GraphEdgeDetailView,
    GraphEdgeListView,
    GraphEdgeRejectView,
    GraphMergeView,
    GraphNeighbourhoodView,
    GraphNodeActivateView,
    GraphNodeDetailView,
    GraphNodeListView,
    GraphNodeRejectView,
    GraphPathView,
)
from cogitator_memory.api.views.items import (
    ItemActivateView,
    ItemDetailView,
    ItemHistoryView,
    ItemLetGoView,
    ItemListView,
    ItemRejectView,
)
from cogitator_memory.api.views.observations import ObservationListView
from cogitator_memory.api.views.playbook import (
    PlaybookDiscardView,
    PlaybookPromoteView,
    PlaybookView,
)
from cogitator_memory.api.views.search import SearchView
from cogitator_memory.api.views.sessions import SessionDetailView, SessionListView
from cogitator_memory.api.views.threads import ThreadDetailView, ThreadListView
from cogitator_memory.api.views.upkeep import (
    ConsolidationView,
    ObservationsRefreshView,
    UpkeepRunView,
)

app_name = "cogitator_memory_api"

urlpatterns = [
    path("threads/", ThreadListView.as_view(), name="thread-list"),
    path("threads/<str:thread_id>/", ThreadDetailView.as_view(), name="thread-detail"),
    path("threads/<str:thread_id>/entries/", ThreadEntriesView.as_view(), name="thread-entries"),
    path("threads/<str:thread_id>/path/", ThreadPathView.as_view(), name="thread-path"),
    path("threads/<str:thread_id>/rewind/", ThreadRewindView.as_view(), name="thread-rewind"),
    path("threads/<str:thread_id>/checkout/", ThreadCheckoutView.as_view(), name="thread-checkout"),
    path("threads/<str:thread_id>/fork/", ThreadForkView.as_view(), name="thread-fork"),
    path("entries/<str:entry_id>/", EntryDetailView.as_view(), name="entry-detail"),
    path("entries/<str:entry_id>/redact/", EntryRedactView.as_view(), name="entry-redact"),
    path("threads/<str:thread_id>/extract/", ThreadExtractView.as_view(), name="thread-extract"),
    path("extractions/<str:run_id>/", ExtractionRunView.as_view(), name="extraction-run"),
    path("threads/<str:thread_id>/compact/", ThreadCompactView.as_view(), name="thread-compact"),
    path(
        "threads/<str:thread_id>/compacted-history/",
        ThreadCompactedHistoryView.as_view(),
        name="thread-compacted-history",
    ),
    path("compactions/<str:run_id>/", CompactionRunView.as_view(), name="compaction-run"),
    path("items/", ItemListView.as_view(), name="item-list"),
    path("items/<str:item_id>/", ItemDetailView.as_view(), name="item-detail"),
    path("items/<str:item_id>/history/", ItemHistoryView.as_view(), name="item-history"),
    path("items/<str:item_id>/activate/", ItemActivateView.as_view(), name="item-activate"),
    path("items/<str:item_id>/reject/", ItemRejectView.as_view(), name="item-reject"),
    path("items/<str:item_id>/let-go/", ItemLetGoView.as_view(), name="item-let-go"),
    path("graph/nodes/", GraphNodeListView.as_view(), name="graph-node-list"),
    # Before the node's own routes, which would read "merge" as a node id.
    path("graph/nodes/merge/", GraphMergeView.as_view(), name="graph-node-merge"),
    path("graph/nodes/<str:node_id>/", GraphNodeDetailView.as_view(), name="graph-node-detail"),
    path(
        "graph/nodes/<str:node_id>/neighbourhood/",
        GraphNeighbourhoodView.as_view(),
        name="graph-node-neighbourhood",
    ),
    path(
        "graph/nodes/<str:node_id>/activate/",
        GraphNodeActivateView.as_view(),
        name="graph-node-activate",
    ),
    path(
        "graph/nodes/<str:node_id>/reject/", GraphNodeRejectView.as_view(), name="graph-node-reject"
    ),
    path("graph/edges/", GraphEdgeListView.as_view(), name="graph-edge-list"),
    path("graph/edges/<str:edge_id>/", GraphEdgeDetailView.as_view(), name="graph-edge-detail"),
    path(
        "graph/edges/<str:edge_id>/activate/",
        GraphEdgeActivateView.as_view(),
        name="graph-edge-activate",
    ),
    path(
        "graph/edges/<str:edge_id>/reject/", GraphEdgeRejectView.as_view(), name="graph-edge-reject"
    ),
    path("graph/path/", GraphPathView.as_view(), name="graph-path"),
    path("search/", SearchView.as_view(), name="search"),
    path("context/", ContextView.as_view(), name="context"),
    path("recall/", RecallView.as_view(), name="recall"),
    path("brief/", BriefView.as_view(), name="brief"),
    path("files/", FileListView.as_view(), name="file-list"),
    path("files/content/", FileContentView.as_view(), name="file-content"),
    path("files/history/", FileHistoryView.as_view(), name="file-history"),
    path("files/command/", FileCommandView.as_view(), name="file-command"),
    path("observations/", ObservationListView.as_view(), name="observation-list"),
    path("sessions/", SessionListView.as_view(), name="session-list"),
    path("sessions/<str:session_id>/", SessionDetailView.as_view(), name="session-detail"),
    # <path:>: a user id is any text, a "/" included (sent as %2F).
    path("users/<path:user_id>/export/", UserExportView.as_view(), name="user-export"),
    path("users/<path:user_id>/forget/", UserForgetView.as_view(), name="user-forget"),
    path("forgets/<str:run_id>/", ForgetRunView.as_view(), name="forget-run"),
    path("observations/refresh/", ObservationsRefreshView.as_view(), name="observations-refresh"),
    path("consolidation/", ConsolidationView.as_view(), name="consolidation"),
    path("upkeep-runs/<str:run_id>/", UpkeepRunView.as_view(), name="upkeep-run"),
    path("playbook/", PlaybookView.as_view(), name="playbook"),
    path(
        "playbook/drafts/<str:draft_id>/promote/",
        PlaybookPromoteView.as_view(),
        name="playbook-draft-promote",
    ),
    path(
        "playbook/drafts/<str:draft_id>/discard/",
        PlaybookDiscardView.as_view(),
        name="playbook-draft-discard",
    ),
]
