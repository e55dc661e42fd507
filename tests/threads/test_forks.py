"""A thread knows its first fork, and ``on_branch`` tells the entries of a branch by it
exactly as a walk from the leaf to the root does."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread
from cogitator_memory.threads.paths import (
    branch_chunks,
    doubling,
    on_branch,
    walk_ids_until,
    walk_up,
)

pytestmark = pytest.mark.django_db


def true_first_fork(thread_id: str) -> int | None:
    """The seq of the earliest entry with two children (0 for two roots), by counting."""
    children: dict[str | None, int] = {}
    for parent in Entry.objects.filter(thread_id=thread_id).values_list("parent_id", flat=True):
        children[parent] = children.get(parent, 0) + 1
    forks = [parent for parent, count in children.items() if count > 1]
    if not forks:
        return None
    seqs = dict(Entry.objects.filter(pk__in=[p for p in forks if p]).values_list("pk", "seq"))
    return min(0 if parent is None else seqs[parent] for parent in forks)


def branch_of(leaf_id: str) -> set[str]:
    return set(walk_ids_until(leaf_id, ""))


def fork_seq(thread_id: str) -> int | None:
    return Thread.objects.values_list("fork_seq", flat=True).get(pk=thread_id)


def test_a_chain_has_no_fork_and_every_entry_is_on_its_branch():
    thread = services.create_thread("agent-f")
    ids = [services.add_entry(thread.pk, role="user", content=f"m{n}").pk for n in range(6)]
    assert fork_seq(thread.pk) is None
    seqs = dict(Entry.objects.filter(thread_id=thread.pk).values_list("pk", "seq"))
    assert on_branch(thread.pk, None, seqs) == set(ids)
    # an older leaf: only it and what came before
    assert on_branch(thread.pk, ids[2], seqs) == set(ids[:3])


def test_writing_under_an_older_entry_marks_it_as_the_first_fork():
    thread = services.create_thread("agent-f")
    first = services.add_entry(thread.pk, role="user", content="a")
    second = services.add_entry(thread.pk, role="assistant", content="b")
    services.add_entry(thread.pk, role="user", content="c")
    services.add_entry(thread.pk, role="user", content="c again", parent_id=second.pk)
    assert fork_seq(thread.pk) == second.seq
    services.add_entry(thread.pk, role="assistant", content="b again", parent_id=first.pk)
    assert fork_seq(thread.pk) == first.seq
    # a later fork leaves the earliest in place
    services.add_entry(thread.pk, role="user", content="c third", parent_id=second.pk)
    assert fork_seq(thread.pk) == first.seq


def test_a_second_root_is_a_fork_at_zero_and_a_cleared_thread_starts_over():
    thread = services.create_thread("agent-f")
    services.add_entry(thread.pk, role="user", content="a")
    services.add_entry(thread.pk, role="user", content="new root", parent_id=None)
    assert fork_seq(thread.pk) == 0
    services.clear_thread(thread.pk)
    assert fork_seq(thread.pk) is None
    services.add_entry(thread.pk, role="user", content="after the clear")
    assert fork_seq(thread.pk) is None


def test_deleting_an_entry_whose_children_join_a_sibling_marks_the_fork():
    thread = services.create_thread("agent-f")
    root = services.add_entry(thread.pk, role="user", content="a")
    middle = services.add_entry(thread.pk, role="assistant", content="b")
    services.add_entry(thread.pk, role="user", content="c")
    services.add_entry(thread.pk, role="user", content="d", parent_id=middle.pk)
    assert fork_seq(thread.pk) == middle.seq
    # the two children of middle move to root, which has no other child: root is the fork
    services.delete_entry(middle.pk)
    assert fork_seq(thread.pk) == root.seq == true_first_fork(thread.pk)


def random_tree(
    rng: random.Random,
    steps: int,
    *,
    fork: float = 0.15,
    delete: float = 0.05,
    root: float = 0.01,
    after_each: Callable[[str], None] | None = None,
) -> tuple[str, list[str]]:
    """A thread grown by appends, writes under older entries (left inactive), deletions
    and second roots, in those shares; ``after_each`` sees the thread after each step."""
    thread = services.create_thread("agent-f").pk
    ids: list[str] = []
    for step in range(steps):
        roll = rng.random()
        if ids and roll < fork:
            ids.append(
                services.add_entry(
                    thread,
                    role="user",
                    content=f"s{step}",
                    parent_id=rng.choice(ids),
                    activate=False,
                ).pk
            )
        elif ids and roll < fork + delete:
            gone = rng.choice(ids)
            services.delete_entry(gone)
            ids.remove(gone)
        elif roll < fork + delete + root:
            ids.append(services.add_entry(thread, role="user", content="root", parent_id=None).pk)
        else:
            ids.append(services.add_entry(thread, role="user", content=f"m{step}").pk)
        if after_each is not None:
            after_each(thread)
    return thread, ids


@pytest.mark.parametrize("seed", range(12))
def test_on_branch_agrees_with_a_walk_to_the_root_on_random_trees(seed: int):
    rng = random.Random(seed)

    def fork_is_never_late(thread: str) -> None:
        marked = fork_seq(thread)
        real = true_first_fork(thread)
        # never later than the real first fork (earlier only costs a longer walk)
        assert real is None or (marked is not None and marked <= real), (marked, real)

    thread_id, ids = random_tree(
        rng, 40, fork=0.25, delete=0.05, root=0.02, after_each=fork_is_never_late
    )
    thread = Thread.objects.get(pk=thread_id)
    seqs = dict(Entry.objects.filter(thread_id=thread.pk).values_list("pk", "seq"))
    for leaf in [None, *rng.sample(ids, min(5, len(ids)))]:
        active = Thread.objects.get(pk=thread.pk).active_leaf_id
        start = leaf if leaf is not None else active
        expected = branch_of(start) if start is not None else set()
        candidates = dict(rng.sample(sorted(seqs.items()), min(15, len(seqs))))
        assert on_branch(thread.pk, leaf, candidates) == expected & set(candidates)


@pytest.mark.parametrize("seed", range(10))
def test_branch_chunks_read_a_branch_as_a_walk_does(seed: int):
    rng = random.Random(seed)
    # the first seeds never fork (a chain read by seq alone), the rest do
    if seed < 3:
        thread = services.create_thread("agent-f").pk
        ids = [services.add_entry(thread, role="user", content=f"m{n}").pk for n in range(30)]
    else:
        thread, ids = random_tree(rng, 60)
    fork = fork_seq(thread)
    assert (fork is None) == (seed < 3)
    for start in rng.sample(ids, min(6, len(ids))):
        expected = [entry.pk for entry in walk_up(start, 10_000)]
        for first, most in ((1, 1), (2, 5), (7, 7), (64, 256)):
            chunks = list(branch_chunks(thread, start, fork, doubling(first, most)))
            read = [entry.pk for chunk in chunks for entry in chunk]
            assert read == expected, (first, most)
            # every chunk but the last is as long as asked
            sizes = doubling(first, most)
            assert [len(chunk) for chunk in chunks[:-1]] == [next(sizes) for _ in chunks[:-1]]
    assert list(branch_chunks(thread, None, fork, doubling(4, 4))) == []


def test_a_leaf_of_another_thread_finds_nothing():
    one = services.create_thread("agent-f")
    other = services.create_thread("agent-f")
    mine = services.add_entry(one.pk, role="user", content="a")
    theirs = services.add_entry(other.pk, role="user", content="b")
    assert on_branch(one.pk, theirs.pk, {mine.pk: mine.seq}) == set()
