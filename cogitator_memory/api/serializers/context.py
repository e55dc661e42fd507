"""A context built for a thread, and the hits of recall."""

from __future__ import annotations

from typing import Any, get_args
from zoneinfo import available_timezones

from rest_framework import serializers

from cogitator_memory.api.serializers.entries import EntrySerializer
from cogitator_memory.api.serializers.fields import (
    NOT_BLANK_PATTERN,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictDateTimeField,
    StrictFloatField,
    StrictIntegerField,
)
from cogitator_memory.api.serializers.items import ItemSerializer
from cogitator_memory.api.serializers.search import SearchHitSerializer
from cogitator_memory.api.serializers.threads import entry_id_field
from cogitator_memory.context.config import (
    MAX_REQUEST_BUDGET,
    MAX_REQUEST_INPUT_CHARS,
    MAX_REQUEST_PROMPT_CHARS,
    STRATEGIES,
)
from cogitator_memory.context.partitions import PARTITION_NAMES
from cogitator_memory.context.result import BuiltContext, ErrorSource
from cogitator_memory.graph.context_options import MAX_CONTEXT_NODES
from cogitator_memory.graph.inputs import MAX_DEPTH
from cogitator_memory.graph.models import MAX_RELATION
from cogitator_memory.recall.types import QUERY_KINDS, RecallHit, Retrieval
from cogitator_memory.upkeep.brief import CARD_KINDS, MAX_BRIEF_CARDS

MAX_BUDGET = MAX_REQUEST_BUDGET
MAX_PROMPT_CHARS = MAX_REQUEST_PROMPT_CHARS
MAX_INPUT_CHARS = MAX_REQUEST_INPUT_CHARS
MAX_PINNED = 50
MAX_RECALL_HITS = 100
# Dropped history entries named in the answer: the newest ones; ``dropped.entry_count``
# says how many there were.
MAX_DROPPED_IDS = 1000

_DATETIME = serializers.DateTimeField()


def _moment(value: Any) -> Any:
    return None if value is None else _DATETIME.to_representation(value)


def time_zone_field(help_text: str) -> StrictChoiceField:
    return StrictChoiceField(
        choices=sorted(available_timezones() - {"localtime"}),
        required=False,
        default="UTC",
        help_text=f"{help_text} UTC by default.",
    )


def _text(help_text: str, *, max_length: int = MAX_PROMPT_CHARS) -> StrictCharField:
    return StrictCharField(max_length=max_length, required=False, help_text=help_text)


class PartitionBudgetSerializer(serializers.Serializer):
    share = StrictFloatField(
        min_value=0,
        max_value=1,
        required=False,
        allow_null=True,
        help_text="The part of what the required partitions leave that it may take.",
    )
    required = StrictBooleanField(  # type: ignore[assignment]  # a field, not the attribute
        required=False, default=False, help_text="Fitted first."
    )


class PartitionsSerializer(serializers.Serializer):
    """Budgets merged over the defaults, one per partition named."""

    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            name: PartitionBudgetSerializer(required=False, help_text=f"The {name} partition.")
            for name in PARTITION_NAMES
        }


class GraphContextOptionsSerializer(serializers.Serializer):
    """How far graph context reaches from the nodes the input names."""

    depth = StrictIntegerField(
        min_value=0,
        max_value=MAX_DEPTH,
        required=False,
        default=2,
        help_text="Edges from a node the input names (0: those nodes alone).",
    )
    max_nodes = StrictIntegerField(
        min_value=1,
        max_value=MAX_CONTEXT_NODES,
        required=False,
        default=20,
        help_text="The most nodes sent: those the input names first, then the nearest.",
    )
    relations = serializers.ListField(
        child=StrictCharField(max_length=MAX_RELATION, pattern=NOT_BLANK_PATTERN),
        min_length=1,
        max_length=100,
        required=False,
        allow_null=True,
        default=None,
        help_text="The relations followed; every relation when absent.",
    )


class ContextRequestSerializer(serializers.Serializer):
    thread_id = StrictCharField(
        max_length=255, pattern=NOT_BLANK_PATTERN, help_text="The thread to build from."
    )
    strategy = StrictChoiceField(
        choices=list(STRATEGIES),
        required=False,
        help_text="recent, relevant or hybrid; hybrid where an embedding service is "
        "configured, else recent, when absent. Relevant without an embedding service is "
        "built as recent, with a relevance entry in `errors`.",
    )
    max_tokens = StrictIntegerField(min_value=1, max_value=MAX_BUDGET, help_text="The budget.")
    reserve_tokens = StrictIntegerField(
        min_value=0,
        max_value=MAX_BUDGET,
        required=False,
        help_text="Kept free for the answer; 10 % of the budget (at least 100) when absent.",
    )
    system_prompt = _text("Always kept, whatever its size (a warning when over budget).")
    pinned = serializers.ListField(
        child=StrictCharField(max_length=MAX_PROMPT_CHARS),
        max_length=MAX_PINNED,
        required=False,
        default=list,
        help_text="Texts sent in the system message after the prompt.",
    )
    index = _text("An index text, sent in the system message.")
    brief = _text("The turn's brief, sent in the memory context.")
    current_input = _text(
        "The user's turn: what relevant and hybrid search for; counted, not sent.",
        max_length=MAX_INPUT_CHARS,
    )
    leaf_id = entry_id_field(
        required=False, help_text="Build from the branch ending here; the active one by default."
    )
    as_of = StrictDateTimeField(
        required=False, help_text="When the turn is read (now by default): items as of then."
    )
    time_zone = time_zone_field("The IANA zone of dates and of the time the input names.")
    include_facts = StrictBooleanField(
        required=False, default=True, help_text="Memory items that hold, as Known facts."
    )
    include_semantic_context = StrictBooleanField(
        required=False, default=False, help_text="Search results of the input."
    )
    include_graph_context = StrictBooleanField(
        required=False,
        default=False,
        help_text="The active knowledge graph nodes the input names and those near them, "
        "with the edges among them, as Graph context.",
    )
    graph_context_options = GraphContextOptionsSerializer(
        required=False, default=dict, help_text="How far graph context reaches."
    )
    brief_cards = StrictIntegerField(
        min_value=0,
        max_value=MAX_BRIEF_CARDS,
        required=False,
        default=0,
        help_text="Cards of a pre-turn brief drawn by the configured model from what a "
        "hybrid build recalls (one model call, none when it recalls nothing), sent in the "
        "memory context after `brief`; 0 (the default) for none. A brief that fails is "
        "left out and listed in `errors`.",
    )
    partitions = PartitionsSerializer(
        required=False, default=dict, help_text="Shares merged over the defaults."
    )


class ContextErrorSerializer(serializers.Serializer):
    source = serializers.ChoiceField(  # type: ignore[assignment]  # a field, not the attribute
        choices=list(get_args(ErrorSource)),
        help_text="The part left out.",
    )
    message = serializers.CharField()


class DroppedBlockSerializer(serializers.Serializer):
    partition = serializers.CharField()
    reason = serializers.ChoiceField(choices=["budget", "duplicate", "not-selected", "oversized"])
    tokens = serializers.IntegerField(min_value=0)
    source_id = serializers.CharField(allow_null=True)


class DroppedSerializer(serializers.Serializer):
    entry_count = serializers.IntegerField(min_value=0, help_text="History entries left out.")
    entry_ids = serializers.ListField(
        child=serializers.CharField(),
        help_text=f"The newest {MAX_DROPPED_IDS} of them at most, in conversation order.",
    )
    fact_ids = serializers.ListField(child=serializers.CharField())
    semantic_result_ids = serializers.ListField(child=serializers.CharField())
    graph_node_ids = serializers.ListField(
        child=serializers.CharField(), help_text="Graph nodes that did not fit."
    )
    token_count = serializers.IntegerField(min_value=0)
    blocks = DroppedBlockSerializer(many=True)


class RecalledSerializer(serializers.Serializer):
    entries = EntrySerializer(many=True)
    items = ItemSerializer(many=True)


class ContextMetadataSerializer(serializers.Serializer):
    original_message_count = serializers.IntegerField(min_value=0)
    included_message_count = serializers.IntegerField(min_value=0)
    facts_included = serializers.IntegerField(min_value=0)
    semantic_results_included = serializers.IntegerField(min_value=0)
    graph_nodes_included = serializers.IntegerField(min_value=0)
    graph_edges_included = serializers.IntegerField(min_value=0)


class BriefCardSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=list(CARD_KINDS))
    text = serializers.CharField(help_text="What to keep in mind for the turn.")
    quote = serializers.CharField(help_text="The words of the source it stands on.")
    source = serializers.CharField(help_text="turn:<entry id> or item:<item id>.")  # type: ignore[assignment]  # a field, not the attribute


class BuiltContextSerializer(serializers.Serializer):
    """What a model would get: the messages in prompt-cache order, the memory context
    sent with the input, tokens per partition, and what was left out and why."""

    messages = serializers.ListField(
        child=serializers.DictField(),
        help_text="One system message, the summary and history (cache_breakpoint on the "
        "last message and on the last message of the turn before), then one user message "
        "with the <memory_context> block.",
    )
    memory_context = serializers.CharField(allow_null=True)
    partitions = serializers.DictField(child=serializers.IntegerField(min_value=0))
    facts = ItemSerializer(many=True)
    semantic_results = SearchHitSerializer(many=True)
    recalled = RecalledSerializer(allow_null=True)
    token_count = serializers.IntegerField(min_value=0, help_text="Without the input.")
    truncated = serializers.BooleanField(help_text="History entries were left out.")
    dropped = DroppedSerializer()
    errors = ContextErrorSerializer(many=True)  # type: ignore[assignment]  # a field
    warnings = serializers.ListField(child=serializers.CharField())
    metadata = ContextMetadataSerializer()
    brief_cards = BriefCardSerializer(many=True, help_text="The cards of the brief sent.")

    def to_representation(self, instance: BuiltContext) -> dict[str, Any]:
        dropped = instance.dropped
        recalled = instance.recalled
        return {
            "messages": instance.messages,
            "memory_context": instance.memory_context,
            "partitions": dict(instance.partitions),
            "facts": ItemSerializer(instance.facts, many=True).data,
            "semantic_results": SearchHitSerializer(instance.semantic_results, many=True).data,
            "recalled": None
            if recalled is None
            else {
                "entries": EntrySerializer(recalled.entries, many=True).data,
                "items": ItemSerializer(recalled.items, many=True).data,
            },
            "token_count": instance.token_count,
            "truncated": instance.truncated,
            "dropped": {
                "entry_count": len(dropped.entries),
                "entry_ids": [entry.pk for entry in dropped.entries[-MAX_DROPPED_IDS:]],
                "fact_ids": [item.pk for item in dropped.facts],
                "semantic_result_ids": [hit.embedding.id for hit in dropped.semantic_results],
                "graph_node_ids": [node.pk for node in dropped.graph_nodes],
                "token_count": dropped.token_count,
                "blocks": [block.as_dict() for block in dropped.blocks],
            },
            "errors": [error.as_dict() for error in instance.errors],
            "warnings": list(instance.warnings),
            "metadata": {
                "original_message_count": instance.metadata.original_message_count,
                "included_message_count": instance.metadata.included_message_count,
                "facts_included": instance.metadata.facts_included,
                "semantic_results_included": instance.metadata.semantic_results_included,
                "graph_nodes_included": instance.metadata.graph_nodes_included,
                "graph_edges_included": instance.metadata.graph_edges_included,
            },
            "brief_cards": [card.as_dict() for card in instance.brief_cards],
        }


class RecallRequestSerializer(serializers.Serializer):
    input = StrictCharField(
        max_length=MAX_INPUT_CHARS,
        pattern=NOT_BLANK_PATTERN,
        pattern_message="This field may not be blank.",
        help_text="The turn to recall for.",
    )
    agent_id = StrictCharField(
        max_length=255, pattern=NOT_BLANK_PATTERN, help_text="Whose memory is searched."
    )
    user_id = StrictCharField(
        max_length=255,
        pattern=NOT_BLANK_PATTERN,
        required=False,
        help_text="The user's items and those the agent shares with every user; with "
        "thread_id, the thread's user (when given, it must be).",
    )
    thread_id = StrictCharField(
        max_length=255,
        pattern=NOT_BLANK_PATTERN,
        required=False,
        help_text="Also search the older turns of this thread's active branch, and its "
        "items; a thread of agent_id (and user_id), else not found.",
    )
    as_of = StrictDateTimeField(required=False, help_text="When the turn is read (now by default).")
    time_zone = time_zone_field("The IANA zone of the turn.")
    limit = StrictIntegerField(
        min_value=1, max_value=MAX_RECALL_HITS, required=False, default=20, help_text="Hits."
    )


class ResolvedTimeSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField(help_text="Excluded.")
    precision = serializers.CharField()


class QueryAnalysisSerializer(serializers.Serializer):
    search = serializers.BooleanField(help_text="False for small talk, which is not searched.")
    kind = serializers.ChoiceField(choices=list(QUERY_KINDS))
    time = ResolvedTimeSerializer(allow_null=True, help_text="The time the turn names.")
    terms = serializers.ListField(child=serializers.CharField())
    weights = serializers.DictField(child=serializers.FloatField())


class ChannelScoreSerializer(serializers.Serializer):
    rank = serializers.IntegerField(min_value=1)
    score = serializers.FloatField()


class RecallHitSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["entry", "item"])
    id = serializers.CharField()
    score = serializers.FloatField()
    channels = serializers.DictField(
        child=ChannelScoreSerializer(), help_text="The channels that found it."
    )
    entry = EntrySerializer(required=False, help_text="For a turn.")
    item = ItemSerializer(required=False, help_text="For a memory item.")

    def to_representation(self, instance: RecallHit) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": instance.kind,
            "id": instance.id,
            "score": float(instance.score),
            "channels": {
                name: {"rank": channel.rank, "score": float(channel.score)}
                for name, channel in instance.channels.items()
            },
        }
        if instance.entry is not None:
            data["entry"] = EntrySerializer(instance.entry).data
        if instance.item is not None:
            data["item"] = ItemSerializer(instance.item).data
        return data


class RecallErrorSerializer(serializers.Serializer):
    source = serializers.CharField()  # type: ignore[assignment]  # a field, not the attribute
    message = serializers.CharField()


class RetrievalSerializer(serializers.Serializer):
    analysis = QueryAnalysisSerializer()
    hits = RecallHitSerializer(many=True, help_text="Best first, turns and items in one list.")
    errors = RecallErrorSerializer(many=True)  # type: ignore[assignment]  # a field

    def to_representation(self, instance: Retrieval) -> dict[str, Any]:
        analysis = instance.analysis
        time = analysis.time
        return {
            "analysis": {
                "search": analysis.search,
                "kind": analysis.kind,
                "time": None
                if time is None
                else {
                    "start": _moment(time.start),
                    "end": _moment(time.end),
                    "precision": str(time.precision),
                },
                "terms": list(analysis.terms),
                "weights": {name: float(weight) for name, weight in analysis.weights.items()},
            },
            "hits": RecallHitSerializer(instance.hits, many=True).data,
            "errors": [
                {"source": error.source, "message": error.message} for error in instance.errors
            ],
        }
