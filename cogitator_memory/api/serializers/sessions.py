"""Channel sessions as the API reads and writes them."""

from __future__ import annotations

from rest_framework import serializers

from cogitator_memory.api.serializers import enums
from cogitator_memory.api.serializers.fields import (
    NOT_BLANK_PATTERN,
    PageLimitField,
    StrictCharField,
    StrictChoiceField,
)
from cogitator_memory.sessions.models import KEY_MAX_LENGTH, ChannelSession, SessionStatus
from cogitator_memory.sessions.services import SESSION_CURSOR_PATTERN

# Session ids are a prefix and 32 hex digits; any longer one is missing.
SESSION_ID_MAX_LENGTH = 64
KEY_MESSAGE = f"A text of 1 to {KEY_MAX_LENGTH} characters, not only spaces."


def key_field(help_text: str, *, required: bool = True) -> StrictCharField:
    return StrictCharField(
        max_length=KEY_MAX_LENGTH,
        required=required,
        pattern=NOT_BLANK_PATTERN,
        pattern_message=KEY_MESSAGE,
        help_text=help_text,
    )


class SessionSerializer(serializers.ModelSerializer):
    thread_id = serializers.CharField(read_only=True)
    status = enums.named_enum(enums.SESSION_STATUS, choices=SessionStatus.choices, read_only=True)

    class Meta:
        model = ChannelSession
        fields = [
            "id",
            "user_id",
            "channel_type",
            "channel_id",
            "agent_id",
            "thread_id",
            "status",
            "last_active_at",
            "created_at",
        ]
        read_only_fields = fields


class SessionCreateSerializer(serializers.Serializer):
    user_id = key_field("The user of the conversation.")
    channel_type = key_field("The kind of channel: telegram, slack, web, ...")
    channel_id = key_field("The conversation's id on its channel.")
    agent_id = key_field("The agent the user talks to.")


class SessionQuerySerializer(serializers.Serializer):
    user_id = key_field("Only this user's sessions.", required=False)
    agent_id = key_field("Only this agent's sessions.", required=False)
    status = StrictChoiceField(
        choices=SessionStatus.choices, required=False, help_text="Only sessions of this status."
    )
    limit = PageLimitField()
    cursor = StrictCharField(
        required=False,
        pattern=SESSION_CURSOR_PATTERN.pattern,
        pattern_message="This cursor was not made by the session list.",
        help_text="next_cursor of the previous page: `<microseconds since "
        "1970-01-01T00:00:00Z>~<session id>` (last_active_at and id of the last session seen).",
    )


class SessionPageSerializer(serializers.Serializer):
    results = SessionSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)
    next = serializers.URLField(allow_null=True)
