"""An answer that states a value for the asked entity and another for another entity, each in a
clause of its own, is judged by the asked entity's clauses: the other entity's value is neither a
rival of the gold nor, when it equals the gold, the gold said of the asked one."""

from __future__ import annotations

import re

import pytest

from groundwatch.core.judging import judge_deterministic
from groundwatch.core.judging.clauses import asked_entity_text, clauses
from groundwatch.core.model import AnswerType, ColumnDomain, Expected, Verdict

pytestmark = pytest.mark.unit

T, N = AnswerType.TEXT, AnswerType.NUMBER
_WARDS = ColumnDomain.of(["Cardiology", "Cardiology Annex", "Neurology", "Oncology"])


def _count(gold: str) -> Expected:
    return Expected(values=[gold], types=[N], entity_domain=_WARDS, entity_source="ward.ward_name")


def _doctor(gold: str) -> Expected:
    return Expected(
        values=[gold],
        types=[T],
        domain=[ColumnDomain.of(["Amara Diallo", "Bjorn Lind", "Carmen Ruiz"])],
        entity_domain=_WARDS,
        entity_source="ward.ward_name",
    )


def test_clauses_split_at_commas_semicolons_sentence_ends_and_contrasts() -> None:
    assert clauses("For A it is 1, and for B it is 2.") == ["For A it is 1", "and for B it is 2."]
    assert clauses("A has 12,000 beds; B has 3") == ["A has 12,000 beds", "B has 3"]
    assert clauses("A is 1 while B is 2") == ["A is 1", "B is 2"]
    assert clauses("Dr. J. R. Smith is 1") == ["Dr. J. R. Smith is 1"]


def test_the_asked_entity_s_clauses_keep_the_preamble_and_what_continues_them() -> None:
    def names(c: str) -> tuple[bool, bool, bool]:
        words = re.findall(r"\w+", c)
        return "A" in words, "B" in words, bool(set(words) - {"A", "B"})

    text = "According to the records, A is 1; it opened in 2001, but B is 2."
    assert asked_entity_text(text, names) == "According to the records, A is 1, it opened in 2001."
    assert asked_entity_text("A is 1 and B is 2.", names) is None  # no boundary between them
    assert asked_entity_text("A is 1, as is B.", names) == "A is 1."
    assert asked_entity_text("A and B are both 1.", names) is None
    assert asked_entity_text("A is 1, it is small.", names) is None  # no other entity
    assert asked_entity_text("Projects of C: A; B.", names) is None  # a list of names


def test_a_list_of_entities_is_no_statement_of_each() -> None:
    q = "How many doctors work on the ward Neurology?"
    said = "Wards with 2 doctors: Neurology; Oncology."
    assert judge_deterministic(q, _count("2"), said).verdict is Verdict.CORRECT


def test_the_gold_stated_of_another_entity_beside_a_wrong_value_is_wrong() -> None:
    q = "How many doctors work on the ward Neurology?"
    d = judge_deterministic(q, _count("1"), "For Neurology it is 2, while for Oncology it is 1.")
    assert d.verdict is Verdict.INCORRECT and "of the asked entity" in d.reason, d.reason
    # the asked entity's name inside the other's ("Cardiology" in "Cardiology Annex")
    q = "How many doctors work on the ward Cardiology?"
    d = judge_deterministic(q, _count("1"), "For Cardiology it is 2, while for Cardiology Annex "
                            "it is 1.")  # fmt: skip
    assert d.verdict is Verdict.INCORRECT, d.reason


def test_the_right_value_beside_another_entity_s_value_is_right() -> None:
    q = "Who is the head doctor of the ward Neurology?"
    said = "For Neurology it is Carmen Ruiz[1], and for Oncology it is Bjorn Lind."
    d = judge_deterministic(q, _doctor("Carmen Ruiz"), said)
    assert d.verdict is Verdict.CORRECT, d.reason
    said = "For Neurology it is Bjorn Lind, and for Oncology it is Carmen Ruiz."
    assert judge_deterministic(q, _doctor("Carmen Ruiz"), said).verdict is Verdict.INCORRECT
    q = "How many doctors work on the ward Neurology?"
    said = "For Neurology it is 3, and for Oncology it is 2."
    assert judge_deterministic(q, _count("3"), said).verdict is Verdict.CORRECT


def test_without_a_clause_of_its_own_the_other_entity_s_value_decides_nothing() -> None:
    q = "Who is the head doctor of the ward Neurology?"
    said = "Neurology and Oncology have Carmen Ruiz and Bjorn Lind."
    assert judge_deterministic(q, _doctor("Carmen Ruiz"), said).verdict is Verdict.UNDECIDED
