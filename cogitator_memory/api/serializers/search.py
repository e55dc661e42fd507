from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers.fields import (
    NOT_BLANK_PATTERN,
    QueryIntegerField,
    StrictCharField,
    StrictChoiceField,
)
from cogitator_memory.embeddings.types import SearchHit
from cogitator_memory.search.hybrid import CHANNELS

HYBRID = "hybrid"
SEARCH_MODES = [
    (HYBRID, "BM25 and vectors, fused by reciprocal rank"),
    ("keyword", "BM25 over the content"),
    ("vector", "the query's embedding against the stored vectors"),
]
MAX_QUERY_LENGTH = 2000
MAX_LIMIT = 100


class SearchQuerySerializer(serializers.Serializer):
    q = StrictCharField(
        max_length=MAX_QUERY_LENGTH,
        pattern=NOT_BLANK_PATTERN,
        pattern_message="This field may not be blank.",
        help_text="What to look for.",
    )
    mode = StrictChoiceField(choices=SEARCH_MODES, default=HYBRID, required=False)
    limit = QueryIntegerField(
        min_value=1, max_value=MAX_LIMIT, default=10, required=False, help_text="Hits returned."
    )
    agent_id = StrictCharField(
        max_length=255,
        required=False,
        help_text="Only this agent's embeddings (and shared ones, where the server allows).",
    )
    thread_id = StrictCharField(
        max_length=255,
        required=False,
        help_text="Only this thread's embeddings and those of no thread.",
    )
    user_id = StrictCharField(
        max_length=255,
        required=False,
        help_text="Only this user's embeddings and those of no user.",
    )
    source_type = StrictCharField(
        max_length=32, required=False, help_text="Only embeddings of this source type."
    )
    index = StrictCharField(
        max_length=64, required=False, help_text="Only embeddings of this index (messages, ...)."
    )


class SearchHitSerializer(serializers.Serializer):
    """An embedding found, and its score in the mode searched: BM25 (keyword), cosine
    similarity (vector) or the fused reciprocal-rank score (hybrid)."""

    id = serializers.CharField()
    source_type = serializers.CharField()
    source_id = serializers.CharField()
    content = serializers.CharField(allow_blank=True)
    metadata = serializers.DictField()
    score = serializers.FloatField()

    def to_representation(self, instance: SearchHit) -> dict[str, Any]:
        embedding = instance.embedding
        return {
            "id": embedding.id,
            "source_type": embedding.source_type,
            "source_id": embedding.source_id,
            "content": embedding.content,
            "metadata": embedding.metadata,
            "score": instance.score,
        }


class SearchResultsSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=SEARCH_MODES, help_text="The mode searched.")
    channels = serializers.ListField(
        child=serializers.ChoiceField(choices=list(CHANNELS)),
        help_text="The channels that ran: hybrid without an embedding service (or with "
        "one failing) is keyword alone.",
    )
    results = SearchHitSerializer(many=True)
