"""Deterministic draws of a share of items, by a hash of each item's key.

The judge audits a share of the rules' verdicts, the semantic and LLM-derived metrics and the
reference-free evaluators score a share of the probes, and the runner samples the same share
for SelfCheck: each stage draws on its own, and must draw the same items as the others.
"""

from __future__ import annotations

import hashlib


def in_share(key: str, share: float) -> bool:
    """Whether the item named ``key`` falls in a ``share`` (0–1) of all items: a hash, so the
    same item is always in or out (reproducible, and a repeat costs a cache hit, not a new
    call), and any two stages that draw with the same key and share draw the same items."""
    if share <= 0.0:
        return False
    if share >= 1.0:
        return True
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < share * 2.0**64
