"""Requests made from the served OpenAPI schema are answered as the schema documents.

schemathesis reads ``/api/schema/`` from the project's WSGI application and makes requests
for each operation, sent in-process (no server, no network) with the API key of a service
granted ``agent-1``. Every answer must be no 5xx, a documented status with a documented
content type, and a body and headers that match the documented schema.

Requests run against a fixed set of threads and entries, each one in a savepoint that is
rolled back afterwards, so every request sees the same rows and a failure replays exactly.

- Generated requests: schemathesis generates, per operation, requests the schema calls
  valid and ones it calls invalid. Hooks mix the ids of the fixed rows (and of rows never
  written) into ids in paths, bodies and queries, and the granted agent into new threads,
  so that generated requests reach the services and not only the 404 branch.
- Awkward values: the same checks on requests that each carry one value generation seldom
  makes within a few dozen examples: NUL (PostgreSQL's text and jsonb refuse it) in a path
  id or inside a JSON field, and a ``/`` in a path id. The same requests with valid ids
  succeed, so what the API has to handle is the awkward value, not the rest.

Operations are parametrized here rather than with ``schema.parametrize()``: under pytest 9
the items that makes all share one node id, so one operation cannot be run or told apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import schemathesis
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework_api_key.models import APIKey
from schemathesis import APIOperation, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Err
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from cogitator_memory.access.models import Grant
from cogitator_memory.threads import services
from cogitator_memory.threads.models import EntryType, Role
from project.wsgi import application
from tests.factories import EntryFactory, ThreadFactory

SCHEMA_URL = "/api/schema/?format=json"
# Generated requests per operation, valid and invalid ones together: 14 operations of 40
# take about 10 s on SQLite and 20 s on PostgreSQL.
MAX_EXAMPLES = 40

GRANTED_AGENT = "agent-1"
OTHER_AGENT = "agent-2"

THREAD_ID = "st-main"
HIDDEN_THREAD_ID = "st-hidden"
ROOT_ID = "entry_st_root"
CALL_ID = "entry_st_call"
TOOL_ID = "entry_st_tool"
LABEL_ID = "entry_st_label"
BRANCH_ID = "entry_st_branch"
REDACTED_ID = "entry_st_redacted"
HIDDEN_ENTRY_ID = "entry_st_hidden"

# Ids mixed into generated requests: the fixed rows', the other agent's, never written.
THREAD_IDS = [THREAD_ID, HIDDEN_THREAD_ID, "st-missing"]
ENTRY_IDS = [
    ROOT_ID,
    CALL_ID,
    TOOL_ID,
    LABEL_ID,
    BRANCH_ID,
    REDACTED_ID,
    HIDDEN_ENTRY_ID,
    "entry_st_missing",
]
KNOWN_VALUES = {
    "thread_id": THREAD_IDS,
    "id": THREAD_IDS,
    "new_thread_id": THREAD_IDS,
    "entry_id": ENTRY_IDS,
    "to_entry_id": ENTRY_IDS,
    "at_entry_id": ENTRY_IDS,
    "parent_id": ENTRY_IDS,
    "leaf_id": ENTRY_IDS,
    "agent_id": [GRANTED_AGENT, OTHER_AGENT],
}

LIST_THREADS = "GET /api/memory/threads/"
CREATE_THREAD = "POST /api/memory/threads/"
UPDATE_THREAD = "PATCH /api/memory/threads/{thread_id}/"
ADD_ENTRY = "POST /api/memory/threads/{thread_id}/entries/"
# A message any thread accepts. Laid over half of the generated bodies of "Add an entry",
# whose generated type, role and content seldom agree with each other.
VALID_MESSAGE = {"type": "message", "role": "user", "content": "Hello"}

NUL_TEXT = "a\x00b"
# A request each operation with an id in its path accepts; the awkward requests send it
# with an awkward id instead, so that the id, not the body, is what the API has to handle.
VALID_PATH_IDS = {"thread_id": THREAD_ID, "entry_id": ROOT_ID}
VALID_BODIES: dict[str, dict[str, Any]] = {
    UPDATE_THREAD: {"metadata": {"topic": "x"}},
    ADD_ENTRY: VALID_MESSAGE,
    "POST /api/memory/threads/{thread_id}/rewind/": {"to_entry_id": ROOT_ID},
    "POST /api/memory/threads/{thread_id}/checkout/": {"entry_id": BRANCH_ID},
    "POST /api/memory/threads/{thread_id}/fork/": {"at_entry_id": ROOT_ID},
    "POST /api/memory/entries/{entry_id}/redact/": {"reason": "x"},
}
# Quoted as schemathesis quotes generated path parameters; the server decodes them.
AWKWARD_PATH_IDS = {"NUL": quote(NUL_TEXT, safe=""), "slash": quote("a/b", safe="")}
AWKWARD_BODIES: list[tuple[str, str, dict[str, Any]]] = [
    (
        CREATE_THREAD,
        "NUL in a metadata value",
        {"agent_id": GRANTED_AGENT, "metadata": {"note": NUL_TEXT}},
    ),
    (
        CREATE_THREAD,
        "NUL in a metadata key",
        {"agent_id": GRANTED_AGENT, "metadata": {NUL_TEXT: "x"}},
    ),
    (UPDATE_THREAD, "NUL in a metadata value", {"metadata": {"note": NUL_TEXT}}),
    (ADD_ENTRY, "NUL in text content", {**VALID_MESSAGE, "content": NUL_TEXT}),
    (
        ADD_ENTRY,
        "NUL in a content part",
        {**VALID_MESSAGE, "content": [{"type": "text", "text": NUL_TEXT}]},
    ),
    (ADD_ENTRY, "NUL in metadata", {**VALID_MESSAGE, "metadata": {"note": NUL_TEXT}}),
    (
        ADD_ENTRY,
        "NUL in a tool call",
        {"role": "assistant", "tool_calls": [{"id": "call-1", "name": NUL_TEXT}]},
    ),
    (
        ADD_ENTRY,
        "NUL in a tool result",
        {"type": "tool_result", "role": "tool", "tool_results": [{"output": NUL_TEXT}]},
    ),
    (ADD_ENTRY, "NUL in an event", {"type": "label", "event": {"label": NUL_TEXT}}),
]
AWKWARD_QUERIES: list[tuple[str, str, dict[str, Any]]] = [
    (LIST_THREADS, "NUL in a metadata filter value", {"metadata": '{"userId": "a\\u0000b"}'}),
]

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]

SCHEMA = schemathesis.openapi.from_wsgi(SCHEMA_URL, application)


def load_operations() -> dict[str, APIOperation]:
    """The schema's operations by label; an operation schemathesis cannot read fails here."""
    operations = {}
    for result in SCHEMA.get_all_operations():
        if isinstance(result, Err):
            raise result.err()
        operations[result.ok().label] = result.ok()
    return operations


OPERATIONS = load_operations()


def mix_known_values(values: Any, known: dict[str, list[str]]) -> st.SearchStrategy[Any]:
    """``values`` as generated, except that each field named in ``known`` is one of the
    known values or the generated one. Anything not an object stays as generated."""
    if not isinstance(values, dict):
        return st.just(values)
    return st.fixed_dictionaries(
        {
            name: st.sampled_from([*known[name], value]) if name in known else st.just(value)
            for name, value in values.items()
        }
    )


def as_valid_message(body: dict[str, Any]) -> dict[str, Any]:
    kept = {name: value for name, value in body.items() if name not in {"event", "tool_calls"}}
    return {**kept, **VALID_MESSAGE}


@SCHEMA.hook
def flatmap_path_parameters(context: Any, path_parameters: Any) -> st.SearchStrategy[Any]:
    return mix_known_values(path_parameters, KNOWN_VALUES)


@SCHEMA.hook
def flatmap_body(context: Any, body: Any) -> st.SearchStrategy[Any]:
    if context.operation.label == ADD_ENTRY and isinstance(body, dict):
        bodies = st.sampled_from([as_valid_message(body), body])
        return bodies.flatmap(lambda chosen: mix_known_values(chosen, KNOWN_VALUES))
    return mix_known_values(body, KNOWN_VALUES)


@SCHEMA.hook
def flatmap_query(context: Any, query: Any) -> st.SearchStrategy[Any]:
    known = {"leaf_id": ENTRY_IDS, "agent_id": KNOWN_VALUES["agent_id"]}
    # ``before`` is an entry id on a branch's path but a date-time on the entry list.
    if context.operation.path.endswith("/path/"):
        known["before"] = ENTRY_IDS
    return mix_known_values(query, known)


def write_fixed_memory() -> None:
    """The rows every request sees.

    ``st-main`` (agent-1, userId ana): root -> call (a tool call) -> tool result -> label
    event, the active leaf; and a second branch off the root, ending in a redacted message.
    ``st-hidden`` belongs to agent-2, which the key is not granted.
    """
    main = ThreadFactory(id=THREAD_ID, agent_id=GRANTED_AGENT, metadata={"userId": "ana"})
    root = EntryFactory(id=ROOT_ID, thread=main, content="Hello")
    EntryFactory(
        id=CALL_ID,
        thread=main,
        role=Role.ASSISTANT.value,
        content="",
        tool_calls=[{"id": "call-1", "name": "lookup", "arguments": {"q": "x"}}],
    )
    EntryFactory(
        id=TOOL_ID,
        thread=main,
        type=EntryType.TOOL_RESULT.value,
        role=Role.TOOL.value,
        content="42",
        tool_call_id="call-1",
    )
    EntryFactory(
        id=LABEL_ID,
        thread=main,
        type=EntryType.LABEL.value,
        role=None,
        content=None,
        event={"label": "checkpoint"},
    )
    branch = EntryFactory(id=BRANCH_ID, thread=main, parent=root, activate=False)
    EntryFactory(id=REDACTED_ID, thread=main, parent=branch, activate=False)
    services.redact_entry(REDACTED_ID, reason="test data")
    hidden = ThreadFactory(id=HIDDEN_THREAD_ID, agent_id=OTHER_AGENT)
    EntryFactory(id=HIDDEN_ENTRY_ID, thread=hidden)


def call_and_validate_in_savepoint(
    case: schemathesis.Case, headers: dict[str, str]
) -> schemathesis.Response:
    """Send ``case`` and run the checks; whatever the request wrote is rolled back."""
    savepoint = transaction.savepoint()
    # Throttling stays on; every request starts with none counted.
    cache.clear()
    try:
        return case.call_and_validate(headers=headers, checks=CHECKS)
    finally:
        transaction.savepoint_rollback(savepoint)


def make_case(
    label: str,
    path_parameters: dict[str, str],
    query: dict[str, str] | None,
    body: dict[str, Any] | None,
) -> schemathesis.Case:
    operation = OPERATIONS[label]
    if body is None:
        return operation.Case(path_parameters=path_parameters, query=query)
    return operation.Case(
        path_parameters=path_parameters, query=query, body=body, media_type="application/json"
    )


def operations_with_path_ids() -> list[tuple[str, list[str]]]:
    """(label, names of its path parameters) of each operation that has some."""
    return [
        (label, [parameter.name for parameter in operation.path_parameters])
        for label, operation in sorted(OPERATIONS.items())
        if list(operation.path_parameters)
    ]


def awkward_requests() -> Iterator[Any]:
    """(operation label, path parameters, query, body) with one awkward value each."""
    for label, path_names in operations_with_path_ids():
        for name in path_names:
            for what, value in AWKWARD_PATH_IDS.items():
                path = {**{n: VALID_PATH_IDS[n] for n in path_names}, name: value}
                yield pytest.param(
                    label, path, None, VALID_BODIES.get(label), id=f"{label} {what} in {name}"
                )
    for label, what, body in AWKWARD_BODIES:
        path = {"thread_id": THREAD_ID} if "{thread_id}" in label else {}
        yield pytest.param(label, path, None, body, id=f"{label} {what}")
    for label, what, query in AWKWARD_QUERIES:
        yield pytest.param(label, {}, query, None, id=f"{label} {what}")


@pytest.fixture
def api_key_headers(db: None) -> dict[str, str]:
    api_key, key = APIKey.objects.create_key(name="schemathesis")
    assert isinstance(api_key, APIKey)
    Grant.objects.create(api_key=api_key, agent_id=GRANTED_AGENT)
    return {"Authorization": f"Api-Key {key}"}


@pytest.fixture
def fixed_memory(db: None) -> None:
    write_fixed_memory()


@pytest.fixture
def connection_kept_across_requests() -> Iterator[None]:
    # Django closes the connection when a request starts and finishes (CONN_MAX_AGE is 0),
    # which would end the test's transaction; its test client disconnects the same receiver.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_generated_requests_are_answered_as_the_schema_documents(
    label: str,
    api_key_headers: dict[str, str],
    fixed_memory: None,
    connection_kept_across_requests: None,
) -> None:
    # given
    operation = OPERATIONS[label]
    cases = st.one_of(
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
    )

    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(case=cases)
    def answered_as_documented(case: schemathesis.Case) -> None:
        # when / then
        call_and_validate_in_savepoint(case, api_key_headers)

    answered_as_documented()


@pytest.mark.parametrize(("label", "path_parameters", "query", "body"), list(awkward_requests()))
def test_awkward_values_are_answered_as_the_schema_documents(
    label: str,
    path_parameters: dict[str, str],
    query: dict[str, str] | None,
    body: dict[str, Any] | None,
    api_key_headers: dict[str, str],
    fixed_memory: None,
    connection_kept_across_requests: None,
) -> None:
    # given
    case = make_case(label, path_parameters, query, body)
    # when / then
    call_and_validate_in_savepoint(case, api_key_headers)


@pytest.mark.parametrize(("label", "path_names"), operations_with_path_ids())
def test_the_request_behind_the_awkward_ids_succeeds_with_valid_ids(
    label: str,
    path_names: list[str],
    api_key_headers: dict[str, str],
    fixed_memory: None,
    connection_kept_across_requests: None,
) -> None:
    # given
    path_parameters = {name: VALID_PATH_IDS[name] for name in path_names}
    case = make_case(label, path_parameters, None, VALID_BODIES.get(label))
    # when
    response = call_and_validate_in_savepoint(case, api_key_headers)
    # then
    assert 200 <= response.status_code < 300, response.text
