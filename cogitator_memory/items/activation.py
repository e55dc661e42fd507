"""What follows a reviewer's activation of memory items, in the same transaction.

Capabilities above items keep data of active items (the knowledge graph's nodes of their
subjects). Each registers a step once, at start-up (``AppConfig.ready``), and
``ItemTransitions.activate`` calls ``items_activated(item_ids)`` inside its transaction:
a step that raises rolls the activation back, so nothing is activated by half.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["ActivationStep", "activation_steps", "items_activated", "register_activation_step"]

ActivationStep = Callable[[Sequence[str]], object]
"""``step(item_ids)``: the ids of the items just activated (in the open transaction); what
it returns is not read."""

_steps: dict[str, ActivationStep] = {}


def register_activation_step(name: str, step: ActivationStep) -> None:
    """Register a step (again under the same name replaces it)."""
    _steps[name] = step


def activation_steps() -> list[ActivationStep]:
    return list(_steps.values())


def items_activated(item_ids: Sequence[str]) -> None:
    """Run every registered step for these items; call inside the activating transaction."""
    ids = list(dict.fromkeys(item_ids))
    if not ids:
        return
    for step in activation_steps():
        step(ids)
