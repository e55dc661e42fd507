"""OpenAPI descriptions drf-spectacular cannot infer.

The schema describes the API exactly: every request it calls valid is accepted (or
answered 401, 403, 404, 409 or 429) and every request it calls invalid is refused. The
parts drf-spectacular cannot see are written here:

- the JSON values the API stores (metadata, event payloads, content parts, tool calls):
  any JSON whose texts, keys included, hold no NUL (``JSONValue``, ``JSONObject``);
- what each entry type needs (``EntryCreateScheme``);
- ``postprocess_schema``, a ``POSTPROCESSING_HOOKS`` entry: what a path id can be,
  JSON-object query parameters as ``content: application/json``, the answers given before
  a view runs (406; 413 and 415 of every operation that takes a body), the 503 of a busy
  database (with ``Retry-After``) that any operation can answer, and the links from the
  operations that create threads and entries to those that use their ids.

The schema is OpenAPI 3.1 (``SPECTACULAR_SETTINGS["OAS_VERSION"] = "3.1.0"``): 3.0 has no
``propertyNames``, which is how object keys are described.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.plumbing import ResolvedComponent, append_meta

from cogitator_memory.api.serializers.fields import TEXT_PATTERN, schema_pattern
from cogitator_memory.api.serializers.graph import GRAPH_ID_MAX_LENGTH
from cogitator_memory.api.serializers.items import ITEM_ID_MAX_LENGTH
from cogitator_memory.api.serializers.playbook import DRAFT_ID_MAX_LENGTH
from cogitator_memory.api.serializers.sessions import SESSION_ID_MAX_LENGTH
from cogitator_memory.api.serializers.threads import ENTRY_ID_MAX_LENGTH, THREAD_ID
from cogitator_memory.grants import USER_ID_KEY, USER_ID_MAX_LENGTH
from cogitator_memory.threads.models import EVENT_TYPES, EntryType

if TYPE_CHECKING:
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.openapi import AutoSchema

TEXT = {"type": "string", "pattern": schema_pattern(TEXT_PATTERN)}
JSON_VALUE = "JSONValue"
JSON_OBJECT = "JSONObject"
TOOL_CALL = "ToolCall"
ERROR_REF = {"$ref": "#/components/schemas/Error"}


class APIKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "cogitator_memory.api.authentication.APIKeyAuthentication"
    name = "ApiKeyAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "An API key of a service, sent as `Authorization: Api-Key <key>`.",
        }


# --- JSON values -------------------------------------------------------------------------


def _json_components() -> dict[str, dict[str, Any]]:
    value_ref = {"$ref": f"#/components/schemas/{JSON_VALUE}"}
    object_schema = {
        "type": "object",
        "propertyNames": TEXT,
        "additionalProperties": value_ref,
    }
    return {
        JSON_VALUE: {
            "description": "Any JSON value whose texts (object keys too) hold no NUL; "
            "texts with lone surrogates are refused as well.",
            "type": ["null", "boolean", "number", "string", "array", "object"],
            "pattern": TEXT["pattern"],
            "items": value_ref,
            "propertyNames": TEXT,
            "additionalProperties": value_ref,
        },
        JSON_OBJECT: {"description": "A JSON object (see JSONValue).", **object_schema},
        TOOL_CALL: {
            "description": "A tool call: its id and the name of the tool, and anything else.",
            **object_schema,
            "required": ["id", "name"],
            "properties": {"id": {**TEXT, "minLength": 1}, "name": {**TEXT, "minLength": 1}},
        },
    }


def _component_ref(auto_schema: AutoSchema, name: str) -> dict[str, Any]:
    """A reference to one of the JSON components, registering them all on first use."""
    for component_name, schema in _json_components().items():
        auto_schema.registry.register_on_missing(
            ResolvedComponent(
                name=component_name,
                type=ResolvedComponent.SCHEMA,
                schema=schema,
                object=component_name,
            )
        )
    return {"$ref": f"#/components/schemas/{name}"}


class JSONObjectFieldScheme(OpenApiSerializerFieldExtension):
    target_class = "cogitator_memory.api.serializers.fields.JSONObjectField"

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Any) -> Any:
        return _component_ref(auto_schema, JSON_OBJECT)


class ThreadMetadataFieldScheme(OpenApiSerializerFieldExtension):
    target_class = "cogitator_memory.api.serializers.fields.ThreadMetadataField"

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Any) -> Any:
        user_id = {**TEXT, "minLength": 1, "maxLength": USER_ID_MAX_LENGTH}
        # patternProperties rather than properties: schemathesis reads a property named
        # like userId as a reference to a resource no operation makes, and would not
        # start its stateful runs from thread creation.
        return {
            "allOf": [_component_ref(auto_schema, JSON_OBJECT)],
            "patternProperties": {
                f"^{USER_ID_KEY}$": append_meta(
                    user_id,
                    {"nullable": True, "description": "The user the thread belongs to."},
                )
            },
        }


class ToolInputFieldScheme(OpenApiSerializerFieldExtension):
    target_class = "cogitator_memory.api.serializers.files.ToolInputField"

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Any) -> Any:
        # Only the command is the API's to check; the rest is answered as the tool answers.
        return {
            "allOf": [_component_ref(auto_schema, JSON_OBJECT)],
            "required": ["command"],
            "properties": {"command": TEXT},
        }


class EntryContentFieldScheme(OpenApiSerializerFieldExtension):
    target_class = "cogitator_memory.api.serializers.fields.EntryContentField"

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Any) -> Any:
        parts = {"type": "array", "items": _component_ref(auto_schema, JSON_VALUE)}
        return {"anyOf": [TEXT, parts]}


class ToolCallsFieldScheme(OpenApiSerializerFieldExtension):
    target_class = "cogitator_memory.api.serializers.fields.ToolCallsField"

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Any) -> Any:
        return {"type": "array", "items": _component_ref(auto_schema, TOOL_CALL)}


class ToolResultsFieldScheme(OpenApiSerializerFieldExtension):
    target_class = "cogitator_memory.api.serializers.fields.ToolResultsField"

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Any) -> Any:
        return {"type": "array", "items": _component_ref(auto_schema, JSON_OBJECT)}


# --- what each entry type needs ----------------------------------------------------------


def _given(field: str, *, min_items: int | None = None) -> dict[str, Any]:
    """The condition that ``field`` is given (and, for a list, holds ``min_items``)."""
    if min_items is None:
        return {"required": [field]}
    return {"required": [field], "properties": {field: {"minItems": min_items}}}


def entry_type_rules() -> list[dict[str, Any]]:
    """``validate_entry_fields`` as conditions on ``type`` (absent means message)."""
    no_event = {"not": _given("event")}
    return [
        {
            "if": {"properties": {"type": {"const": EntryType.MESSAGE.value}}},
            "then": {
                "required": ["role"],
                "anyOf": [_given("content"), _given("tool_calls", min_items=1)],
                **no_event,
            },
        },
        {
            "if": {
                "required": ["type"],
                "properties": {"type": {"const": EntryType.TOOL_RESULT.value}},
            },
            "then": {
                "anyOf": [_given("content"), _given("tool_results", min_items=1)],
                **no_event,
            },
        },
        {
            "if": {"required": ["type"], "properties": {"type": {"enum": sorted(EVENT_TYPES)}}},
            "then": _given("event"),
        },
    ]


class EntryCreateScheme(OpenApiSerializerExtension):
    target_class = "cogitator_memory.api.serializers.entries.EntryCreateSerializer"

    def map_serializer(self, auto_schema: AutoSchema, direction: Any) -> Any:
        schema = auto_schema._map_basic_serializer(self.target, direction)
        return {**schema, "allOf": entry_type_rules()}


class FilePutScheme(OpenApiSerializerExtension):
    target_class = "cogitator_memory.api.serializers.files.FilePutSerializer"

    def map_serializer(self, auto_schema: AutoSchema, direction: Any) -> Any:
        schema = auto_schema._map_basic_serializer(self.target, direction)
        text = schema["properties"]["text"]
        # Any text without NUL, the empty one included (the pattern admits it): one schema,
        # not drf-spectacular's choice of that or a second text of no pattern.
        schema["properties"]["text"] = {**TEXT, "description": text.get("description", "")}
        return schema


# --- the hook ----------------------------------------------------------------------------

# Path parameters: what an id can be. Any other id answers 404, as a missing one does.
PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "thread_id": {"type": "string", "pattern": schema_pattern(THREAD_ID)},
    "entry_id": {"minLength": 1, "maxLength": ENTRY_ID_MAX_LENGTH, **TEXT},
    "item_id": {"minLength": 1, "maxLength": ITEM_ID_MAX_LENGTH, **TEXT},
    "run_id": {"minLength": 1, "maxLength": ITEM_ID_MAX_LENGTH, **TEXT},
    "session_id": {"minLength": 1, "maxLength": SESSION_ID_MAX_LENGTH, **TEXT},
    # Any user id a thread can have; one of no memory exports an empty document.
    "user_id": {"minLength": 1, "maxLength": USER_ID_MAX_LENGTH, **TEXT},
    # The key of a playbook draft's file head, a whole number in its decimal digits.
    "draft_id": {"minLength": 1, "maxLength": DRAFT_ID_MAX_LENGTH, **TEXT},
    "node_id": {"minLength": 1, "maxLength": GRAPH_ID_MAX_LENGTH, **TEXT},
    "edge_id": {"minLength": 1, "maxLength": GRAPH_ID_MAX_LENGTH, **TEXT},
}
# Operations whose body must be given: without one it is {}, which they refuse (drf-spectacular
# requires a body only of a serializer with required fields).
REQUIRED_BODIES = {"memory_threads_entries_create"}
BODY_ERRORS = {
    "413": "The body is larger than the server accepts.",
    "415": "The body is not JSON (Content-Type application/json).",
}
# Answers any operation can give before its view runs.
EVERY_OPERATION_ERRORS = {
    "406": "The Accept header names no type the API answers in (application/json).",
}
# The answer of any operation when the database gave no lock in time (DatabaseBusy).
DATABASE_BUSY = (
    "The database is busy with other writes (database_busy): nothing was changed; try again "
    "after the seconds of Retry-After."
)
RETRY_AFTER_HEADER = {
    "Retry-After": {
        "description": "With database_busy: the seconds to wait before trying again.",
        "schema": {"type": "integer", "minimum": 0},
    }
}

# Runtime expressions of links.
ID = "$response.body#/id"
THREAD_OF_ENTRY = "$response.body#/thread_id"
ACTIVE_LEAF_ID = "$response.body#/active_leaf_id"


def _thread_links(*, with_entries: bool) -> dict[str, dict[str, Any]]:
    """Links from an answer holding a thread to the operations on that thread; those that
    name an entry only ``with_entries`` (a new thread has none)."""
    path = {"path.thread_id": ID}
    links = {
        "ReadThread": {"operationId": "memory_threads_retrieve", "parameters": path},
        "UpdateThread": {"operationId": "memory_threads_partial_update", "parameters": path},
        "DeleteThread": {"operationId": "memory_threads_destroy", "parameters": path},
        "ListEntries": {"operationId": "memory_threads_entries_list", "parameters": path},
        "AddEntry": {"operationId": "memory_threads_entries_create", "parameters": path},
        "ReadBranch": {"operationId": "memory_threads_path", "parameters": path},
        "Extract": {"operationId": "memory_threads_extract", "parameters": path},
    }
    at_active_leaf = {
        "RewindToActiveLeaf": {
            "operationId": "memory_threads_rewind",
            "parameters": path,
            "requestBody": {"to_entry_id": ACTIVE_LEAF_ID},
        },
        "CheckOutActiveLeaf": {
            "operationId": "memory_threads_checkout",
            "parameters": path,
            "requestBody": {"entry_id": ACTIVE_LEAF_ID},
        },
        "ForkAtActiveLeaf": {
            "operationId": "memory_threads_fork",
            "parameters": path,
            "requestBody": {"at_entry_id": ACTIVE_LEAF_ID},
        },
    }
    return {**links, **at_active_leaf} if with_entries else links


def _entry_links() -> dict[str, dict[str, Any]]:
    """Links from an answer holding an entry to the operations on it and its thread."""
    entry = {"path.entry_id": ID}
    thread = {"path.thread_id": THREAD_OF_ENTRY}
    return {
        "ReadEntry": {"operationId": "memory_entries_retrieve", "parameters": entry},
        "DeleteEntry": {"operationId": "memory_entries_destroy", "parameters": entry},
        "RedactEntry": {"operationId": "memory_entries_redact", "parameters": entry},
        "AddChild": {
            "operationId": "memory_threads_entries_create",
            "parameters": thread,
            "requestBody": {"parent_id": ID},
        },
        "ReadItsBranch": {
            "operationId": "memory_threads_path",
            "parameters": {**thread, "query.leaf_id": ID},
        },
        "RewindToIt": {
            "operationId": "memory_threads_rewind",
            "parameters": thread,
            "requestBody": {"to_entry_id": ID},
        },
        "CheckOutIt": {
            "operationId": "memory_threads_checkout",
            "parameters": thread,
            "requestBody": {"entry_id": ID},
        },
        "ForkAtIt": {
            "operationId": "memory_threads_fork",
            "parameters": thread,
            "requestBody": {"at_entry_id": ID},
        },
    }


def _item_links() -> dict[str, dict[str, Any]]:
    """Links from an answer holding an item to the operations on it."""
    item = {"path.item_id": ID}
    return {
        "ReadItem": {"operationId": "memory_items_retrieve", "parameters": item},
        "ItsHistory": {"operationId": "memory_items_history", "parameters": item},
        "ActivateIt": {"operationId": "memory_items_activate", "parameters": item},
        "RejectIt": {"operationId": "memory_items_reject", "parameters": item},
        "LetItGo": {"operationId": "memory_items_let_go", "parameters": item},
    }


def _graph_links(kind: str) -> dict[str, dict[str, Any]]:
    """Links from an answer holding a graph node or edge (``kind``) to the operations on
    it."""
    row = {f"path.{kind}_id": ID}
    links = {
        "ReadIt": {"operationId": f"memory_graph_{kind}s_retrieve", "parameters": row},
        "ChangeIt": {"operationId": f"memory_graph_{kind}s_partial_update", "parameters": row},
        "ActivateIt": {"operationId": f"memory_graph_{kind}s_activate", "parameters": row},
        "RejectIt": {"operationId": f"memory_graph_{kind}s_reject", "parameters": row},
        "DeleteIt": {"operationId": f"memory_graph_{kind}s_destroy", "parameters": row},
    }
    if kind == "node":
        links["ItsNeighbourhood"] = {
            "operationId": "memory_graph_nodes_neighbourhood",
            "parameters": row,
        }
    return links


# (operationId, status) -> the links of that answer.
LINKS: dict[tuple[str, str], dict[str, dict[str, Any]]] = {
    ("memory_threads_create", "201"): _thread_links(with_entries=False),
    ("memory_threads_create", "200"): _thread_links(with_entries=True),
    ("memory_threads_fork", "201"): _thread_links(with_entries=True),
    ("memory_threads_rewind", "200"): _thread_links(with_entries=True),
    ("memory_threads_checkout", "200"): _thread_links(with_entries=True),
    ("memory_threads_entries_create", "201"): _entry_links(),
    ("memory_entries_redact", "200"): _entry_links(),
    ("memory_threads_extract", "202"): {
        "ReadRun": {"operationId": "memory_extractions_retrieve", "parameters": {"path.run_id": ID}}
    },
    ("memory_users_forget", "202"): {
        "ReadRun": {"operationId": "memory_forgets_retrieve", "parameters": {"path.run_id": ID}}
    },
    ("memory_items_retrieve", "200"): _item_links(),
    ("memory_items_activate", "200"): _item_links(),
    ("memory_items_reject", "200"): _item_links(),
    ("memory_items_let_go", "200"): _item_links(),
    ("memory_graph_nodes_create", "201"): _graph_links("node"),
    ("memory_graph_nodes_create", "200"): _graph_links("node"),
    ("memory_graph_edges_create", "201"): _graph_links("edge"),
    ("memory_graph_edges_create", "200"): _graph_links("edge"),
}


def postprocess_schema(
    result: dict[str, Any], generator: SchemaGenerator, request: Any, public: bool
) -> dict[str, Any]:
    """The parts of the schema only the whole schema can say (see the module)."""
    operations = [
        operation
        for path_item in result.get("paths", {}).values()
        for method, operation in path_item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    ]
    known = {operation.get("operationId") for operation in operations}
    for operation in operations:
        for parameter in operation.get("parameters", []):
            if parameter.get("in") == "path" and parameter.get("name") in PATH_PARAMETERS:
                parameter["schema"] = dict(PATH_PARAMETERS[parameter["name"]])
            schema = parameter.get("schema", {})
            if parameter.get("in") == "query" and schema.get("type") == "object":
                # An object in a query is one parameter of JSON text, not key=value pairs.
                parameter["content"] = {"application/json": {"schema": parameter.pop("schema")}}
        responses = operation.setdefault("responses", {})
        if operation.get("operationId") in REQUIRED_BODIES:
            operation["requestBody"]["required"] = True
        errors = {**EVERY_OPERATION_ERRORS, **(BODY_ERRORS if "requestBody" in operation else {})}
        for status, description in errors.items():
            error = {"application/json": {"schema": ERROR_REF}}
            responses.setdefault(status, {"description": description, "content": error})
        busy = responses.setdefault(
            "503", {"description": "", "content": {"application/json": {"schema": ERROR_REF}}}
        )
        busy["description"] = " ".join(filter(None, [busy["description"], DATABASE_BUSY]))
        busy["headers"] = {**busy.get("headers", {}), **RETRY_AFTER_HEADER}
        for status, response in responses.items():
            links = LINKS.get((operation.get("operationId", ""), status))
            if links:
                response["links"] = {
                    name: link for name, link in links.items() if link["operationId"] in known
                }
    return result
