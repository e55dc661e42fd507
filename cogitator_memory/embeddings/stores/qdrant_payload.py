"""How embeddings are kept as Qdrant points: ids, payload keys and filter terms."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import numpy as np

from cogitator_memory.embeddings.models import AGENT_ID_KEY, INDEX_KEY, THREAD_ID_KEY, USER_ID_KEY
from cogitator_memory.embeddings.types import NewEmbedding, StoredEmbedding
from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.jsondata import KEY_PATTERN, json_problem

# Point ids are uuid5(POINT_ID_NAMESPACE, embedding id): the same embedding always lands
# on the same point, in every process and after every restart. Never change it, or
# stored points can no longer be found by their embedding id.
POINT_ID_NAMESPACE = uuid.UUID("5b0c4b1e-7d0e-5c1a-9a55-3f0d2c6a8e41")

# Payload keys.
EMBEDDING_ID = "embeddingId"
SOURCE_TYPE = "source_type"
SOURCE_ID = "source_id"
INDEX = "index"
CONTENT = "content"
METADATA = "metadata"
CREATED_AT = "created_at"
# Qdrant normalises vectors of a cosine collection when they are stored; the length is
# kept so reads give back the vector that was added.
VECTOR_NORM = "vector_norm"
# "key=type:value" for every scalar top-level metadata value, matched as keywords. A
# native match cannot hold the filter's rules: it has no float or null values, and local
# mode compares with Python's ==, where 1 == 1.0 but the server keeps them apart. Here 1
# and 1.0 are one number, and neither is "1" or true, as in the database stores.
METADATA_TERMS = "metadata_terms"
SCOPE_KEYS = (AGENT_ID_KEY, THREAD_ID_KEY, USER_ID_KEY)

# Points read or deleted per request: bounds the size of one scroll or delete call.
PAGE_SIZE = 1000
# Sources replaced per lookup when a batch is added: one filter of this many
# (source type, source id, index) alternatives.
REPLACE_LOOKUP_SIZE = 100
# A stored cosine can fall a rounding error below the one computed for the threshold;
# the search asks Qdrant for a little more and then applies the threshold exactly.
THRESHOLD_SLACK = 1e-6


def point_id(embedding_id: str) -> str:
    """The Qdrant point id of an embedding id."""
    return str(uuid.uuid5(POINT_ID_NAMESPACE, embedding_id))


def scope_value(metadata: Mapping[str, Any], key: str) -> str | None:
    value = metadata.get(key)
    return str(value) if value is not None else None


def metadata_term(key: str, value: Any) -> str | None:
    """The keyword a scalar metadata value is matched by; None for objects and arrays."""
    if value is None:
        return f"{key}=null"
    if value is True:
        return f"{key}=true"
    if value is False:
        return f"{key}=false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int | float):
        return f"{key}=number:{json.dumps(value)}"
    if isinstance(value, str):
        return f"{key}=string:{json.dumps(value, ensure_ascii=False)}"
    return None


def filter_term(key: Any, value: Any) -> str:
    """The keyword of one ``filter.metadata`` condition; refuses what the database stores
    refuse, with the same messages."""
    if isinstance(value, dict | list):
        raise InvalidInput(
            {"filter": f"Filter value of {key!r} must be a text, number, boolean or null."}
        )
    problem = json_problem(value)
    if problem:
        raise InvalidInput({"filter": f"Filter value of {key!r}: {problem}"})
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise InvalidInput({"filter": f"Filter key {key!r}: use letters, digits and _ : @ - only."})
    term = metadata_term(key, value)
    if term is None:  # pragma: no cover - every JSON scalar has a term
        raise InvalidInput({"filter": f"Filter value of {key!r} cannot be matched."})
    return term


def point_payload(
    embedding: NewEmbedding, embedding_id: str, norm: float, created_at: datetime
) -> dict[str, Any]:
    """The payload a point of ``embedding`` is stored with."""
    # A deep copy through JSON: nothing the caller holds is shared with the store.
    metadata: dict[str, Any] = json.loads(json.dumps(dict(embedding.metadata)))
    return {
        EMBEDDING_ID: embedding_id,
        SOURCE_TYPE: embedding.source_type,
        SOURCE_ID: embedding.source_id,
        INDEX: str(metadata.get(INDEX_KEY) or ""),
        CONTENT: embedding.content,
        CREATED_AT: created_at.isoformat(),
        VECTOR_NORM: norm,
        **scope_payload(metadata),
    }


def scope_payload(metadata: dict[str, Any]) -> dict[str, Any]:
    """The payload keys that follow a point's metadata: the metadata itself, its filter
    terms and the scope keys (agentId, threadId, userId) as texts."""
    terms = [metadata_term(key, value) for key, value in metadata.items()]
    return {
        METADATA: metadata,
        METADATA_TERMS: [term for term in terms if term is not None],
        **{key: scope_value(metadata, key) for key in SCOPE_KEYS},
    }


def stored_embedding(
    payload: Mapping[str, Any], vector: Any = None, *, dimensions: int | None
) -> StoredEmbedding:
    """The embedding a point holds (its vector given back at the length it was added)."""
    created_at = payload.get(CREATED_AT)
    values: list[float] | None = None
    if vector is not None:
        norm = np.float32(payload.get(VECTOR_NORM) or 1.0)
        values = (np.asarray(vector, dtype=np.float32) * norm).astype(np.float32).tolist()
    return StoredEmbedding(
        id=str(payload[EMBEDDING_ID]),
        source_type=str(payload[SOURCE_TYPE]),
        source_id=str(payload[SOURCE_ID]),
        content=str(payload.get(CONTENT) or ""),
        metadata=json.loads(json.dumps(payload.get(METADATA) or {})),
        dimensions=dimensions or (len(values) if values else 0),
        created_at=datetime.fromisoformat(created_at) if created_at else None,
        vector=values,
    )
