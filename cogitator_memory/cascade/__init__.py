"""Forgetting, redacting and rewinding: ``MemoryCascade`` follows the lineage of what
memory derived from entries when the entries go (``cascade.services``)."""
