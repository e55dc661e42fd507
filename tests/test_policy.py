"""The write and read rules of ``policy``: who may reach an agent's memory of a user, and a
refusal that names the field the caller gave the user in."""

from __future__ import annotations

import pytest

from cogitator_memory import policy
from cogitator_memory.exceptions import NoGrant
from cogitator_memory.grants import Grants

NARROW = Grants.for_agents(["agent-a"], {"agent-a": ["u2"]})


def test_a_write_refused_for_no_user_asks_for_a_threads_metadata_user_id():
    with pytest.raises(NoGrant) as refused:
        policy.require_write(NARROW, "agent-a", None)
    assert refused.value.message == (
        "Your grant for agent 'agent-a' names users: give metadata.userId."
    )
    assert refused.value.user_field == "metadata.userId"


@pytest.mark.parametrize(
    ("check", "options"),
    [(policy.require_write, {"user_field": "user_id"}), (policy.require_read, {})],
)
def test_a_refusal_for_no_user_names_the_field_the_caller_gives(check, options):
    with pytest.raises(NoGrant) as refused:
        check(NARROW, "agent-a", None, **options)
    assert refused.value.message == "Your grant for agent 'agent-a' names users: give user_id."
    assert refused.value.user_field == "user_id"


@pytest.mark.parametrize("user_field", ["user_id", "metadata.userId", "scope.user_id"])
def test_refusals_for_another_agent_or_user_read_the_same_whatever_the_field(user_field: str):
    with pytest.raises(NoGrant, match=r"^You have no grant for agent 'agent-b'\.$"):
        policy.require_read(NARROW, "agent-b", "u2", user_field=user_field)
    with pytest.raises(NoGrant, match=r"^You have no grant for user 'u1' of agent 'agent-a'\.$"):
        policy.require_read(NARROW, "agent-a", "u1", user_field=user_field)


def test_trusted_code_and_reached_users_are_never_refused():
    policy.require_read(None, "agent-b", None)
    policy.require_write(Grants.everything(), "agent-b", None)
    policy.require_read(NARROW, "agent-a", "u2")
