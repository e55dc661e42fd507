"""Forgetting and exporting a user read the user's rows through an index, not an agent's
rows or a whole table: each statement below is the one the code sends (captured while it
runs), explained on the database the suite runs on.

On PostgreSQL the plan is made with sequential scans off, so it reads a table through an
index whenever one can serve the statement; the statement passes when an index condition
names the column it looks the user (or thread) up by (another index the planner found as
cheap on a test's few rows is dropped for the plan, see ``plan``). Its closing ORDER BY is
left out of the plan: on the few rows of a test the planner may read the whole table in primary-key
order and filter it rather than sort what an index finds, which it never does once the
table holds more than a page. On SQLite the query plan must
SEARCH the table with an index on that column.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.export.services import agents_holding
from tests.cascade.conftest import World

pytestmark = pytest.mark.django_db

PREFIX = "cogitator_memory_"


def plan(statement: str, table: str, column: str) -> str:
    """The plan of ``statement`` on this database, as text.

    On PostgreSQL, when the plan reads ``table`` through another index than one by
    ``column`` (on a test's few rows, an index of a wider key costs the planner the same),
    that index is dropped and the statement planned again, until it reads by ``column`` or
    no index is left to drop; the drops are rolled back. So the test asks whether an index
    serves the lookup, which is what the planner uses once the table is large."""
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute(f"EXPLAIN QUERY PLAN {statement}")
            return "\n".join(str(row[-1]) for row in cursor.fetchall())
        cursor.execute("SET LOCAL enable_seqscan = off")
        unordered = re.sub(r"\s+ORDER BY [^()]*$", "", statement)
        found = ""
        for _ in range(10):
            cursor.execute(f"EXPLAIN {unordered}")
            found = "\n".join(row[0] for row in cursor.fetchall())
            if reads_by_index(found, table, column):
                break
            used = re.findall(r"(?:Index (?:Only )?Scan using|Bitmap Index Scan on) (\w+)", found)
            if not used or not _dropped(cursor, used):
                break
        transaction.set_rollback(True)
        return found


def _dropped(cursor: Any, indexes: list[str]) -> bool:
    """Drop these indexes, in a savepoint each; whether one was (an index that backs a
    constraint, such as a primary key, cannot be)."""
    dropped = False
    for name in indexes:
        try:
            with transaction.atomic():
                cursor.execute(f'DROP INDEX "{name}"')
            dropped = True
        except Exception:
            continue
    return dropped


def reads_by_index(found: str, table: str, column: str) -> bool:
    if connection.vendor == "postgresql":
        return f"Seq Scan on {table}" not in found and bool(
            re.search(rf"Index Cond: [^\n]*\b{column}\b", found)
        )
    return bool(
        re.search(rf"SEARCH {table} USING (COVERING )?INDEX \w+ \([^)\n]*\b{column}=", found)
    )


def statements_of(run: Callable[[], Any], table: str, where: str) -> list[str]:
    """The SELECTs ``run`` sends that read ``table`` with a WHERE matching ``where``."""
    with CaptureQueriesContext(connection) as queries:
        run()
    chosen = []
    for query in queries.captured_queries:
        sql = query["sql"]
        if not sql.startswith("SELECT") or f'FROM "{table}"' not in sql:
            continue
        condition = sql.split(" WHERE ", 1)[-1]
        # A slot's states and a file's head are read by their slot or path, and what a
        # scope sees (its rows or those shared wider) by its agent: their own indexes.
        if re.search(r'"(subject_id|path)" = | IS NULL OR ', condition):
            continue
        if re.search(where, condition):
            chosen.append(sql)
    return chosen


def forget_ana_everywhere(world: World) -> None:
    MemoryCascade().delete_user("ana")


def forget_ana_in_the_agent(world: World) -> None:
    MemoryCascade().delete_user("ana", agent_ids=["concierge"])


def delete_anas_chat(world: World) -> None:
    MemoryCascade().delete_thread(world.users["ana"].chat)


def export_agents(world: World) -> None:
    agents_holding("ana")


def move_anas_chat(world: World) -> None:
    get_embedding_store().set_owner(world.users["ana"].chat, "bea")


@pytest.fixture(autouse=True)
def client_side_cursors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads in chunks go through a plain cursor, so their statement is captured too."""
    monkeypatch.setitem(connection.settings_dict, "DISABLE_SERVER_SIDE_CURSORS", True)


USER = r'"user_id" = \'ana\''
AGENT_AND_USER = rf'"agent_id" = \'concierge\' AND [^ ]*{USER}'
THREAD = r'"thread_id" = \'ana-chat\''

CASES = [
    # forgetting a user of every agent: the user's vectors
    (forget_ana_everywhere, "embedding", rf"^[^ ]*{USER}$", "user_id"),
    # forgetting a user of an agent: the user's vectors, files and their heads
    (forget_ana_in_the_agent, "embedding", AGENT_AND_USER, "user_id"),
    (forget_ana_in_the_agent, "memoryfileversion", AGENT_AND_USER, "user_id"),
    (forget_ana_in_the_agent, "memoryfilehead", AGENT_AND_USER, "user_id"),
    (forget_ana_in_the_agent, "memoryitem", AGENT_AND_USER, "user_id"),
    # deleting a thread: the items and files of its own scope
    (delete_anas_chat, "memoryitem", THREAD, "thread_id"),
    (delete_anas_chat, "memoryfileversion", THREAD, "thread_id"),
    (delete_anas_chat, "memoryfilehead", THREAD, "thread_id"),
    # the export: the agents holding anything of the user
    (export_agents, "thread", USER, "user_id"),
    (export_agents, "memoryitem", USER, "user_id"),
    (export_agents, "entity", USER, "user_id"),
    (export_agents, "memoryfileversion", USER, "user_id"),
    (export_agents, "channelsession", USER, "user_id"),
    # a thread moving to another user: its vectors
    (move_anas_chat, "embedding", rf"^[^ ]*{THREAD}", "thread_id"),
]


@pytest.mark.parametrize(
    ("run", "model", "where", "column"),
    CASES,
    ids=[f"{run.__name__}-{model}-{column}" for run, model, _w, column in CASES],
)
def test_a_lookup_by_user_or_thread_reads_through_an_index(
    world: World, run: Callable[[World], None], model: str, where: str, column: str
) -> None:
    table = PREFIX + model
    statements = statements_of(lambda: run(world), table, where)
    assert statements, f"no statement read {table} by {where}"
    for statement in statements:
        found = plan(statement, table, column)
        assert reads_by_index(found, table, column), f"{statement}\n{found}"
