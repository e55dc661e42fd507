"""The pre-turn brief of a turn: what is asked, and the cards."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers.context import (
    MAX_INPUT_CHARS,
    BriefCardSerializer,
    RecallRequestSerializer,
    time_zone_field,
)
from cogitator_memory.api.serializers.fields import (
    NOT_BLANK_PATTERN,
    StrictCharField,
    StrictIntegerField,
)
from cogitator_memory.upkeep.brief import DEFAULT_BRIEF_CARDS, MAX_BRIEF_CARDS, BriefCard

__all__ = ["BriefRequestSerializer", "BriefSerializer"]


class BriefRequestSerializer(RecallRequestSerializer):
    """A recall request's turn and scope, the cards wanted instead of the hits."""

    input = StrictCharField(
        max_length=MAX_INPUT_CHARS,
        pattern=NOT_BLANK_PATTERN,
        pattern_message="This field may not be blank.",
        help_text="The turn to brief.",
    )
    limit = None  # type: ignore[assignment]  # the brief asks for cards, not hits
    max_cards = StrictIntegerField(
        min_value=1,
        max_value=MAX_BRIEF_CARDS,
        required=False,
        default=DEFAULT_BRIEF_CARDS,
        help_text=f"At most this many cards; {DEFAULT_BRIEF_CARDS} by default.",
    )
    time_zone = time_zone_field("The IANA zone of the turn and of the sources' dates.")


class BriefSerializer(serializers.Serializer):
    cards = BriefCardSerializer(
        many=True, help_text="Best first; each quote holds in the source it names."
    )
    block = serializers.CharField(
        allow_blank=True,
        help_text="The text a turn's memory context gets for the cards, marked as a hint; "
        "empty for no cards.",
    )

    def to_representation(self, instance: tuple[list[BriefCard], str]) -> dict[str, Any]:
        cards, block = instance
        return {"cards": [card.as_dict() for card in cards], "block": block}
