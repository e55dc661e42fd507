from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    """The body of every failed request."""

    code = serializers.CharField(help_text="A stable, machine-readable error code.")
    message = serializers.CharField(help_text="What went wrong, for people.")
    errors = serializers.DictField(  # type: ignore[assignment]  # a field, not the property
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Messages per field (dotted for nested fields); empty if no field is to blame.",
    )
