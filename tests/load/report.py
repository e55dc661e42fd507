"""Figures of a load run by route: requests, errors, p50 and p95 latency, and the table and
lines they are printed as."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tests.load.client import ROUTES
from tests.load.records import LoadRun


@dataclass(frozen=True)
class RouteFigures:
    route: str
    requests: int
    errors: int
    p50_ms: float
    p95_ms: float


def percentile(ordered: Sequence[float], share: float) -> float:
    """The nearest-rank percentile of sorted samples: the smallest sample that at least
    ``share`` of the samples do not exceed."""
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else 0.0


def route_figures(run: LoadRun) -> list[RouteFigures]:
    """One row per route that was requested, in the driver's order, then "all"."""
    errors: dict[str, int] = {}
    for failure in run.log.failures:
        errors[failure.route] = errors.get(failure.route, 0) + 1
    rows = []
    for route in (*ROUTES, "all"):
        latencies = sorted(ms for name, _status, ms in run.log.samples if route in (name, "all"))
        if not latencies:
            continue
        errored = sum(errors.values()) if route == "all" else errors.get(route, 0)
        rows.append(
            RouteFigures(
                route=route,
                requests=len(latencies),
                errors=errored,
                p50_ms=round(percentile(latencies, 0.50), 1),
                p95_ms=round(percentile(latencies, 0.95), 1),
            )
        )
    return rows


def table(rows: Iterable[RouteFigures]) -> str:
    lines = [f"{'route':<16} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8} {'errors':>6}"]
    lines += [
        f"{row.route:<16} {row.requests:>8} {row.p50_ms:>8.1f} {row.p95_ms:>8.1f} {row.errors:>6}"
        for row in rows
    ]
    return "\n".join(lines)


def p95_lines(rows: Iterable[RouteFigures]) -> list[str]:
    """``entries.create: 1200 requests, p95 38 ms`` for each route."""
    return [f"{row.route}: {row.requests} requests, p95 {row.p95_ms:.0f} ms" for row in rows]
