"""Keyset pagination of thread lists, the same paging as ``list_threads``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.plumbing import append_meta
from rest_framework.pagination import BasePagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from cogitator_memory.api.serializers.fields import parse_query_integer, schema_pattern
from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.threads.selectors import THREAD_CURSOR_PATTERN, ThreadPage, page_threads

CURSOR_DESCRIPTION = (
    "next_cursor of the previous page: the position after which the page starts, "
    "`<microseconds since 1970-01-01T00:00:00Z>~<thread id>` (updated_at and id of the "
    "last thread seen)."
)


class ThreadCursorPagination(BasePagination):
    """Pages of threads, most recently updated first; ``next_cursor`` (and ``next``, the
    URL of the next page) when more remain."""

    cursor_query_param = "cursor"
    limit_query_param = "limit"

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any]:
        limit: int | None = None
        raw_limit = request.query_params.get(self.limit_query_param)
        if raw_limit is not None:
            limit = parse_query_integer(raw_limit)
            if limit is None:
                raise InvalidInput({"limit": "limit must be a whole number."})
        cursor = request.query_params.get(self.cursor_query_param)
        if cursor is not None and not THREAD_CURSOR_PATTERN.match(cursor):
            # An empty one too: page_threads would read it as the first page.
            raise InvalidInput({"cursor": "This cursor was not made by list_threads."})
        self.request = request
        self.page: ThreadPage = page_threads(queryset, limit=limit, cursor=cursor)
        return self.page.threads

    def get_paginated_response(self, data: Any) -> Response:
        next_url = None
        if self.page.next_cursor:
            next_url = replace_query_param(
                self.request.build_absolute_uri(), self.cursor_query_param, self.page.next_cursor
            )
        return Response({"results": data, "next_cursor": self.page.next_cursor, "next": next_url})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        cursor = {"type": "string", "pattern": schema_pattern(THREAD_CURSOR_PATTERN.pattern)}
        return {
            "type": "object",
            "required": ["results", "next_cursor", "next"],
            "properties": {
                "results": schema,
                "next_cursor": append_meta(cursor, {"nullable": True}),
                "next": append_meta({"type": "string", "format": "uri"}, {"nullable": True}),
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.cursor_query_param,
                "in": "query",
                "required": False,
                "description": CURSOR_DESCRIPTION,
                "schema": {
                    "type": "string",
                    "pattern": schema_pattern(THREAD_CURSOR_PATTERN.pattern),
                },
            },
            {
                "name": self.limit_query_param,
                "in": "query",
                "required": False,
                "description": "Page size.",
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": memory_settings.LIST_THREADS_MAX_LIMIT,
                    "default": memory_settings.LIST_THREADS_DEFAULT_LIMIT,
                },
            },
        ]
