"""What the HTTP embedding providers share: a JSON client that retries, and a base class
that batches texts and checks what comes back.

A request answered 429 or 5xx, or one that times out or cannot connect, is tried again
after an exponential backoff with jitter, or after the server's ``Retry-After`` when it
sends one. Any other error status fails at once. Every failure is an
``EmbeddingServiceError`` naming the provider and, where there was one, the HTTP status.

httpx rather than each vendor's SDK: one retry policy, one timeout and one error type for
every provider, the same wire code for OpenAI-compatible servers, and no SDK dependencies
for a project that uses one provider.
"""

from __future__ import annotations

import logging
import math
import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar, NoReturn

import httpx
from django.core.exceptions import ImproperlyConfigured

from cogitator_memory import __version__
from cogitator_memory.exceptions import EmbeddingServiceError
from cogitator_memory.limits import is_whole_number

logger = logging.getLogger(__name__)

# Longest excerpt of an error body quoted in an error message.
ERROR_EXCERPT_CHARS = 300


def is_retryable(status: int) -> bool:
    """Rate limits and server errors pass; other statuses will not change on a retry."""
    return status == 429 or status >= 500


def retry_after_seconds(headers: httpx.Headers, *, now: datetime | None = None) -> float | None:
    """The wait a response asks for, in seconds: ``retry-after-ms`` (OpenAI), else
    ``Retry-After`` as seconds or an HTTP date. None when absent or unreadable."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            value = float(milliseconds) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    header = headers.get("retry-after")
    if header is None:
        return None
    try:
        value = float(header)
    except ValueError:
        pass
    else:
        return max(0.0, value) if math.isfinite(value) else None
    try:
        when = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_seconds(retry: int, *, backoff: float, max_wait: float) -> float:
    """Wait before retry number ``retry`` (0 for the first): ``backoff * 2**retry``, capped
    at ``max_wait``, of which a random half is jitter so clients that failed together do
    not retry together."""
    ceiling = min(max_wait, backoff * 2**retry)
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def error_detail(response: httpx.Response) -> str:
    """The provider's own words for an error response: ``error.message`` (OpenAI, Google),
    ``error`` (Ollama), else the start of the body, else the reason phrase."""
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(payload.get("message"), str):
            return str(payload["message"])
    text = response.text.strip()
    if len(text) > ERROR_EXCERPT_CHARS:
        text = text[:ERROR_EXCERPT_CHARS] + "..."
    return text or response.reason_phrase or "no detail"


class EmbeddingHTTPClient:
    """POSTs JSON to one provider, with a timeout per request and retries."""

    def __init__(
        self,
        provider: str,
        *,
        headers: Mapping[str, str],
        timeout: float,
        max_retries: int,
        backoff: float,
        max_wait: float,
    ) -> None:
        self.provider = provider
        self.headers = {"user-agent": f"cogitator-memory/{__version__}", **headers}
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_wait = max_wait
        # Replaceable, so tests can see the waits without spending them.
        self.sleep: Callable[[float], None] = time.sleep
        self._client: httpx.Client | None = None
        self._client_pid: int | None = None
        self._lock = threading.Lock()

    def post_json(self, url: str, body: Mapping[str, Any]) -> Any:
        """The decoded JSON answer to a POST of ``body`` to ``url``.

        Raises EmbeddingServiceError: a status that is not retried, retries used up, a
        ``Retry-After`` longer than ``max_wait``, or a body that is not JSON.
        """
        retry = 0
        while True:
            status: int | None = None
            requested_wait: float | None = None
            try:
                response = self._http().post(url, json=body)
            except httpx.TimeoutException:
                problem = f"no answer from {url} within {self.timeout:g}s"
            except httpx.TransportError as exc:
                problem = f"could not reach {url}: {exc}"
            else:
                if response.is_success:
                    return self._decode(response)
                status = response.status_code
                problem = error_detail(response)
                if not is_retryable(status):
                    raise EmbeddingServiceError(self.provider, problem, status=status)
                requested_wait = retry_after_seconds(response.headers)
            attempts = retry + 1
            if retry >= self.max_retries:
                raise EmbeddingServiceError(
                    self.provider, f"{problem} (gave up after {attempts} attempts)", status=status
                )
            if requested_wait is not None and requested_wait > self.max_wait:
                # Waiting less than asked would only earn another 429; a caller such as a
                # Celery task can come back later instead.
                raise EmbeddingServiceError(
                    self.provider,
                    f"{problem} (asked to retry after {requested_wait:g}s, more than the "
                    f"{self.max_wait:g}s this client waits)",
                    status=status,
                )
            wait = (
                requested_wait
                if requested_wait is not None
                else backoff_seconds(retry, backoff=self.backoff, max_wait=self.max_wait)
            )
            logger.warning(
                "%s embeddings: %s%s; retry %d of %d in %.2fs",
                self.provider,
                f"HTTP {status}: " if status else "",
                problem,
                retry + 1,
                self.max_retries,
                wait,
            )
            self.sleep(wait)
            retry += 1

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
            self._client = None

    def _http(self) -> httpx.Client:
        # A client made before a fork (a Celery prefork worker) would share its pooled
        # connections with the children, so each process makes its own.
        with self._lock:
            if self._client is None or self._client_pid != os.getpid():
                self._client = httpx.Client(
                    headers=self.headers, timeout=httpx.Timeout(self.timeout)
                )
                self._client_pid = os.getpid()
            return self._client

    def _decode(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            excerpt = response.text[:ERROR_EXCERPT_CHARS]
            raise EmbeddingServiceError(
                self.provider, f"the response is not JSON: {excerpt!r}"
            ) from None


def _positive(name: str, value: object, *, whole: bool) -> None:
    kinds: tuple[type[int] | type[float], ...] = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value <= 0:
        raise ImproperlyConfigured(
            f"COGITATOR_MEMORY['EMBEDDINGS']['{name}'] must be a positive number, got {value!r}."
        )


class HTTPEmbeddingService:
    """Base of the HTTP providers: splits texts into batches, sends each, checks the answer.

    A subclass names its ``provider``, defaults and batch cap, and implements ``url()``,
    ``request_body(batch)`` and ``response_vectors(payload)``.
    """

    provider: str
    default_model: ClassVar[str]
    default_base_url: ClassVar[str]
    # Most texts one request may carry under the provider's API; None for no limit.
    max_batch_size: ClassVar[int | None] = None

    def __init__(
        self,
        *,
        model: str | None = None,
        dimensions: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        batch_size: int = 64,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_wait: float = 30.0,
    ) -> None:
        """``dimensions`` None takes the model's own size, learnt from the first answer.
        ``backoff`` is the first retry's wait in seconds, doubled on each retry up to
        ``max_wait``, which also bounds how long a ``Retry-After`` is obeyed."""
        _positive("TIMEOUT", timeout, whole=False)
        _positive("BATCH_SIZE", batch_size, whole=True)
        if dimensions is not None:
            _positive("DIMENSIONS", dimensions, whole=True)
        if backoff < 0 or max_wait < 0:
            raise ImproperlyConfigured("backoff and max_wait must be 0 or more seconds.")
        if not is_whole_number(max_retries):
            raise ImproperlyConfigured(
                "COGITATOR_MEMORY['EMBEDDINGS']['MAX_RETRIES'] must be a whole number of 0 "
                f"or more, got {max_retries!r}."
            )
        self.model = model or self.default_model
        # What requests ask for; ``dimensions`` is also set from the first answer when
        # this is None, and must then not be sent (some models refuse the parameter).
        self.requested_dimensions = dimensions
        self.dimensions = dimensions
        self.api_key = api_key
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.batch_size = min(batch_size, self.max_batch_size or batch_size)
        self.client = EmbeddingHTTPClient(
            self.provider,
            headers=self.auth_headers(),
            timeout=float(timeout),
            max_retries=max_retries,
            backoff=backoff,
            max_wait=max_wait,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} model={self.model!r} base_url={self.base_url!r}>"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; no request for no texts.

        Raises EmbeddingServiceError when the provider fails or answers with something
        other than one vector of the expected size per text.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string.")
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            payload = self.client.post_json(self.url(), self.request_body(batch))
            vectors.extend(self.checked_vectors(self.response_vectors(payload), len(batch)))
        return vectors

    def close(self) -> None:
        self.client.close()

    def auth_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def url(self) -> str:
        raise NotImplementedError

    def request_body(self, batch: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def response_vectors(self, payload: Any) -> list[Any]:
        """The raw vectors of a decoded answer, in input order (checked afterwards)."""
        raise NotImplementedError

    def malformed(self, problem: str) -> NoReturn:
        raise EmbeddingServiceError(self.provider, f"malformed response: {problem}")

    def checked_vectors(self, raw: list[Any], expected: int) -> list[list[float]]:
        """``raw`` as lists of floats, after checking there is one per text and that all
        have the configured size (or the size of the first vector this service saw)."""
        if len(raw) != expected:
            self.malformed(f"{len(raw)} vectors for {expected} texts")
        vectors = [self._floats(vector, position) for position, vector in enumerate(raw)]
        sizes = {len(vector) for vector in vectors}
        if len(sizes) > 1:
            self.malformed(f"vectors of different sizes {sorted(sizes)}")
        size = sizes.pop() if sizes else None
        if size is not None and self.dimensions is not None and size != self.dimensions:
            self.malformed(f"vectors have {size} dimensions, expected {self.dimensions}")
        if size is not None and self.dimensions is None:
            self.dimensions = size
        return vectors

    def _floats(self, vector: Any, position: int) -> list[float]:
        if not isinstance(vector, list) or not vector:
            self.malformed(f"vector {position} is not a non-empty list of numbers")
        floats: list[float] = []
        for value in vector:
            if isinstance(value, bool) or not isinstance(value, int | float):
                self.malformed(f"vector {position} holds {value!r}, not a number")
            number = float(value)
            if not math.isfinite(number):
                self.malformed(f"vector {position} holds {value!r}")
            floats.append(number)
        return floats


def require_api_key(service: HTTPEmbeddingService, label: str) -> None:
    """Refuse to start without a key when talking to the provider's own endpoint; a
    compatible server or proxy elsewhere may need none."""
    if not service.api_key and service.base_url == service.default_base_url.rstrip("/"):
        raise ImproperlyConfigured(
            f"The {label} embedding provider needs COGITATOR_MEMORY['EMBEDDINGS']['API_KEY']."
        )
