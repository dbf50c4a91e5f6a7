"""A schema's own abbreviations, written out from its own longer names — and the words that are
none, left alone."""

from __future__ import annotations

import pytest

from groundwatch.core.generation.abbreviations import abbreviates, of_schema, schema_abbreviations
from groundwatch.core.generation.naming import humanize, spoken_as
from groundwatch.core.generation.schema import ColumnInfo, ForeignKeyInfo, SchemaInfo, TableInfo
from groundwatch.core.model import AnswerType

pytestmark = pytest.mark.unit


def _table(name: str, *cols: str, fks: tuple[tuple[str, str], ...] = ()) -> TableInfo:
    return TableInfo(
        name,
        tuple(ColumnInfo(c, AnswerType.TEXT) for c in cols),
        (cols[0],),
        tuple(ForeignKeyInfo(c, t, "id") for c, t in fks),
    )


def test_a_key_names_what_its_abbreviation_stands_for() -> None:
    schema = SchemaInfo(
        (
            _table("departments", "id", "title"),
            _table("purchase_orders", "id", "po_no"),
            _table("patients", "pat_id", "surname"),
            _table("medications", "med_cd", "label"),
            _table(
                "visits",
                "id",
                "major_dept_id",
                "pat_id",
                "po_id",
                "med_cd",
                fks=(
                    ("major_dept_id", "departments"),
                    ("pat_id", "patients"),
                    ("po_id", "purchase_orders"),
                    ("med_cd", "medications"),
                ),
            ),
        )
    )
    found = schema_abbreviations(schema, is_word=lambda w: w in {"pat", "med"})
    # a key's evidence holds even for a word of English (pat, med): it points at the table
    assert found == {
        "dept": "department",
        "pat": "patient",
        "po": "purchase order",
        "med": "medication",
    }


def test_the_names_evidence_expands_a_word_one_longer_name_is_made_from() -> None:
    schema = SchemaInfo(
        (
            _table("appointments", "id", "appt_dt", "reason"),
            _table("members", "id", "mbr_since", "full_name"),
            _table("stock", "id", "cert_no", "certificate_file", "presc_dt"),
            _table("prescriptions", "id", "note"),
        )
    )
    assert schema_abbreviations(schema) == {
        "appt": "appointment",
        "mbr": "member",
        "cert": "certificate",
        "presc": "prescription",
    }


@pytest.mark.parametrize(
    ("short", "word", "expected"),
    [
        ("prod", "product", True),  # cut short
        ("qty", "quantity", True),  # contracted, first and last letters kept
        ("dept", "department", True),
        ("mgr", "manager", True),
        ("ship", "shipment", False),  # an English ending: ship is a word of its own
        ("ship", "shipper", False),  # a doubled consonant before an ending
        ("book", "booking", False),
        ("pay", "payment", False),
        ("name", "named", False),  # too close: one letter more
        ("qty", "quota", False),  # a contraction keeps the last letter
        ("dpt", "department", True),
        ("emp", "temporary", False),  # first letters differ
    ],
)
def test_abbreviates(short: str, word: str, expected: bool) -> None:
    assert abbreviates(short, word) is expected


def test_no_false_expansions() -> None:
    schema = SchemaInfo(
        (
            # a word of the schema after the cut: post is no short postcode
            _table("addresses", "id", "post", "postcode"),
            # two candidates: emp could be employee or employer
            _table("contracts", "id", "emp", "employee_name", "employer_name"),
            # a table's plural name is a noun (cars), never a cut of cargo
            _table("cars", "id", "cargo"),
            # common short words and prepositions stay (created_at, audit_trail)
            _table("audit_trails", "id", "created_at", "at_risk"),
            # a word the lexicon knows is English: never read as an abbreviation
            _table("notes", "id", "art", "artwork"),
            # a key to a table of another noun says nothing (supervisor_id → employees)
            _table(
                "staff", "id", "supervisor_id", "ward_no", fks=(("supervisor_id", "employees"),)
            ),
        )
    )
    found = schema_abbreviations(schema, is_word=lambda w: w in {"art", "post"})
    assert found == {}, found


def test_questions_say_the_schema_own_long_forms_only_while_worded_for_it() -> None:
    schema = SchemaInfo((_table("appointments", "id", "appt_dt"),))
    assert humanize("appt_dt") == "appt date"  # outside a run: the word list alone
    with spoken_as(of_schema(schema)):
        assert humanize("appt_dt") == "appointment date"
        assert humanize("dept_nm") == "department name"  # the word list still applies
    assert humanize("appt_dt") == "appt date"
    # what introspection found (with the lexicon's guard) is what is used
    recorded = SchemaInfo(schema.tables, abbreviations={})
    with spoken_as(of_schema(recorded)):
        assert humanize("appt_dt") == "appt date"
