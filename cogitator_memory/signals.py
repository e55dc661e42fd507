"""Change signals of threads and entries.

Services send them through ``transaction.on_commit``: a receiver never hears of work that
was rolled back. ``sender`` is the model class (``Entry`` or ``Thread``).
"""

from django.dispatch import Signal

# entry: the Entry as written.
entry_added = Signal()

# entry_id, thread_id: the entry that was spliced out of its branch.
entry_deleted = Signal()

# entry: the Entry after redaction.
entry_redacted = Signal()

# thread_id, entry_ids: the thread emptied and the ids of the entries it lost.
thread_cleared = Signal()

# thread_id, entry_ids: the thread deleted and the ids of the entries that went with it.
thread_deleted = Signal()

# item_id: the memory item written (a new state, or the state a statement merged into);
# sender is MemoryItem.
item_written = Signal()
