"""The knowledge graph at scale: 2-hop neighbourhoods and shortest paths on a large graph,
and node writes through ``MemoryGraph.add_node``.

Run by hand from the repository root::

    .venv/bin/python bench/graph.py [--quick] [--db sqlite|postgres|both]

One scope holds a random graph of 100,000 nodes and 500,000 edges (``--quick``: 10,000 and
50,000), written with ``bulk_create`` (a graph this size through ``add_edge`` would take
an hour and measure the writes, not the walks): every node has about ten edges, a few
hubs many more (a preferential pick for a fifth of the edges' ends), three relations, and
a tenth of the edges suggested (a walk of active edges skips them). A second scope holds
a copy of a thousand nodes and their edges, so every hop's scope check has rows to refuse.
On PostgreSQL the script runs ``ANALYZE`` after building.

Measured: ``neighbourhood(depth=2)`` from 300 random nodes (defaults: ``max_nodes`` 50,
``fan_out`` 25), ``shortest_path(max_depth=4)`` between 100 random pairs, and 1,000
``add_node`` calls (each a new node with an alias, a property and one quote of an entry,
sequential, one transaction each), then 1,000 such nodes through ``add_nodes`` in batches of
50. The last line of stdout is one JSON object; ``traversal_met`` is the 2-hop p95 at most
50 ms on PostgreSQL, ``node_writes_met`` at least 300 node writes a second in batches (one
transaction a node is bound by the disk's commit: an INSERT and COMMIT alone took 10 ms
on PostgreSQL with ``fsync`` on the machine of RESULTS.md).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from typing import Any

from benchdb import database_opener, measure_databases, percentiles, setup_django

SIZES = (100_000, 500_000)
QUICK_SIZES = (10_000, 50_000)
OTHER_SCOPE_NODES = 1_000
RELATIONS = ("knows", "works_at", "lives_in")
WALKS = 300
PATHS = 100
NODE_WRITES = 1_000
NODES_PER_BATCH = 50
BATCH = 5_000
TRAVERSAL_P95_MS = 50.0
NODE_WRITES_PER_S = 300.0
SEED = 20261202


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build(nodes: int, edges: int) -> tuple[list[str], Any]:
    """The graph of the main scope (node ids returned) and a small one beside it."""
    from django.db import transaction
    from django.utils import timezone

    from cogitator_memory.grants import MemoryScope
    from cogitator_memory.graph.models import GraphEdge, GraphNode
    from cogitator_memory.graph.rules import scope_key_of

    rng = random.Random(SEED)
    now = timezone.now()
    scopes = [MemoryScope(agent_id="bench-agent", user_id="u-1"), MemoryScope("bench-agent", "u-2")]

    def node_rows(scope: MemoryScope, count: int) -> list[Any]:
        key = scope_key_of(scope)
        return [
            GraphNode(
                id=f"gnode_{scope.user_id}_{index:07d}",
                agent_id=scope.agent_id,
                user_id=scope.user_id,
                scope_key=key,
                type="entity",
                name=f"Node {index}",
                key=f"node {index}",
                trust="user",
                status="active",
                created_at=now,
                updated_at=now,
            )
            for index in range(count)
        ]

    def edge_rows(scope: MemoryScope, ids: list[str], count: int) -> list[Any]:
        key = scope_key_of(scope)
        seen: set[tuple[str, str, str]] = set()
        rows: list[Any] = []
        ends: list[str] = []
        while len(rows) < count:
            source = rng.choice(ids)
            # A fifth of the ends picked among ends picked before: a few hubs, as in
            # graphs people and places make.
            target = rng.choice(ends) if ends and rng.random() < 0.2 else rng.choice(ids)
            relation = rng.choice(RELATIONS)
            if source == target or (source, target, relation) in seen:
                continue
            seen.add((source, target, relation))
            ends.append(target)
            rows.append(
                GraphEdge(
                    id=f"gedge_{scope.user_id}_{len(rows):07d}",
                    agent_id=scope.agent_id,
                    user_id=scope.user_id,
                    scope_key=key,
                    source_id=source,
                    target_id=target,
                    relation=relation,
                    weight=round(rng.random(), 3),
                    trust="user",
                    status="suggested" if rng.random() < 0.1 else "active",
                    created_at=now,
                    updated_at=now,
                )
            )
        return rows

    sizes = ((nodes, edges), (OTHER_SCOPE_NODES, OTHER_SCOPE_NODES * edges // nodes))
    for scope, (node_count, edge_count) in zip(scopes, sizes, strict=True):
        with transaction.atomic():
            made = node_rows(scope, node_count)
            for start in range(0, len(made), BATCH):
                GraphNode.objects.bulk_create(made[start : start + BATCH])
            ids = [row.id for row in made]
            rows = edge_rows(scope, ids, edge_count)
            for start in range(0, len(rows), BATCH):
                GraphEdge.objects.bulk_create(rows[start : start + BATCH])
                if start % (BATCH * 20) == 0:
                    log(f"  {scope.user_id}: {start + BATCH} of {len(rows)} edges")
        if scope is scopes[0]:
            main_ids = ids
    return main_ids, scopes[0]


def time_calls(call: Any, arguments: list[Any]) -> tuple[list[float], list[int]]:
    """Milliseconds of each call and the size of what it returned."""
    samples: list[float] = []
    sizes: list[int] = []
    for argument in arguments:
        started = time.perf_counter()
        found = call(argument)
        samples.append((time.perf_counter() - started) * 1000)
        sizes.append(found)
    return samples, sizes


def node_writes(scope: Any) -> dict[str, Any]:
    """Nodes written one a transaction (``add_node``) and in batches (``add_nodes``)."""
    from cogitator_memory.graph import MemoryGraph
    from cogitator_memory.items.statements import NewEvidence
    from cogitator_memory.threads import services as threads

    thread = threads.create_thread(agent_id=scope.agent_id, metadata={"userId": scope.user_id})
    entry = threads.add_entry(
        thread.pk, role="user", content="Ada Lovelace works at the Analytical Engine office."
    )
    graph = MemoryGraph()

    def node(index: int) -> dict[str, Any]:
        return {
            "name": f"Written {index}",
            "type": "person",
            "aliases": [f"W{index}"],
            "properties": {"index": index},
            "evidence": [NewEvidence("Ada Lovelace works", entry.pk)],
            "trust": "user",
        }

    started = time.perf_counter()
    for index in range(NODE_WRITES):
        graph.add_node(scope, **node(index))
    one_seconds = time.perf_counter() - started
    started = time.perf_counter()
    for first in range(NODE_WRITES, 2 * NODE_WRITES, NODES_PER_BATCH):
        graph.add_nodes(scope, [node(index) for index in range(first, first + NODES_PER_BATCH)])
    batch_seconds = time.perf_counter() - started
    return {
        "node_writes": NODE_WRITES,
        "one_per_transaction_per_s": round(NODE_WRITES / one_seconds, 1),
        "batch": NODES_PER_BATCH,
        "batched_per_s": round(NODE_WRITES / batch_seconds, 1),
    }


def measure(database: str, quick: bool) -> dict[str, Any]:
    os.environ.pop("CELERY_BROKER_URL", None)
    nodes, edges = QUICK_SIZES if quick else SIZES
    opener = database_opener(database, prefix="graph", pg_name="bench_graph")
    results: dict[str, Any] = {"database": database, "nodes": nodes, "edges": edges}
    with opener() as url:
        setup_django(url)
        from django.db import connection

        from cogitator_memory.graph import MemoryGraph

        log(f"{database}: building {nodes} nodes and {edges} edges")
        started = time.perf_counter()
        ids, scope = build(nodes, edges)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        results["build_seconds"] = round(time.perf_counter() - started, 1)
        graph = MemoryGraph()
        rng = random.Random(SEED + 1)
        starts = [rng.choice(ids) for _ in range(WALKS)]
        # A few walks first: the first queries warm the caches and the plans.
        for node in starts[:10]:
            graph.neighbourhood(node, depth=2)
        log(f"{database}: {WALKS} 2-hop neighbourhoods")
        samples, sizes = time_calls(
            lambda node: len(graph.neighbourhood(node, depth=2).nodes), starts
        )
        results["two_hop_ms"] = percentiles(samples)
        results["two_hop_nodes_mean"] = round(sum(sizes) / len(sizes), 1)
        pairs = [(rng.choice(ids), rng.choice(ids)) for _ in range(PATHS)]
        log(f"{database}: {PATHS} shortest paths")

        def path_length(pair: tuple[str, str]) -> int:
            found = graph.shortest_path(pair[0], pair[1], max_depth=4)
            return -1 if found is None else len(found.edges)

        samples, lengths = time_calls(path_length, pairs)
        results["shortest_path_ms"] = percentiles(samples)
        results["paths_found"] = sum(1 for length in lengths if length >= 0)
        log(f"{database}: {NODE_WRITES} node writes")
        results["writes"] = node_writes(scope)
    p95 = results["two_hop_ms"][1]
    results["traversal_met"] = p95 <= TRAVERSAL_P95_MS
    results["node_writes_met"] = results["writes"]["batched_per_s"] >= NODE_WRITES_PER_S
    return results


def main() -> None:
    measured = measure_databases(__file__, __doc__.split("\n\n")[0], measure)
    if measured is None:
        return
    _args, results = measured
    print(
        f"{'database':<9} {'nodes':>7} {'edges':>7} {'2-hop p50':>9} {'p95 ms':>7} "
        f"{'nodes/walk':>10} {'path p50':>8} {'p95 ms':>7} {'found':>5} "
        f"{'writes/s 1':>10} {'batched':>8}"
    )
    for database, row in results.items():
        print(
            f"{database:<9} {row['nodes']:>7} {row['edges']:>7} {row['two_hop_ms'][0]:>9} "
            f"{row['two_hop_ms'][1]:>7} {row['two_hop_nodes_mean']:>10} "
            f"{row['shortest_path_ms'][0]:>8} {row['shortest_path_ms'][1]:>7} "
            f"{row['paths_found']:>5} "
            f"{row['writes']['one_per_transaction_per_s']:>10} {row['writes']['batched_per_s']:>8}"
        )
    postgres = results.get("postgres")
    summary = {
        "traversal_met": bool(postgres and postgres["traversal_met"]),
        "node_writes_met": all(row["node_writes_met"] for row in results.values()),
        "databases": results,
    }
    print(json.dumps(summary, default=str))


if __name__ == "__main__":
    main()
