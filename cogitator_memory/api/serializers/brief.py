"""The pre-turn brief of a turn: what is asked, and the cards."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers.context import (
    MAX_INPUT_CHARS,
    BriefCardSerializer,
    time_zone_field,
)
from cogitator_memory.api.serializers.fields import (
    NOT_BLANK_PATTERN,
    StrictCharField,
    StrictDateTimeField,
    StrictIntegerField,
)
from cogitator_memory.upkeep.brief import DEFAULT_BRIEF_CARDS, MAX_BRIEF_CARDS, BriefCard

__all__ = ["BriefRequestSerializer", "BriefSerializer"]


class BriefRequestSerializer(serializers.Serializer):
    input = StrictCharField(
        max_length=MAX_INPUT_CHARS,
        pattern=NOT_BLANK_PATTERN,
        pattern_message="This field may not be blank.",
        help_text="The turn to brief.",
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
        help_text="Also recall the older turns of this thread's active branch, and its "
        "items; a thread of agent_id (and user_id), else not found.",
    )
    max_cards = StrictIntegerField(
        min_value=1,
        max_value=MAX_BRIEF_CARDS,
        required=False,
        default=DEFAULT_BRIEF_CARDS,
        help_text=f"At most this many cards; {DEFAULT_BRIEF_CARDS} by default.",
    )
    as_of = StrictDateTimeField(required=False, help_text="When the turn is read (now by default).")
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
