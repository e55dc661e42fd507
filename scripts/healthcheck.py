"""Health check of the web container: exit 0 when the URL answers 200, else 1.

Usage: ``python scripts/healthcheck.py [URL]`` (default ``http://127.0.0.1:8000/health/live``),
or ``python scripts/healthcheck.py --ready`` for ``/health/ready``. It prints the status and
the body (the readiness report), which ``docker inspect`` shows in the container's health log.

The request is one Django accepts from inside the container whatever it serves: its Host is
the first name of ``DJANGO_ALLOWED_HOSTS`` (when that is set and not ``*``), and it says it
came over HTTPS (``X-Forwarded-Proto: https``), which a Django behind a TLS proxy trusts, so
a redirect to HTTPS does not answer it. Redirects are not followed: they fail the check.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from urllib.parse import urlsplit

LIVE_URL = "http://127.0.0.1:8000/health/live"
READY_URL = "http://127.0.0.1:8000/health/ready"
TIMEOUT_SECONDS = 8.0


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def host_header(allowed_hosts: str | None) -> str | None:
    """The first served name of ``DJANGO_ALLOWED_HOSTS``, or None to keep the URL's."""
    for host in (allowed_hosts or "").split(","):
        host = host.strip().lstrip(".")
        if host and host != "*":
            return host
    return None


def check(url: str, timeout: float = TIMEOUT_SECONDS) -> tuple[bool, str]:
    """Whether ``url`` answered 200, and what it answered."""
    headers = {"X-Forwarded-Proto": "https", "Accept": "application/json"}
    host = host_header(os.environ.get("DJANGO_ALLOWED_HOSTS"))
    if host is not None:
        port = urlsplit(url).port
        headers["Host"] = f"{host}:{port}" if port else host
    request = urllib.request.Request(url, headers=headers)
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=timeout) as response:
            body = response.read().decode("utf-8", "replace")
            return int(response.status) == 200, f"{response.status} {body}"
    except urllib.error.HTTPError as error:
        body = error.read().decode("utf-8", "replace")
        location = error.headers.get("Location")
        moved = f" (redirected to {location})" if location else ""
        return False, f"{error.code}{moved} {body}"
    except OSError as error:
        return False, f"no answer: {error}"


def main(arguments: list[str]) -> int:
    if arguments == ["--ready"]:
        url = READY_URL
    elif len(arguments) == 1:
        url = arguments[0]
    elif not arguments:
        url = LIVE_URL
    else:
        print("usage: healthcheck.py [URL | --ready]", file=sys.stderr)
        return 2
    healthy, answer = check(url)
    print(f"{url}: {answer}")
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
