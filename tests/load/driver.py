"""The load driver: every client of a tenancy (``tests/load/tenancy.py``) at once, each in
a thread with a connection of its own (``tests/load/client.py``), and what they saw merged
into one ``LoadRun`` (``tests/load/records.py``) for the report (``tests/load/report.py``)
and the checks made on the database after the run (``tests/load/integrity.py``).

Shared by the load test (``tests/load/test_load.py``, against the test's live server) and
the benchmark (``bench/load.py``, against gunicorn). It speaks HTTP only: what it knows
of the server is the API's documented answers.
"""

from __future__ import annotations

import threading
import time

import httpx

from tests.load.client import SHARED_LABEL, LoadClient, ThreadDirectory
from tests.load.records import ClientLog, CreatedThread, LoadRun, merge
from tests.load.tenancy import Tenancy

SHARED_THREADS = 4
# A request answered after this many seconds counts as failed (status 0).
REQUEST_TIMEOUT = 60.0


def create_shared_threads(http: httpx.Client, tenancy: Tenancy) -> list[CreatedThread]:
    """The shared agent's threads, made before the clients start (not counted)."""
    principal = tenancy.clients[0][0]
    made = []
    for number in range(SHARED_THREADS):
        thread_id = f"{tenancy.run}-shared-t{number}"
        body = {
            "id": thread_id,
            "agent_id": tenancy.shared_agent,
            "metadata": {"userId": tenancy.shared_user},
        }
        response = http.post(
            "threads/", json=body, headers={"Authorization": principal.authorization}
        )
        if response.status_code != 201:
            raise RuntimeError(
                f"Could not create {thread_id}: {response.status_code} {response.text}"
            )
        made.append(
            CreatedThread(thread_id, tenancy.shared_agent, tenancy.shared_user, SHARED_LABEL)
        )
    return made


def run_load(
    base_url: str, tenancy: Tenancy, requests_per_client: int, *, seed: int = 0
) -> LoadRun:
    """Every client of ``tenancy`` makes ``requests_per_client`` requests to the API at
    ``base_url`` (the URL the API is mounted at), all clients at once, each in a thread
    with a connection of its own; returns what they saw and how long it took."""
    base = base_url.rstrip("/") + "/"
    with httpx.Client(base_url=base, timeout=REQUEST_TIMEOUT) as setup:
        shared = create_shared_threads(setup, tenancy)
    directory = ThreadDirectory()
    count = len(tenancy.clients)
    start = threading.Barrier(count + 1)
    logs: list[ClientLog | None] = [None] * count
    crashes: list[BaseException] = []

    def work(number: int) -> None:
        with httpx.Client(base_url=base, timeout=REQUEST_TIMEOUT) as http:
            client = LoadClient(number, tenancy, shared, directory, http, requests_per_client, seed)
            start.wait()
            try:
                logs[number] = client.run()
            except BaseException as error:  # a bug of the driver: reported, not swallowed
                crashes.append(error)
                logs[number] = client.log

    workers = [
        threading.Thread(target=work, args=(n,), name=f"load-client-{n}") for n in range(count)
    ]
    for worker in workers:
        worker.start()
    start.wait()
    started = time.perf_counter()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - started
    if crashes:
        raise RuntimeError(f"{len(crashes)} load clients crashed") from crashes[0]
    return LoadRun(
        tag=tenancy.run,
        clients=count,
        requests_per_client=requests_per_client,
        seconds=seconds,
        shared_threads=shared,
        log=merge([log for log in logs if log is not None]),
    )
