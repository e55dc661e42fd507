"""Recall tests run as the search tests do: on the exact store, with no embedding service
unless they ask (``with_concepts``)."""

from tests.search.conftest import exact_store, with_concepts

__all__ = ["exact_store", "with_concepts"]
