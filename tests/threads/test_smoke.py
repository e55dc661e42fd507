from cogitator_memory.threads import selectors, services


def test_add_entry_goes_after_the_active_leaf(db):
    # given
    thread = services.create_thread("agent-1")
    first = services.add_entry(thread.id, role="user", content="Hello")
    # when
    second = services.add_entry(thread.id, role="assistant", content="Hi there")
    # then
    assert second.parent_id == first.id
    assert [e.id for e in selectors.get_path(thread.id)] == [first.id, second.id]
