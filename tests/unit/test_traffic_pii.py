"""Masking of personal data in users' free text: what goes, and the facts that must stay."""

from __future__ import annotations

import pytest

from groundwatch.core.traffic.pii import redact


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("write to jane.doe+rag@mail.example.co.uk today", "write to [email] today"),
        ("call +44 20 7946 0958", "call [phone]"),
        ("call (020) 7946 0958.", "call [phone]."),
        ("or 555-123-4567", "or [phone]"),
        ("SSN 123-45-6789", "SSN [id]"),
        ("NI AB123456C", "NI [id]"),
        ("IBAN GB82 WEST 1234 5698 7654 32", "IBAN [id]"),
    ],
)
def test_personal_data_is_masked(text: str, masked: str) -> None:
    assert redact(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "Rotterdam has 320 berths",
        "a population of 12345678 in 2020",
        "opened on 1926-11-11 at 10.30",
        "Route 66 and City5, 3.14 and 1,234,567",
        "who is the captain of the Pacific Heron",
    ],
)
def test_facts_the_judge_reads_are_kept(text: str) -> None:
    assert redact(text) == text
