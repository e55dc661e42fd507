"""Compaction: a thread's old history replaced, for readers, by a summary.

Nothing is deleted. A compaction entry (``type="compaction"``) at the end of the active
branch holds the summary and names the first entry kept verbatim; ``history.py`` reads a
branch through it, ``services.py`` writes it, ``config.py`` says when and how.
"""
