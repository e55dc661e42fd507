"""A loopback HTTP server that speaks the model providers' wire formats.

``ModelStub("openai")`` answers ``POST /v1/chat/completions`` as OpenAI (and every
OpenAI-compatible server) does, ``ModelStub("anthropic")`` ``POST /v1/messages``,
``ModelStub("google")`` ``POST /<version>/models/<model>:generateContent``. It records every
request and answers ``"answer to: <last message>"`` unless replies were scripted with
``script()``: those are used first, one per request, to cut, fail, stall or send a bad body.
The server itself is ``tests.loopback_stub.LoopbackStub``.
"""

from __future__ import annotations

import json
from typing import Any

from tests.loopback_stub import LoopbackStub, RecordedRequest, Reply

__all__ = ["ModelStub", "RecordedRequest", "Reply"]

# Each wire's base URL below the stub's root, as the LLM BASE_URL setting gives it.
BASE_PATHS = {"openai": "/v1", "anthropic": "", "google": ""}
# Header that makes the OpenAI and Anthropic SDKs wait 1 ms before a retry, not 0.5 s or more.
QUICK_RETRY = {"retry-after-ms": "1"}


class ModelStub(LoopbackStub):
    """Use as a context manager: the server runs inside the ``with`` block."""

    BASE_PATHS = BASE_PATHS

    def body(
        self,
        text: str | None,
        *,
        truncated: bool = False,
        model: str = "stub-model",
        usage: tuple[int, int] | None = (11, 7),
    ) -> dict[str, Any]:
        """An answer in this wire's format; ``text`` None leaves the answer without text."""
        if self.wire == "openai":
            message: dict[str, Any] = {"role": "assistant", "content": text}
            body: dict[str, Any] = {
                "id": "chatcmpl-stub",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "length" if truncated else "stop",
                    }
                ],
            }
            if usage is not None:
                body["usage"] = {
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                    "total_tokens": sum(usage),
                }
            return body
        if self.wire == "anthropic":
            body = {
                "id": "msg_stub",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [] if text is None else [{"type": "text", "text": text}],
                "stop_reason": "max_tokens" if truncated else "end_turn",
                "stop_sequence": None,
            }
            if usage is not None:
                body["usage"] = {"input_tokens": usage[0], "output_tokens": usage[1]}
            return body
        parts = [] if text is None else [{"text": text}]
        body = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": "MAX_TOKENS" if truncated else "STOP",
                    "index": 0,
                }
            ],
            "modelVersion": model,
        }
        if usage is not None:
            body["usageMetadata"] = {
                "promptTokenCount": usage[0],
                "candidatesTokenCount": usage[1],
                "totalTokenCount": sum(usage),
            }
        return body

    def last_text(self, request: RecordedRequest) -> str:
        """The text of the last message one recorded request sent."""
        if self.wire == "google":
            return str(request.body["contents"][-1]["parts"][-1]["text"])
        content = request.body["messages"][-1]["content"]
        if isinstance(content, list):
            return str(content[-1]["text"])
        return str(content)

    def answer(self, request: RecordedRequest) -> tuple[int, bytes]:
        """The normal answer to ``request``."""
        routes = {
            "openai": request.path == "/v1/chat/completions",
            "anthropic": request.path == "/v1/messages",
            "google": request.path.startswith(("/v1/models/", "/v1beta/models/"))
            and request.path.endswith(":generateContent"),
        }
        if not routes[self.wire]:
            return 404, json.dumps({"error": {"message": f"no route {request.path}"}}).encode()
        if self.wire == "google":
            model = request.path.split("/models/", 1)[1].removesuffix(":generateContent")
        else:
            model = request.body["model"]
        body = self.body(f"answer to: {self.last_text(request)}", model=model)
        return 200, json.dumps(body).encode()
