"""The processes ``bench/load.py`` serves the API with, as a deployment runs them: gunicorn
(``project.wsgi``) and a Celery worker (prefork) on the machine's Redis, each with the
settings of ``bench/load_settings.py`` and the environment the bench gives, logging to a
file under ``bench/.data/``; stopped, and the Redis keys of the run deleted, afterwards."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import redis
from benchdb import BENCH_DIR, DATA_DIR, ROOT

START_SECONDS = 60.0
STOP_SECONDS = 20.0


@dataclass(frozen=True)
class Server:
    pid: int
    log_path: Path
    base_url: str = ""

    def cpu_seconds(self) -> float | None:
        """CPU time (user and system) of the process and every process under it so far,
        from /proc; None where there is no /proc."""
        return tree_cpu_seconds(self.pid)


def tree_cpu_seconds(root: int) -> float | None:
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for stat in proc.glob("[0-9]*/stat"):
        try:
            # The command name (field 2) is in parentheses and may hold spaces.
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        used[pid] = (int(fields[11]) + int(fields[12])) / ticks
    tree, grown = {root}, True
    while grown:
        children = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= children
        grown = bool(children)
    return sum(used.get(pid, 0.0) for pid in tree)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def child_environment(settings: Mapping[str, str]) -> dict[str, str]:
    """This process's environment with ``settings``, the bench's settings module and the
    repository and bench/ importable."""
    return {
        **os.environ,
        **settings,
        "DJANGO_SETTINGS_MODULE": "load_settings",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH_DIR)]),
    }


@contextmanager
def running(name: str, command: list[str], settings: Mapping[str, str]) -> Iterator[Server]:
    """``command`` in a subprocess from the repository root. Stopped with SIGTERM (then
    SIGKILL) on the way out."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    log_path = DATA_DIR / f"load-{name}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=child_environment(settings),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        yield Server(process.pid, log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def gunicorn(settings: Mapping[str, str], workers: int) -> Iterator[Server]:
    """gunicorn serving ``project.wsgi`` with ``workers`` sync workers on a free port of
    127.0.0.1, once it answers."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "project.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--no-control-socket",
        "--timeout",
        "120",
    ]
    base = f"http://127.0.0.1:{port}"
    with running("gunicorn", command, settings) as server:
        wait_for_http(base + "/api/memory/threads/", server.log_path)
        yield Server(server.pid, server.log_path, base)


def wait_for_http(url: str, log_path: Path) -> None:
    """Until ``url`` answers at all (401 without credentials is an answer)."""
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            httpx.get(url, timeout=5)
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"gunicorn did not answer in {START_SECONDS:.0f} s; its log:\n"
                    + log_path.read_text()[-5000:]
                ) from None
            time.sleep(0.2)


@contextmanager
def celery_worker(settings: Mapping[str, str], concurrency: int, name: str) -> Iterator[Server]:
    """``celery -A project worker`` with ``concurrency`` prefork processes, reading the
    default queue of the bench's settings, once it is ready."""
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "project",
        "worker",
        "--pool=prefork",
        f"--concurrency={concurrency}",
        # No cluster chatter: mingle alone waits a second for peers at start-up.
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
        "--loglevel=INFO",
        "--hostname",
        f"{name}@%h",
    ]
    with running("worker", command, settings) as server:
        log_path = server.log_path
        deadline = time.monotonic() + START_SECONDS
        while " ready." not in log_path.read_text():
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"The Celery worker was not ready in {START_SECONDS:.0f} s; its log:\n"
                    + log_path.read_text()[-5000:]
                )
            time.sleep(0.2)
        yield server


def remove_run_keys(broker_url: str, queue: str) -> int:
    """Delete what the run left in Redis: its queue and bindings, and the task results
    kept in its database (the bench's own; other databases are not touched). Returns how
    many keys went."""
    client = redis.Redis.from_url(broker_url, socket_timeout=5)
    try:
        keys = [
            *client.scan_iter(match=f"*{queue}*"),
            *client.scan_iter(match="celery-task-meta-*"),
        ]
        for key in client.scan_iter(match="_kombu.binding.*"):
            members = [member for member in client.smembers(key) if queue.encode() in member]
            if members:
                client.srem(key, *members)
        if keys:
            client.delete(*keys)
        # Expiry times kombu keeps of binding sets; drop those of sets no longer there.
        deadlines = "_kombu.binding_deadlines"
        for member in client.zrange(deadlines, 0, -1):
            if not client.exists(b"_kombu.binding." + member):
                client.zrem(deadlines, member)
        return len(keys)
    finally:
        client.close()
