"""Keyset pagination of thread lists, the same paging as ``list_threads``."""

from __future__ import annotations

from typing import Any

from rest_framework.pagination import BasePagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.threads.selectors import ThreadPage, page_threads


class ThreadCursorPagination(BasePagination):
    """Pages of threads, most recently updated first; ``next_cursor`` (and ``next``, the
    URL of the next page) when more remain."""

    cursor_query_param = "cursor"
    limit_query_param = "limit"

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any]:
        raw_limit = request.query_params.get(self.limit_query_param)
        limit: int | None = None
        if raw_limit not in (None, ""):
            try:
                limit = int(str(raw_limit))
            except ValueError as exc:
                raise InvalidInput({"limit": "limit must be a whole number."}) from exc
        cursor = request.query_params.get(self.cursor_query_param) or None
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
        return {
            "type": "object",
            "required": ["results", "next_cursor", "next"],
            "properties": {
                "results": schema,
                "next_cursor": {"type": "string", "nullable": True},
                "next": {"type": "string", "format": "uri", "nullable": True},
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.cursor_query_param,
                "in": "query",
                "required": False,
                "description": "next_cursor of the previous page.",
                "schema": {"type": "string"},
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
