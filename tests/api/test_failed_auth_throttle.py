"""Refused tokens and API keys are throttled per client: past the ``failed_auth`` rate a
client is answered 429 with ``Retry-After`` in the API's error shape, even for a good
token, until the window passes; clients that send good credentials are never counted."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.cache import caches
from django.test import override_settings
from rest_framework.settings import api_settings
from rest_framework.test import APIClient
from rest_framework_api_key.models import APIKey

from cogitator_memory.api.throttling import FailedAuthenticationThrottle
from tests.api.conftest import API, Principal, assert_error, token_client
from tests.test_project import BASE_DIR, project_environment

pytestmark = pytest.mark.django_db

LIMIT = 5
THREADS = f"{API}/threads/"


@pytest.fixture(autouse=True)
def failed_auth_rate() -> Iterator[None]:
    rates = {**api_settings.DEFAULT_THROTTLE_RATES, "failed_auth": f"{LIMIT}/hour"}
    with override_settings(REST_FRAMEWORK={**_rest_framework(), "DEFAULT_THROTTLE_RATES": rates}):
        yield


def _rest_framework() -> dict[str, Any]:
    from django.conf import settings

    return dict(settings.REST_FRAMEWORK)


def from_address(address: str, authorization: str) -> APIClient:
    client = APIClient(REMOTE_ADDR=address)
    client.credentials(HTTP_AUTHORIZATION=authorization)
    return client


def bad_token(address: str) -> APIClient:
    return from_address(address, f"Token {'0' * 40}")


def test_bad_tokens_past_the_limit_are_a_429_with_retry_after() -> None:
    # given
    client = bad_token("203.0.113.7")
    # when
    answers = [client.get(THREADS) for _ in range(LIMIT + 2)]
    # then
    assert [r.status_code for r in answers] == [401] * LIMIT + [429, 429]
    body = assert_error(answers[-1], 429, "throttled")
    assert "refused" in body["message"]
    assert 1 <= int(answers[-1]["Retry-After"]) <= 3600


def test_bad_api_keys_count_as_bad_tokens_do(make_api_key: Callable[..., Any]) -> None:
    # given
    client = from_address("203.0.113.7", "Api-Key nope.nothing")
    # when
    answers = [client.get(THREADS).status_code for _ in range(LIMIT + 1)]
    # then
    assert answers == [401] * LIMIT + [429]


def test_revoked_keys_count_as_refusals(make_api_key: Callable[..., Any]) -> None:
    # given
    _api_key, key = make_api_key("old", {"agent-a": None}, revoked=True)
    client = from_address("203.0.113.7", f"Api-Key {key}")
    # when
    answers = [client.get(THREADS).status_code for _ in range(LIMIT + 1)]
    # then
    assert answers == [401] * LIMIT + [429]


def test_a_throttled_client_is_refused_even_with_a_good_token(ana: Principal) -> None:
    # given a client that guessed too often
    guesser = bad_token("203.0.113.7")
    for _ in range(LIMIT):
        guesser.get(THREADS)
    assert ana.user is not None
    good = token_client(ana.user)
    good.defaults["REMOTE_ADDR"] = "203.0.113.7"
    # when: its next guess is right
    response = good.get(THREADS)
    # then: a right guess cannot be told from a wrong one
    assert_error(response, 429, "throttled")


def test_other_clients_and_good_tokens_are_unaffected(ana: Principal, service_b: Principal) -> None:
    # given a client that guessed too often
    guesser = bad_token("203.0.113.7")
    for _ in range(LIMIT + 3):
        guesser.get(THREADS)
    assert ana.user is not None
    ana_client = token_client(ana.user)
    ana_client.defaults["REMOTE_ADDR"] = "198.51.100.20"
    service = from_address("198.51.100.21", f"Api-Key {service_b.key}")
    # when: other clients with good credentials ask many times
    answers = [ana_client.get(THREADS).status_code for _ in range(LIMIT * 2)]
    answers += [service.get(THREADS).status_code for _ in range(LIMIT * 2)]
    # then
    assert answers == [200] * (LIMIT * 4)


def test_a_client_cannot_escape_by_sending_another_forwarded_for_each_time() -> None:
    # given a client that makes up an X-Forwarded-For per request (no proxy is trusted)
    client = bad_token("203.0.113.7")
    # when
    answers = [
        client.get(THREADS, HTTP_X_FORWARDED_FOR=f"10.0.0.{n}").status_code
        for n in range(LIMIT + 1)
    ]
    # then
    assert answers == [401] * LIMIT + [429]


def test_behind_a_trusted_proxy_the_client_is_the_address_it_forwarded() -> None:
    # given one proxy in front, which appends the address it saw (the client made up the
    # first one)
    def via_proxy(address: str) -> APIClient:
        client = bad_token("10.0.0.1")
        client.defaults["HTTP_X_FORWARDED_FOR"] = f"1.2.3.4, {address}"
        return client

    with override_settings(REST_FRAMEWORK={**_rest_framework(), "NUM_PROXIES": 1}):
        guesser = via_proxy("203.0.113.7")
        # when
        answers = [guesser.get(THREADS).status_code for _ in range(LIMIT + 1)]
        other = via_proxy("198.51.100.20").get(THREADS)
    # then
    assert answers == [401] * LIMIT + [429]
    assert other.status_code == 401


def test_a_request_without_credentials_is_not_counted() -> None:
    # given
    client = APIClient(REMOTE_ADDR="203.0.113.7")
    # when
    answers = [client.get(THREADS).status_code for _ in range(LIMIT + 2)]
    # then
    assert answers == [401] * (LIMIT + 2)
    assert APIKey.objects.count() == 0


# --- shared by every web process ---------------------------------------------------------

REDIS_CACHE_URL = "redis://127.0.0.1:6379/14"

# Another process of the project, with the cache of a deployment (CACHE_URL), sends bad
# tokens from one client address.
GUESS_IN_ANOTHER_PROCESS = """
import json, sys
import django
django.setup()
from rest_framework.test import APIRequestFactory
from cogitator_memory.api.throttling import FailedAuthenticationThrottle
request = APIRequestFactory().get("/", REMOTE_ADDR=sys.argv[1])
throttle = FailedAuthenticationThrottle()
for _ in range(int(sys.argv[2])):
    throttle.record_failure(request)
print(json.dumps({"key": throttle.get_cache_key(request, None)}))
"""


def test_the_counts_of_one_process_hold_in_another_through_the_shared_cache() -> None:
    # given another process that counted a client's refusals in the shared cache
    # an address of this run alone (IPv6's documentation prefix), so runs side by side
    # never share a count
    address = f"2001:db8::{uuid.uuid4().hex[:4]}:{uuid.uuid4().hex[:4]}"
    completed = subprocess.run(
        [sys.executable, "-c", GUESS_IN_ANOTHER_PROCESS, address, str(LIMIT)],
        cwd=BASE_DIR,
        env=project_environment(CACHE_URL=REDIS_CACHE_URL),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    key = json.loads(completed.stdout.strip().splitlines()[-1])["key"]
    redis_cache = {"BACKEND": "django.core.cache.backends.redis.RedisCache"}
    with override_settings(CACHES={"default": {**redis_cache, "LOCATION": REDIS_CACHE_URL}}):
        try:
            # when this process asks for the same client
            response = bad_token(address).get(THREADS)
        finally:
            # only the key of this test goes: the Redis is shared, never flushed
            caches["default"].delete(key)
    # then
    assert_error(response, 429, "throttled")


def test_the_throttle_is_off_without_a_rate() -> None:
    rates = {**api_settings.DEFAULT_THROTTLE_RATES, "failed_auth": None}
    with override_settings(REST_FRAMEWORK={**_rest_framework(), "DEFAULT_THROTTLE_RATES": rates}):
        client = bad_token("203.0.113.7")
        answers = [client.get(THREADS).status_code for _ in range(LIMIT + 2)]
        assert FailedAuthenticationThrottle().rate is None
    assert answers == [401] * (LIMIT + 2)
