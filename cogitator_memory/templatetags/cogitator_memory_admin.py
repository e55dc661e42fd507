"""Template tags of the app's admin list pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.contrib.admin.views.main import ChangeList

from cogitator_memory.admin.date_hierarchy import date_hierarchy_links

register = template.Library()


@register.inclusion_tag("admin/date_hierarchy.html")
def indexed_date_hierarchy(cl: ChangeList) -> dict[str, Any]:
    """``{% indexed_date_hierarchy cl %}``: Django's date drill-down, its links found
    with index lookups (``admin.date_hierarchy``)."""
    return date_hierarchy_links(cl)
