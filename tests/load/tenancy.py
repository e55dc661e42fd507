"""Who the clients of a load run act for.

Each client holds two principals, as a product's frontend and one of its services would:

- ``c<n>a``: a Django user sending its DRF token, granted every user of its own agent;
- ``c<n>b``: a service's API key, granted its own agent for two named users only.

Both are also granted a shared agent, whose threads every client writes to at once: those
threads are where concurrent writers meet on one row (the thread's ``seq`` and active
leaf). A principal's label is written into every text it writes, so an answer holding
another principal's label is a leak.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast


@dataclass(frozen=True)
class Principal:
    label: str
    authorization: str
    agent_id: str
    # The users of the threads it creates, all within its grant.
    user_ids: tuple[str, ...]


@dataclass(frozen=True)
class Tenancy:
    run: str
    # clients[n] holds the principals client n acts for.
    clients: tuple[tuple[Principal, ...], ...]
    shared_agent: str
    shared_user: str

    @property
    def principals(self) -> list[Principal]:
        return [principal for client in self.clients for principal in client]


def make_tenancy(clients: int, run: str = "load") -> Tenancy:
    """Users, a token each, API keys and their grants, written through the ORM: ``clients``
    clients of two principals each. ``run`` prefixes every name, so two runs in one
    database never share a principal, agent or thread."""
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token
    from rest_framework_api_key.models import APIKey

    from cogitator_memory.access.models import Grant

    shared_agent = f"{run}-shared"
    shared_user = f"{run}-shared-user"
    made: list[tuple[Principal, ...]] = []
    for number in range(clients):
        label = f"c{number}a"
        user = User.objects.create_user(f"{run}-{label}")
        token = Token.objects.create(user=user)
        own_agent = f"{run}-{label}"
        Grant.objects.create(user=user, agent_id=own_agent, user_ids=None)
        Grant.objects.create(user=user, agent_id=shared_agent, user_ids=None)
        person = Principal(
            label=label,
            authorization=f"Token {token.key}",
            agent_id=own_agent,
            user_ids=(f"{run}-{label}-u1", f"{run}-{label}-u2"),
        )

        label = f"c{number}b"
        made_key, key = APIKey.objects.create_key(name=f"{run}-{label}")
        api_key = cast(APIKey, made_key)
        service_agent = f"{run}-{label}"
        service_users = (f"{run}-{label}-u1", f"{run}-{label}-u2")
        Grant.objects.create(api_key=api_key, agent_id=service_agent, user_ids=list(service_users))
        Grant.objects.create(api_key=api_key, agent_id=shared_agent, user_ids=None)
        service = Principal(
            label=label,
            authorization=f"Api-Key {key}",
            agent_id=service_agent,
            user_ids=service_users,
        )
        made.append((person, service))
    return Tenancy(run=run, clients=tuple(made), shared_agent=shared_agent, shared_user=shared_user)
