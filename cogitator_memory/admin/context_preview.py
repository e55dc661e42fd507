"""A thread's context previewed in the admin: what a model would get for the next turn.

The reviewer fills a small form (the input, the budget, the strategy, a system prompt,
facts or not, graph context or not and how far it reaches, a leaf, a moment) and the page
shows what ``ContextBuilder.build`` returns for the thread, as the staff user's grants see
it: the messages in prompt order with their cache breakpoints, the memory context block,
the tokens per partition, what was recalled, and every block left out and why, each source
linked to its admin page where it is an entry or a memory item. The REST API's
``POST context/`` builds the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib.admin.utils import quote
from django.db import transaction
from django.db.models import Model
from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from cogitator_memory.admin.entry_tree import content_preview
from cogitator_memory.context.builder import ContextBuilder
from cogitator_memory.context.config import (
    MAX_REQUEST_BUDGET,
    MAX_REQUEST_INPUT_CHARS,
    MAX_REQUEST_PROMPT_CHARS,
    STRATEGIES,
    ContextBuilderConfig,
    ContextBuilderDeps,
    default_reserve,
    default_strategy,
)
from cogitator_memory.context.graph_source import MemoryGraphContext
from cogitator_memory.context.history import CACHE_BREAKPOINT
from cogitator_memory.context.partitions import PARTITION_NAMES
from cogitator_memory.exceptions import EntryNotInThread, InvalidInput
from cogitator_memory.graph.context_options import MAX_CONTEXT_NODES, GraphContextOptions
from cogitator_memory.graph.inputs import MAX_DEPTH
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.threads.models import Entry
from cogitator_memory.upkeep.observations import MemoryObservations

if TYPE_CHECKING:
    from django.contrib.admin import AdminSite

    from cogitator_memory.context.result import BuiltContext
    from cogitator_memory.grants import Grants
    from cogitator_memory.threads.models import Thread

__all__ = ["ContextPreviewForm", "build_preview", "preview_context"]

MAX_BUDGET = MAX_REQUEST_BUDGET
MAX_PROMPT_CHARS = MAX_REQUEST_PROMPT_CHARS
MAX_INPUT_CHARS = MAX_REQUEST_INPUT_CHARS
# Dropped blocks listed on the page: a long thread drops thousands of history entries, and
# the first ones say why as well as all of them; the page says how many there were.
MAX_DROPPED_SHOWN = 500
# The builder names a bad graph option by its path in the config; the form by its field.
GRAPH_OPTION_FIELDS = {
    "graph_context_options.depth": "graph_depth",
    "graph_context_options.max_nodes": "graph_max_nodes",
    "graph_context_options.relations": "graph_relations",
}


class ContextPreviewForm(forms.Form):
    """What to build: the fields of ``ContextBuilder.build`` a reviewer chooses."""

    current_input = forms.CharField(
        label=_("Input"),
        required=False,
        max_length=MAX_INPUT_CHARS,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text=_("The user's turn: what relevant and hybrid search for; counted, not sent."),
    )
    max_tokens = forms.IntegerField(
        label=_("Budget (tokens)"),
        min_value=1,
        max_value=MAX_BUDGET,
        initial=4000,
        help_text=_("10 % of it (at least 100 tokens) is kept free for the answer."),
    )
    strategy = forms.ChoiceField(
        label=_("Strategy"),
        choices=[(name, name) for name in STRATEGIES],
        help_text=_(
            "relevant needs an embedding service; hybrid keeps the newest history "
            "and recalls older turns and items."
        ),
    )
    system_prompt = forms.CharField(
        label=_("System prompt"),
        required=False,
        max_length=MAX_PROMPT_CHARS,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text=_("Always kept, whatever its size (a warning when over budget)."),
    )
    include_facts = forms.BooleanField(
        label=_("Include facts"),
        required=False,
        initial=True,
        help_text=_("Memory items that hold, as known facts."),
    )
    include_graph_context = forms.BooleanField(
        label=_("Include graph context"),
        required=False,
        initial=False,
        help_text=_("Active graph nodes the input names and those near them, with their edges."),
    )
    graph_depth = forms.IntegerField(
        label=_("Graph depth"),
        required=False,
        min_value=0,
        max_value=MAX_DEPTH,
        initial=GraphContextOptions.depth,
        help_text=_("Edges from a node the input names; 2 when empty."),
    )
    graph_max_nodes = forms.IntegerField(
        label=_("Graph nodes"),
        required=False,
        min_value=1,
        max_value=MAX_CONTEXT_NODES,
        initial=GraphContextOptions.max_nodes,
        help_text=_("The most nodes sent; 20 when empty."),
    )
    graph_relations = forms.CharField(
        label=_("Graph relations"),
        required=False,
        max_length=2000,
        help_text=_("The relations followed, separated by commas; every relation when empty."),
    )
    leaf_id = forms.CharField(
        label=_("Leaf entry"),
        required=False,
        max_length=255,
        help_text=_("Build from the branch ending at this entry; the active one when empty."),
    )
    as_of = forms.DateTimeField(
        label=_("As of"),
        required=False,
        widget=forms.DateTimeInput(
            attrs={"type": "datetime-local", "step": 1}, format="%Y-%m-%dT%H:%M:%S"
        ),
        help_text=_("Read as of this moment, in the site's time zone; now when empty."),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # As the API chooses when no strategy is given.
        self.fields["strategy"].initial = default_strategy()

    def graph_context_options(self) -> dict[str, Any]:
        """The graph context options of the valid form."""
        data = self.cleaned_data
        relations = [word.strip() for word in data["graph_relations"].split(",") if word.strip()]
        defaults = GraphContextOptions()
        depth, max_nodes = data["graph_depth"], data["graph_max_nodes"]
        return {
            "depth": defaults.depth if depth is None else depth,
            "max_nodes": defaults.max_nodes if max_nodes is None else max_nodes,
            "relations": relations or None,
        }

    def add_build_errors(self, error: InvalidInput | EntryNotInThread) -> None:
        """The builder's refusal, each message on the field it names (on the form when
        the field is not one of the form's)."""
        for field, messages in error.errors.items():
            field = GRAPH_OPTION_FIELDS.get(field, field)
            for message in messages:
                self.add_error(field if field in self.fields else None, message)


@dataclass
class PreviewLink:
    """A source id and the admin page it links to, when it has one."""

    id: str
    url: str | None


def build_preview(
    form: ContextPreviewForm, thread: Thread, *, grants: Grants
) -> BuiltContext | None:
    """The context of ``thread`` the valid ``form`` asks for, as ``grants`` reach it;
    None, with the builder's refusal added to the form, when the input cannot work.

    A leaf of another thread is refused on the form too. Raises ``ThreadNotFound`` when
    the thread went out of the grants' reach meanwhile.
    """
    data = form.cleaned_data
    try:
        # A preview is not a turn: no model gets what it sends, so the items it sent are
        # not counted as retrieved. The builder counts them after commit; rolling the
        # preview's transaction back discards that, and anything else it would write.
        with transaction.atomic():
            config = ContextBuilderConfig(
                max_tokens=data["max_tokens"],
                strategy=data["strategy"],
                include_facts=data["include_facts"],
                include_graph_context=data["include_graph_context"],
                graph_context_options=form.graph_context_options(),
            )
            deps = ContextBuilderDeps(observations=MemoryObservations(), graph=MemoryGraphContext())
            built = ContextBuilder(config, deps).build(
                thread_id=thread.pk,
                agent_id=thread.agent_id,
                user_id=thread.user_id,
                system_prompt=data["system_prompt"] or None,
                current_input=data["current_input"] or None,
                leaf_id=data["leaf_id"] or None,
                as_of=data["as_of"],
                grants=grants,
            )
            transaction.set_rollback(True)
    except (InvalidInput, EntryNotInThread) as exc:
        form.add_build_errors(exc)
        return None
    return built


def preview_context(
    request: HttpRequest, built: BuiltContext, *, admin_site: AdminSite, budget: int
) -> dict[str, Any]:
    """The template's view of ``built``: messages, partitions, recalled and dropped rows,
    sources linked to the pages the staff user may open."""
    dropped_blocks = built.dropped.blocks[:MAX_DROPPED_SHOWN]
    recalled = built.recalled
    recalled_entries = recalled.entries if recalled is not None else []
    recalled_items = recalled.items if recalled is not None else []
    wanted = {block.source_id for block in dropped_blocks if block.source_id}
    wanted |= {row.pk for row in [*recalled_entries, *recalled_items, *built.facts]}
    links = _source_links(request, admin_site, wanted)

    def link(source_id: str | None) -> PreviewLink | None:
        return None if source_id is None else PreviewLink(source_id, links.get(source_id))

    return {
        "built": built,
        "reserve_tokens": default_reserve(budget),
        "messages_shown": [_message_row(number, m) for number, m in enumerate(built.messages, 1)],
        "partition_rows": [
            (name, built.partitions.get(name, 0))
            for name in (*PARTITION_NAMES, *sorted(set(built.partitions) - set(PARTITION_NAMES)))
        ],
        "fact_rows": [(link(item.pk), item) for item in built.facts],
        "recalled_entry_rows": [
            (link(entry.pk), entry, content_preview(entry.content)) for entry in recalled_entries
        ],
        "recalled_item_rows": [(link(item.pk), item) for item in recalled_items],
        "dropped_rows": [(block, link(block.source_id)) for block in dropped_blocks],
        "dropped_hidden": len(built.dropped.blocks) - len(dropped_blocks),
    }


def _message_row(number: int, message: dict[str, Any]) -> dict[str, Any]:
    """A message as shown: its text as sent (content parts as JSON), whether a cache
    breakpoint follows it, and its other keys (name, tool calls) as JSON."""
    content = message.get("content")
    extra = {
        key: value
        for key, value in message.items()
        if key not in {"role", "content", CACHE_BREAKPOINT}
    }
    return {
        "number": number,
        "role": message.get("role", ""),
        "content": content if isinstance(content, str) else _as_json(content),
        "cache_breakpoint": bool(message.get(CACHE_BREAKPOINT)),
        "extra": _as_json(extra) if extra else "",
    }


def _as_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=_json_default)


def _json_default(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _source_links(
    request: HttpRequest, admin_site: AdminSite, source_ids: set[str]
) -> dict[str, str]:
    """The admin page of each id that is an entry or a memory item the staff user may
    view, found through each model admin's own (grant-scoped) queryset."""
    links: dict[str, str] = {}
    for model in (MemoryItem, Entry):
        remaining = source_ids - links.keys()
        if not remaining or not admin_site.is_registered(model):
            continue
        model_admin = admin_site.get_model_admin(model)
        if not model_admin.has_view_permission(request):
            continue
        found = model_admin.get_queryset(request).filter(pk__in=remaining)
        for pk in found.values_list("pk", flat=True):
            links[pk] = _change_url(admin_site, model, pk)
    return links


def _change_url(admin_site: AdminSite, model: type[Model], pk: str) -> str:
    opts = model._meta
    return reverse(
        f"admin:{opts.app_label}_{opts.model_name}_change",
        args=[quote(pk)],
        current_app=admin_site.name,
    )
