"""Secret values in settings: the one check every settings class (service or adapter) shares.

A leaf module, so an adapter's settings (the LLM client's) and a service's use the same rule
without the adapter importing the runtime.
"""

from __future__ import annotations

_PLACEHOLDERS = {"changeme", "change-me", "todo", "xxx"}


def reject_placeholder(value: str | None) -> str | None:
    """Validators use this for secrets: a copied example value must not reach production."""
    if value is not None and value.strip().lower() in _PLACEHOLDERS:
        raise ValueError("is a placeholder; set a real value")
    return value
