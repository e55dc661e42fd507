"""Where the demo is served: the address the demo's commands print in their links.

``make run PORT=8010`` serves on another port; it passes the address on in
``COGITATOR_DEMO_URL`` so the links the commands print are the ones that answer.
"""

from __future__ import annotations

import os

DEFAULT_URL = "http://127.0.0.1:8000"


def demo_url(path: str = "/") -> str:
    """``path`` on the demo's address (``COGITATOR_DEMO_URL``, else the default)."""
    base = (os.environ.get("COGITATOR_DEMO_URL") or DEFAULT_URL).rstrip("/")
    return f"{base}{path}"
