"""The OpenAPI schema: valid, served, and describing every route of the memory API.

The operations checked are enumerated from ``cogitator_memory.api.urls`` (each URL
pattern and each HTTP method its view implements), so a route added without a schema
entry, or a schema entry without a route, fails here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings as django_settings
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from cogitator_memory.api import urls as api_urls
from cogitator_memory.threads import selectors, services

SCHEMA_URL = "/api/schema/"
ERROR_REF = "#/components/schemas/Error"
# Methods every view answers by itself; they are not operations of the API.
FRAMEWORK_METHODS = {"options", "head", "trace"}


def api_prefix() -> str:
    """Where the project mounts the API, e.g. ``/api/memory/``."""
    first = api_urls.urlpatterns[0]
    assert isinstance(first, URLPattern) and first.name
    url = reverse(f"{api_urls.app_name}:{first.name}")
    route = str(first.pattern)
    assert url.endswith(route), (url, route)
    return url.removesuffix(route)


def openapi_path(pattern: URLPattern) -> str:
    # Django's "<str:thread_id>" is OpenAPI's "{thread_id}".
    return api_prefix() + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(pattern.pattern))


def routed_operations() -> list[tuple[str, str]]:
    """(OpenAPI path, method) of every URL pattern of the API and method of its view."""
    operations = []
    for pattern in api_urls.urlpatterns:
        assert isinstance(pattern, URLPattern), f"not a plain route: {pattern!r}"
        view_class = pattern.callback.view_class  # type: ignore[attr-defined]
        for method in view_class.http_method_names:
            if method not in FRAMEWORK_METHODS and hasattr(view_class, method):
                operations.append((openapi_path(pattern), method))
    return operations


ROUTED_OPERATIONS = routed_operations()
# Writes that take no body: the path names all they act on. Their schema documents none,
# and the view never reads one (so no 413 or 415 either).
BODYLESS_WRITES = {
    "memory_threads_extract",
    "memory_threads_compact",
    "memory_items_activate",
    "memory_items_let_go",
    "memory_graph_nodes_activate",
    "memory_graph_edges_activate",
    "memory_playbook_drafts_promote",
    "memory_playbook_drafts_discard",
}


def served_schema(client: Client, query: str = "") -> dict[str, Any]:
    response = client.get(SCHEMA_URL + query)
    assert response.status_code == 200, response.content[:500]
    if query == "?format=json":
        return json.loads(response.content)
    return yaml.safe_load(response.content)


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return served_schema(Client(), "?format=json")


def operation_of(schema: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    operations = schema["paths"].get(path)
    assert operations is not None, f"{path} is routed but not in the schema"
    assert method in operations, f"{method.upper()} {path} is routed but not in the schema"
    operation: dict[str, Any] = operations[method]
    return operation


def json_schema_of(described: dict[str, Any]) -> dict[str, Any]:
    """The application/json schema of a request body or a response."""
    content = described.get("content", {})
    assert "application/json" in content, f"no application/json content: {described}"
    json_schema: dict[str, Any] = content["application/json"]["schema"]
    return json_schema


def test_spectacular_validates_the_schema_without_warnings(tmp_path: Path) -> None:
    # given
    target = tmp_path / "schema.yaml"
    # when
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    # then
    assert yaml.safe_load(target.read_text())["openapi"].startswith("3.")


def test_the_schema_is_served_as_yaml_and_as_json_with_the_same_content() -> None:
    # given
    client = Client()
    # when
    as_yaml = served_schema(client)
    as_json = served_schema(client, "?format=json")
    # then
    assert as_yaml == as_json
    assert as_json["info"]["title"] == "cogitator-memory API"


def test_the_routes_of_the_api_are_enumerated() -> None:
    # given / when
    paths = {path for path, _ in ROUTED_OPERATIONS}
    # then
    assert len(paths) == len(api_urls.urlpatterns)
    assert ("/api/memory/threads/{thread_id}/", "patch") in ROUTED_OPERATIONS
    assert ("/api/memory/entries/{entry_id}/redact/", "post") in ROUTED_OPERATIONS


def test_the_schema_documents_exactly_the_routed_operations(schema: dict[str, Any]) -> None:
    # given
    prefix = api_prefix()
    # when
    documented = {
        (path, method)
        for path, operations in schema["paths"].items()
        if path.startswith(prefix)
        for method in operations
        if method not in {"parameters", "summary", "description", "servers"}
    }
    # then
    assert documented == set(ROUTED_OPERATIONS)


@pytest.mark.parametrize(("path", "method"), ROUTED_OPERATIONS)
def test_each_operation_documents_its_success_response(
    schema: dict[str, Any], path: str, method: str
) -> None:
    # given
    operation = operation_of(schema, path, method)
    # when
    successes = {
        code: response for code, response in operation["responses"].items() if code.startswith("2")
    }
    # then
    assert successes, f"{method.upper()} {path} documents no success"
    for code, response in successes.items():
        if code == "204":
            assert "content" not in response
        else:
            assert json_schema_of(response).get("$ref", "").startswith("#/components/schemas/")


@pytest.mark.parametrize(
    ("path", "method"), [(p, m) for p, m in ROUTED_OPERATIONS if m in {"post", "patch", "put"}]
)
def test_each_write_documents_its_request_body(
    schema: dict[str, Any], path: str, method: str
) -> None:
    # given
    operation = operation_of(schema, path, method)
    if operation["operationId"] in BODYLESS_WRITES:
        assert "requestBody" not in operation
        return
    # when
    request_schema = json_schema_of(operation.get("requestBody", {}))
    # then
    reference = request_schema["$ref"]
    component = schema["components"]["schemas"][reference.rsplit("/", 1)[1]]
    assert component["type"] == "object"
    assert component["properties"], f"{reference} has no fields"


@pytest.mark.parametrize(("path", "method"), ROUTED_OPERATIONS)
def test_each_operation_documents_its_errors_with_the_error_component(
    schema: dict[str, Any], path: str, method: str
) -> None:
    # given
    operation = operation_of(schema, path, method)
    takes_input = "requestBody" in operation or any(
        parameter["in"] == "query" for parameter in operation.get("parameters", [])
    )
    expected = {"401", "403", "429"}
    if takes_input:
        expected.add("400")
    if "{" in path:
        expected.add("404")
    # when
    errors = {
        code: json_schema_of(response)
        for code, response in operation["responses"].items()
        if code.startswith(("4", "5"))
    }
    # then
    assert expected <= set(errors), f"{method.upper()} {path}: missing {expected - set(errors)}"
    assert {code: ERROR_REF for code in errors} == {
        code: error_schema.get("$ref") for code, error_schema in errors.items()
    }


def test_the_error_component_is_code_message_and_field_errors(schema: dict[str, Any]) -> None:
    # given / when
    error = schema["components"]["schemas"]["Error"]
    # then
    assert set(error["required"]) == {"code", "message", "errors"}
    assert error["properties"]["code"]["type"] == "string"
    assert error["properties"]["message"]["type"] == "string"
    assert error["properties"]["errors"]["type"] == "object"
    assert error["properties"]["errors"]["additionalProperties"] == {
        "type": "array",
        "items": {"type": "string"},
    }


@pytest.mark.parametrize(
    ("page", "marker"),
    [("/api/schema/swagger/", b"swagger-ui"), ("/api/schema/redoc/", b"redoc")],
)
def test_the_documentation_page_is_served_as_html_reading_the_schema(
    page: str, marker: bytes
) -> None:
    # given
    client = Client()
    # when
    response = client.get(page)
    # then
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert marker in response.content.lower()
    assert SCHEMA_URL.encode() in response.content


@pytest.mark.parametrize(
    ("page", "bundle"),
    [
        ("/api/schema/swagger/", "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"),
        ("/api/schema/redoc/", "drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"),
    ],
)
def test_the_documentation_page_names_only_this_sites_own_files(page: str, bundle: str) -> None:
    # given
    client = Client()
    # when
    html = client.get(page).content.decode()
    urls = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
    # then: no CDN, no fonts of another site; every static file it names is one the site has
    assert f"{django_settings.STATIC_URL}{bundle}" in urls
    assert [url for url in urls if not url.startswith("/") or url.startswith("//")] == []
    static = [url.removeprefix(django_settings.STATIC_URL) for url in urls if "/static/" in url]
    assert static and all(finders.find(path) for path in static), static


# --- what makes the schema exact ---------------------------------------------------------


def test_the_schema_is_openapi_3_1(schema: dict[str, Any]) -> None:
    # given / when / then: 3.1 schemas are JSON Schema, which can describe object keys
    assert schema["openapi"].startswith("3.1.")


@pytest.mark.parametrize(
    ("path", "method"), [(p, m) for p, m in ROUTED_OPERATIONS if m in {"post", "patch", "put"}]
)
def test_each_write_documents_a_body_too_large_and_not_json(
    schema: dict[str, Any], path: str, method: str
) -> None:
    # given
    operation = operation_of(schema, path, method)
    # when
    documented = set(operation["responses"])
    # then
    if operation["operationId"] in BODYLESS_WRITES:
        assert "406" in documented and not {"413", "415"} & documented
    else:
        assert {"406", "413", "415"} <= documented


def resolved(schema: dict[str, Any], node: Any) -> Any:
    """``node`` with a top-level ``$ref`` followed."""
    while isinstance(node, dict) and "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def plain_texts(schema: dict[str, Any], node: Any, where: str, seen: set[str]) -> Iterator[Any]:
    """(where, schema) of every string schema in ``node`` that is neither an enum nor a
    format, following references once each."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from plain_texts(schema, item, f"{where}[{index}]", seen)
        return
    if not isinstance(node, dict):
        return
    if "$ref" in node:
        if node["$ref"] in seen:
            return
        seen.add(node["$ref"])
        yield from plain_texts(schema, resolved(schema, node), node["$ref"], seen)
        return
    types = node.get("type", [])
    types = [types] if isinstance(types, str) else types
    if "string" in types and "enum" not in node and "format" not in node:
        yield where, node
    for key, value in node.items():
        if key in {"properties", "patternProperties"}:
            for name, child in value.items():
                yield from plain_texts(schema, child, f"{where}.{name}", seen)
        elif isinstance(value, dict | list) and key not in {"enum", "required", "default"}:
            yield from plain_texts(schema, value, f"{where}/{key}", seen)


def request_texts(schema: dict[str, Any]) -> Iterator[Any]:
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            label = f"{method.upper()} {path}"
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                yield from plain_texts(schema, body["schema"], f"{label} body", set())
            for parameter in operation.get("parameters", []):
                described = parameter.get("schema") or parameter["content"]["application/json"]
                where = f"{label} {parameter['in']} {parameter['name']}"
                yield from plain_texts(schema, described.get("schema", described), where, set())


def test_every_text_a_request_carries_is_documented_without_nul(schema: dict[str, Any]) -> None:
    # given
    texts = list(request_texts(schema))
    # when
    without_pattern = [where for where, text in texts if "pattern" not in text]
    allowing_nul = [where for where, text in texts if re.search(text["pattern"], "a\x00b")]
    # then
    assert len(texts) > 50
    assert without_pattern == []
    assert allowing_nul == []


def test_every_key_of_a_json_object_a_request_carries_is_documented_without_nul(
    schema: dict[str, Any],
) -> None:
    # given
    components = schema["components"]["schemas"]
    # when
    key_patterns = {
        name: components[name]["propertyNames"]["pattern"]
        for name in ("JSONValue", "JSONObject", "ToolCall")
    }
    # then
    assert all(not re.search(pattern, "\x00") for pattern in key_patterns.values())
    assert components["JSONValue"]["additionalProperties"] == {
        "$ref": "#/components/schemas/JSONValue"
    }


def links_of(schema: dict[str, Any], path: str, method: str, status: str) -> dict[str, Any]:
    links: dict[str, Any] = operation_of(schema, path, method)["responses"][status]["links"]
    return links


@pytest.mark.parametrize(
    ("path", "method", "status", "targets"),
    [
        (
            "/api/memory/threads/",
            "post",
            "201",
            {
                "memory_threads_retrieve",
                "memory_threads_partial_update",
                "memory_threads_destroy",
                "memory_threads_entries_list",
                "memory_threads_entries_create",
                "memory_threads_path",
            },
        ),
        (
            "/api/memory/threads/{thread_id}/fork/",
            "post",
            "201",
            {
                "memory_threads_retrieve",
                "memory_threads_entries_create",
                "memory_threads_rewind",
                "memory_threads_checkout",
                "memory_threads_fork",
            },
        ),
        (
            "/api/memory/threads/{thread_id}/entries/",
            "post",
            "201",
            {
                "memory_entries_retrieve",
                "memory_entries_destroy",
                "memory_entries_redact",
                "memory_threads_entries_create",
                "memory_threads_rewind",
                "memory_threads_checkout",
                "memory_threads_fork",
            },
        ),
    ],
)
def test_links_lead_from_what_is_created_to_the_operations_on_it(
    schema: dict[str, Any], path: str, method: str, status: str, targets: set[str]
) -> None:
    # given
    operations = {
        operation["operationId"]: operation
        for operations in schema["paths"].values()
        for operation in operations.values()
        if isinstance(operation, dict) and "operationId" in operation
    }
    # when
    links = links_of(schema, path, method, status)
    # then
    assert targets <= {link["operationId"] for link in links.values()}
    for name, link in links.items():
        target = operations[link["operationId"]]
        names = {f"{p['in']}.{p['name']}" for p in target.get("parameters", [])}
        assert set(link["parameters"]) <= names, name
        if "requestBody" in link:
            body = json_schema_of(target["requestBody"])
            properties = resolved(schema, body)["properties"]
            assert set(link["requestBody"]) <= set(properties), name


def parameter_schema(schema: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    operation = operation_of(schema, path, "get")
    (parameter,) = [p for p in operation["parameters"] if p["name"] == name]
    described: dict[str, Any] = parameter["schema"]
    return described


@pytest.mark.django_db
def test_every_text_of_the_documented_cursor_patterns_is_a_page_position(
    schema: dict[str, Any],
) -> None:
    # given: a thread with entries, and the patterns the schema publishes
    thread = services.create_thread("agent-1", {})
    services.add_entry(thread.pk, role="user", content="Hello")
    thread_cursor = parameter_schema(schema, "/api/memory/threads/", "cursor")["pattern"]
    entry_cursor = parameter_schema(schema, "/api/memory/threads/{thread_id}/entries/", "cursor")[
        "pattern"
    ]

    @settings(max_examples=100, deadline=None, database=None, derandomize=True)
    # fullmatch: in the schema "$" ends the text; Python's would allow a newline after it.
    @given(
        threads_after=st.from_regex(thread_cursor, fullmatch=True),
        entries_before=st.from_regex(entry_cursor, fullmatch=True),
    )
    def read_as_positions(threads_after: str, entries_before: str) -> None:
        # when
        threads = selectors.list_threads(cursor=threads_after)
        entries = selectors.page_entries(thread.pk, limit=10, cursor=entries_before)
        # then
        assert len(threads.threads) <= 1
        assert len(entries.entries) <= 1

    read_as_positions()


@pytest.mark.django_db
def test_the_cursors_the_api_gives_match_the_documented_patterns(
    schema: dict[str, Any],
) -> None:
    # given
    thread = services.create_thread("agent-1", {})
    for _ in range(3):
        services.create_thread("agent-1", {})
        services.add_entry(thread.pk, role="user", content="Hello")
    # when
    threads = selectors.list_threads(limit=1)
    entries = selectors.page_entries(thread.pk, limit=1)
    # then
    assert threads.next_cursor and entries.next_cursor
    thread_cursor = parameter_schema(schema, "/api/memory/threads/", "cursor")["pattern"]
    entry_cursor = parameter_schema(schema, "/api/memory/threads/{thread_id}/entries/", "cursor")[
        "pattern"
    ]
    assert re.search(thread_cursor, threads.next_cursor)
    assert re.search(entry_cursor, entries.next_cursor)
