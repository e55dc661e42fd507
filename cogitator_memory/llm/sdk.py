"""What the SDK model clients share: their settings checked once, the SDK imported when a
client is built (with the extra to install named when it is missing), one SDK client per
process, messages and budgets checked before any request, and the error type.

Timeouts and retries are the SDKs' own: each SDK retries 429, 5xx, timeouts and lost
connections with exponential backoff (OpenAI's and Anthropic's honour ``Retry-After``),
``max_retries`` times. What still fails becomes an ``LLMError`` naming the provider and the
HTTP status.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, ClassVar, NoReturn

from django.core.exceptions import ImproperlyConfigured

from cogitator_memory.exceptions import InvalidInput, LLMError
from cogitator_memory.limits import is_whole_number
from cogitator_memory.llm.protocol import (
    Completion,
    Message,
    checked_max_tokens,
    checked_messages,
    checked_prompt_and_model,
)

# Longest excerpt of a provider's error body quoted in an error message.
ERROR_EXCERPT_CHARS = 300

# Sent as the key to a server at BASE_URL when none is configured: the SDKs refuse to start
# without a credential (or go looking for one in the environment), and a local server such
# as Ollama or llama.cpp ignores it.
NO_KEY = "no-key"


def import_sdk(module: str, *, package: str, provider: str, extra: str) -> ModuleType:
    """The SDK's module; ImproperlyConfigured naming the package and the extra that
    installs it when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImproperlyConfigured(
            f"The {provider} model provider needs the {package!r} package "
            f"({type(error).__name__}: {error}); install it with "
            f"pip install 'cogitator-memory[{extra}]'."
        ) from error


def error_detail(body: Any, fallback: str) -> str:
    """The provider's own words in an error body: ``message`` or ``error.message`` (OpenAI,
    Anthropic, Google), ``error`` as text (Ollama), else ``fallback`` shortened."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
        if isinstance(body.get("message"), str) and body["message"]:
            return str(body["message"])
    if isinstance(body, str) and body.strip():
        fallback = body.strip()
    if len(fallback) > ERROR_EXCERPT_CHARS:
        fallback = fallback[:ERROR_EXCERPT_CHARS] + "..."
    return fallback or "no detail"


def reported_model(response: Any, field: str, asked: str) -> str:
    """The model the provider says answered, else the one asked."""
    reported = getattr(response, field, None)
    return reported if isinstance(reported, str) and reported else asked


def token_usage(input_tokens: Any, output_tokens: Any) -> dict[str, int] | None:
    """The two counts as ``usage``, or None unless the provider reported both."""
    counts = (input_tokens, output_tokens)
    if any(isinstance(count, bool) or not isinstance(count, int) for count in counts):
        return None
    return {"input_tokens": input_tokens, "output_tokens": output_tokens}


def split_system(
    prompt: str | None, messages: Sequence[Message]
) -> tuple[str | None, list[Message]]:
    """The system text (the prompt, then each system message, a blank line apart) and the
    other messages in order, for APIs that take the system text apart from the turns."""
    system = [prompt] if prompt else []
    system += [message["content"] for message in messages if message["role"] == "system"]
    turns = [message for message in messages if message["role"] != "system"]
    if not turns:
        raise InvalidInput({"messages": "Give at least one user or assistant message."})
    return ("\n\n".join(system) or None), turns


def _check_whole_number(name: str, value: object, *, minimum: int) -> None:
    if not is_whole_number(value, minimum=minimum):
        raise ImproperlyConfigured(
            f"COGITATOR_MEMORY['LLM']['{name}'] must be a whole number of {minimum} or more, "
            f"got {value!r}."
        )


class SDKSummarizer:
    """Base of the SDK clients: a ``Summarize`` over one provider's official SDK.

    A subclass names its ``provider``, SDK module, extra and default endpoint, and
    implements ``build_client()`` (the SDK's client) and ``complete()`` (one request, its
    answer read into a ``Completion``, the SDK's errors turned into ``LLMError``).
    """

    provider: ClassVar[str]
    # The SDK's module, the distribution that brings it, and the extra that installs that.
    sdk_module: ClassVar[str]
    sdk_package: ClassVar[str]
    extra: ClassVar[str]
    default_base_url: ClassVar[str]

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_tokens: int = 1024,
    ) -> None:
        """Raises ImproperlyConfigured for a missing model, a missing key for the
        provider's own endpoint, a bad number, or an SDK that is not installed."""
        if not model:
            raise ImproperlyConfigured(
                f"The {self.provider} model provider needs COGITATOR_MEMORY['LLM']['MODEL'] "
                "(the model to ask)."
            )
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout < math.inf
        ):
            raise ImproperlyConfigured(
                f"COGITATOR_MEMORY['LLM']['TIMEOUT'] must be a number greater than 0, "
                f"got {timeout!r}."
            )
        _check_whole_number("MAX_RETRIES", max_retries, minimum=0)
        _check_whole_number("MAX_TOKENS", max_tokens, minimum=1)
        self.model = model
        self.api_key = api_key
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        if not api_key and self.is_own_endpoint:
            raise ImproperlyConfigured(
                f"The {self.provider} model provider needs COGITATOR_MEMORY['LLM']['API_KEY'] "
                "for its own endpoint."
            )
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.sdk = import_sdk(
            self.sdk_module, package=self.sdk_package, provider=self.provider, extra=self.extra
        )
        self._client: Any = None
        self._client_pid: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} model={self.model!r} base_url={self.base_url!r}>"

    @property
    def is_own_endpoint(self) -> bool:
        """Whether requests go to the provider's own API rather than a server at BASE_URL."""
        return self.base_url == self.default_base_url.rstrip("/")

    def __call__(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        prompt: str | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """The model's answer to ``messages``; see ``Summarize``."""
        checked = checked_messages(messages)
        budget = self.max_tokens if max_tokens is None else checked_max_tokens(max_tokens)
        prompt, model = checked_prompt_and_model(prompt, model)
        return self.complete(checked, model=model or self.model, prompt=prompt, max_tokens=budget)

    def sdk_client(self) -> Any:
        """The SDK's client of this process, built on first use.

        A client made before a fork (a Celery prefork worker) would share its pooled
        connections with the children, so each process builds its own.
        """
        with self._lock:
            if self._client is None or self._client_pid != os.getpid():
                self._client = self.build_client()
                self._client_pid = os.getpid()
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None and hasattr(client, "close"):
            client.close()

    def build_client(self) -> Any:
        raise NotImplementedError

    def complete(
        self, messages: list[Message], *, model: str, prompt: str | None, max_tokens: int
    ) -> Completion:
        raise NotImplementedError

    def call_generated_sdk(self, create: Callable[[], Any], base_error: type[Exception]) -> Any:
        """``create()`` on the OpenAI or Anthropic SDK, whose errors share their names
        (both are generated from one template): each becomes an ``LLMError``. ``base_error``
        is the SDK's root error class."""
        sdk = self.sdk
        try:
            return create()
        except sdk.APIStatusError as error:
            self.failed(error_detail(error.body, error.response.text), status=error.status_code)
        except sdk.APITimeoutError:
            self.no_answer_in_time()
        except sdk.APIConnectionError as error:
            self.failed(f"could not reach {self.base_url}: {error.__cause__ or error}")
        except (base_error, ValueError) as error:
            # ValueError: a body that is not JSON.
            self.unreadable(error)

    def failed(self, message: str, *, status: int | None = None) -> NoReturn:
        raise LLMError(self.provider, message, status=status)

    def malformed(self, problem: str) -> NoReturn:
        raise LLMError(self.provider, f"malformed response: {problem}")

    def unreadable(self, error: Exception) -> NoReturn:
        """A body the SDK could not read: not JSON, or fields of the wrong types."""
        if isinstance(error, json.JSONDecodeError):
            self.malformed(f"the body is not JSON: {error.doc[:ERROR_EXCERPT_CHARS]!r}")
        self.malformed(f"{type(error).__name__}: {error}")

    def no_answer_in_time(self) -> NoReturn:
        tries = self.max_retries + 1
        raise LLMError(
            self.provider,
            f"no answer from {self.base_url} within {self.timeout:g}s "
            f"({tries} attempt{'s' if tries > 1 else ''})",
        )
