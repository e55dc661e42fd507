"""Choice fields whose enum the OpenAPI schema names after what it is, not after the field.

drf-spectacular names an enum after its field (``status`` gives ``StatusEnum``); when one
field name carries several choice sets across serializers (an item's ``status`` and a run's,
an item's ``kind`` and a recall hit's), it warns and names them by a hash, unless the
project lists each set in ``SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]``. Naming the enum
on the field (drf-spectacular's ``extend_schema_field(..., component_name=...)``) keeps the
schema of any project clean (``manage.py spectacular --validate --fail-on-warn``) without
settings of its own, and its names the same in every project.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from cogitator_memory.api.serializers.fields import StrictChoiceField

# The schema components of the app's choice sets, one name per set.
ENTRY_TYPE = "EntryTypeEnum"
ROLE = "RoleEnum"
ITEM_KIND = "ItemKindEnum"
ITEM_STATUS = "ItemStatusEnum"
TRUST = "TrustEnum"
RUN_STATUS = "RunStatusEnum"
SESSION_STATUS = "SessionStatusEnum"
GRAPH_STATUS = "GraphStatusEnum"


@cache
def _named_class(name: str) -> type[StrictChoiceField]:
    """The field class whose fields the schema shows as the component ``name``.

    A class, not an annotated instance: a serializer copies its declared fields for each
    instance, and a copy is a new instance of the field's class. One class per name, in
    request and response serializers alike: drf-spectacular takes two classes under one
    component name for two different components.
    """
    return type(f"{name}Field", (StrictChoiceField,), {"__module__": __name__})


def named_enum(name: str, **options: Any) -> StrictChoiceField:
    """A ``StrictChoiceField(**options)`` whose enum is the schema component ``name``: its
    choices (values and labels) as drf-spectacular writes any choice field's enum."""
    named = _named_class(name)
    described = serializers.ChoiceField(choices=options["choices"])
    extend_schema_field(described, component_name=name)(named)
    return named(**options)
