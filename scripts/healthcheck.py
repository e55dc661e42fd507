"""Health check of the web container: exit 0 when the server answers HTTP at all.

Any status below 500 counts: a 400 for a Host header outside ``DJANGO_ALLOWED_HOSTS`` still
shows that gunicorn and Django are up, and so does the redirect to HTTPS of a production
setting (it is not followed: nothing inside the container speaks TLS). Usage:
``python scripts/healthcheck.py URL``.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def server_answers(url: str, timeout: float = 5.0) -> bool:
    try:
        opener = urllib.request.build_opener(NoRedirects)
        with opener.open(url, timeout=timeout) as response:
            return int(response.status) < 500
    except urllib.error.HTTPError as error:
        return error.code < 500
    except OSError:
        return False


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/admin/login/"
    sys.exit(0 if server_answers(target) else 1)
