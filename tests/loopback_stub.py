"""A loopback HTTP server for tests of clients that speak a provider's wire format.

Subclasses say which wire formats they speak (``BASE_PATHS``) and how to answer a request
(``answer``). The server records every request and, unless replies were scripted with
``script()``, gives the subclass's answer: scripted replies are used first, one per
request, to fail, stall (``delay``) or send a bad body.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self
from urllib.parse import parse_qs, urlsplit

__all__ = ["LoopbackStub", "RecordedRequest", "Reply"]


@dataclass(frozen=True)
class Reply:
    """A scripted answer. With neither ``json`` nor ``raw`` it is the normal answer,
    sent after ``delay`` seconds (a delay past the client's timeout makes a timeout)."""

    status: int = 200
    json: Any = None
    raw: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    # Header names lower-cased.
    headers: dict[str, str]
    body: Any


class LoopbackStub:
    """Use as a context manager: the server runs inside the ``with`` block."""

    # Each wire's base URL below the stub's root, as a client's BASE_URL setting gives it.
    BASE_PATHS: ClassVar[dict[str, str]] = {}

    def __init__(self, wire: str) -> None:
        if wire not in self.BASE_PATHS:
            raise ValueError(f"unknown wire format {wire!r}")
        self.wire = wire
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # Wakes handlers still sleeping out a scripted delay.
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def root(self) -> str:
        assert self._server is not None, "the stub is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """What the client's BASE_URL setting should be to reach this stub."""
        return self.root + self.BASE_PATHS[self.wire]

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def answer(self, request: RecordedRequest) -> tuple[int, bytes]:
        """The status and body of the normal answer to ``request``."""
        raise NotImplementedError

    def _next_reply(self) -> Reply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                url = urlsplit(self.path)
                request = RecordedRequest(
                    method="POST",
                    path=url.path,
                    query=parse_qs(url.query),
                    headers={name.lower(): value for name, value in self.headers.items()},
                    body=json.loads(raw) if raw else None,
                )
                with stub._lock:
                    stub.requests.append(request)
                reply = stub._next_reply() or Reply()
                if reply.delay and stub._stopping.wait(reply.delay):
                    return
                if reply.raw is not None:
                    status, payload = reply.status, reply.raw
                elif reply.json is not None:
                    status, payload = reply.status, json.dumps(reply.json).encode()
                else:
                    status, payload = stub.answer(request)
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    # The client gave up waiting (a scripted timeout).
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
