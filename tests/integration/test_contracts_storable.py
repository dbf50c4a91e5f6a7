"""Whatever a contract accepts, every store accepts (issue 17).

Hypothesis builds judgements from hostile raw input — NUL, lone surrogates, quotes, backslashes,
BOMs, line separators, emoji, strings at every cap, ids at their column's length, timestamps at
the edges of the allowed years — lets the contract take or refuse them (through the bus encoding:
``to_bytes`` and ``decode``, as a consumer sees them), and stores every accepted one through the
analytics store on SQLite *and* PostgreSQL, then reads it back as analytics does after a restart.
Before the fix one NUL in an answer made PostgreSQL refuse the whole batch, forever.
"""

from __future__ import annotations

import string
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from sqlalchemy import Engine, select

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.expected import EXPECTED
from groundwatch.adapters.db.tables import JudgementRow
from groundwatch.contracts import (
    MAX_DOC_ID,
    MAX_TEXT,
    REPLACEMENT,
    DeadLetter,
    Judgement,
    Probe,
    RagResponse,
    Topics,
    has_unstorable,
)
from groundwatch.core.model import Verdict
from groundwatch.core.score_json import scores_from_json
from groundwatch.core.tagging import Tagger
from groundwatch.stages.analytics.observe import observation_from_judgement

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

TOPICS = Topics("t.")

# ------------------------------------------------------------------------------- hostile input
HOSTILE_CHARS = [
    "\x00", "\ud800", "\udfff", "\udbff\udc00"[0], "'", '"', "\\", "%", "_", ";", "\n", "\r",
    "\t", "\x7f", "\x1b", "\u2028", "\u2029", "\ufeff", "\ufffd", "\U0001f600", "é", "ß", "𝔘",
]  # fmt: skip

hostile_text = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.sampled_from(HOSTILE_CHARS), max_size=40),
    st.lists(st.sampled_from(["\x00", "a", "\ud800", "é", "\U0001f600"]), max_size=30).map("".join),
)


def long_text(n: int) -> st.SearchStrategy[str]:
    """Strings exactly at a cap, some multi-byte, some with NUL at the end."""
    return st.sampled_from(["x", "é", "\U0001f600", "\x00"]).map(lambda c: c * n) | st.just(
        "a" * (n - 1) + "\x00"
    )


def any_text(cap: int) -> st.SearchStrategy[str]:
    return hostile_text | long_text(cap)


ID_FIRST = string.ascii_letters + string.digits + "_"
ID_REST = ID_FIRST + ".:@+=-"


def ids(cap: int) -> st.SearchStrategy[str]:
    return st.builds(
        lambda a, b: a + b,
        st.sampled_from(ID_FIRST),
        st.text(alphabet=ID_REST, max_size=cap - 1),
    ) | st.just("z" * cap)


ZONES = [None, UTC, timezone(timedelta(hours=14)), timezone(-timedelta(hours=12, minutes=59))]
timestamps = st.builds(
    lambda d, tz: d.replace(tzinfo=tz),
    st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31, 23, 59)),
    st.sampled_from(ZONES),
)
floats = st.floats(allow_nan=False, allow_infinity=False)
maybe = st.none() | floats


@st.composite
def typed_scores(draw: st.DrawFn) -> dict[str, Any]:
    """Scores of schema version 4 as JSON: some families, any finite values, any tier id."""
    families: dict[str, Any] = {
        "answer": {"k": draw(st.integers(1, 1000)), "exact_match": draw(maybe), "bleu": draw(maybe)},
        "retrieval": {"k": 5, "recall": draw(floats), "precision": draw(floats), "ap": 0.0,
                      "rr": 0.0, "ndcg": draw(floats)},
        "semantic": {"similarity": draw(maybe)},
        "llm_metrics": {"context_relevance": draw(maybe)},
        "reference_free": {"ragas_fact": draw(st.sampled_from(["right", "wrong", "abstained"])),
                           "selfcheck": "not_sampled", "ragas_faithfulness": draw(maybe)},
        "audit": {"tier": draw(ids(32)), "agreed": draw(st.none() | st.booleans())},
        "ragprobe": {"correctness": draw(st.sampled_from(["passed", "failed", "open"]))},
        "rules": {"token_precision": draw(floats), "token_recall": 0.0, "token_f1": 0.0,
                  "stale_version": draw(st.none() | st.integers(0, 64))},
        "llm_call": {"cached": draw(st.booleans()), "latency_s": draw(floats)},
    }  # fmt: skip
    chosen = draw(st.sets(st.sampled_from(sorted(families))))
    return {name: families[name] for name in chosen}


@st.composite
def raw_judgements(draw: st.DrawFn) -> dict[str, Any]:
    """A judgement as a producer might send it: valid shape, hostile content."""
    return {
        "probe_id": str(uuid.uuid4()),  # fresh: the store keeps the first row of a probe id
        "run_id": draw(ids(64)),
        "series": draw(any_text(128)),
        "cycle": draw(st.integers(0, 2**31 - 1)),
        "cycle_started_at": draw(st.none() | timestamps),
        "dataset_id": draw(ids(64)),
        "group_id": draw(ids(64)),
        "form_id": draw(ids(64)),
        "cohort": draw(ids(64)),
        "scenario": draw(ids(32)),
        "target": draw(ids(128)),
        "query": draw(any_text(MAX_TEXT)),
        "expected": {
            "values": draw(st.lists(any_text(MAX_TEXT), max_size=3)),
            "stale_values": draw(st.lists(st.lists(hostile_text, max_size=2), max_size=2)),
            "options": draw(st.none() | st.lists(hostile_text, max_size=3)),
        },
        "group_forms": draw(st.integers(1, 100_000)),
        "relevant_doc_ids": draw(st.lists(any_text(MAX_DOC_ID), max_size=3)),
        "probe_created_at": draw(timestamps),
        "verdict": draw(st.sampled_from(list(Verdict))).value,
        "tier": draw(ids(32)),
        "reason": draw(any_text(MAX_TEXT)),
        "scores": draw(st.dictionaries(ids(64), floats, max_size=3) | typed_scores()),
        "prompt_version": draw(st.none() | ids(32)),
        "answer": draw(st.none() | any_text(MAX_TEXT)),
        "retrieved_ids": draw(st.lists(any_text(MAX_DOC_ID), max_size=3)),
        "error_kind": draw(st.none() | ids(64)),
        "judge_latency_s": draw(st.floats(0, 1e9)),
        "judged_at": draw(timestamps),
    }


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


# ------------------------------------------------------------------------------- the stores
@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[list[Engine]]:
    """One SQLite file and one fresh PostgreSQL database, migrated as analytics migrates them."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"gw_storable_{uuid.uuid4().hex[:10]}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    sqlite_path: Path = tmp_path_factory.mktemp("storable") / "a.db"
    pg = make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    made = [make_engine(f"sqlite:///{sqlite_path}"), make_engine(pg)]
    for engine in made:
        create_schema(engine)
    yield made
    for engine in made:
        engine.dispose()
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raws=st.lists(raw_judgements(), min_size=1, max_size=3))
def test_every_contract_valid_judgement_is_storable_on_sqlite_and_postgres(
    engines: list[Engine], raws: list[dict[str, Any]]
) -> None:
    accepted: list[Judgement] = []
    for raw in raws:
        try:
            j = Judgement.model_validate(raw)
        except ValidationError:
            continue  # refused at the edge: dead-lettered by the consume loop, never stored
        # what a consumer gets from the bus: the encoded message parsed again
        j = TOPICS.judgements.decode(j.to_bytes())
        assert not any(has_unstorable(s) for s in _strings(j.model_dump(mode="json")))
        dirty = any(has_unstorable(s) for s in _strings([raw["answer"], raw["retrieved_ids"]]))
        assert j.answer_sanitized == dirty
        accepted.append(j)
    if not accepted:
        return
    for engine in engines:
        tagger = Tagger()
        observations = [observation_from_judgement(j) for j in accepted]
        tagger.apply_many(observations)
        store = AnalyticsStore(engine)
        store.save(accepted, tagger.tallies())  # raises if the backend refuses anything
        wanted = {str(j.probe_id): j for j in accepted}
        with engine.connect() as conn:
            # the expected answer as every reader reads it: the row's own, else the one
            # stored once in expected_answers that the row references
            rows = conn.execute(
                select(*JudgementRow.__table__.c, EXPECTED.label("full_expected")).where(
                    JudgementRow.probe_id.in_(list(wanted))
                )
            ).all()
        assert len(rows) == len(wanted), engine.dialect.name
        for row in rows:
            j = wanted[row.probe_id]
            assert (row.answer, row.reason, row.query) == (j.answer, j.reason, j.query)
            assert row.retrieved_ids == j.retrieved_ids
            assert row.full_expected == j.expected.model_dump(mode="json")
            assert (row.group_id, row.target, row.scenario) == (j.group_id, j.target, j.scenario)
            assert scores_from_json(row.scores) == j.scores
        # analytics rebuilds its state from these rows after a restart: they must load back
        reloaded = {o.probe_id for o in store.load_observations()}
        assert set(wanted) <= reloaded, engine.dialect.name


# ------------------------------------------------------------------------------- the edge itself
def _judgement(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "probe_id": str(uuid.uuid4()),
        "run_id": "r",
        "dataset_id": "d",
        "group_id": "g",
        "form_id": "f",
        "cohort": "short",
        "target": "t",
        "query": "q",
        "expected": {"values": ["a"]},
        "verdict": "correct",
        "tier": "exact",
    }
    return {**base, **fields}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("group_id", "g" * 65),
        ("group_id", "g\x00"),
        ("group_id", "g h"),
        ("group_id", "../g"),
        ("group_id", ""),
        ("scenario", "s" * 33),
        ("target", "t" * 129),
        ("cohort", "short\n"),
        ("run_id", "r" * 65),
        ("form_id", "f/1"),
        ("tier", "t" * 33),
        ("error_kind", "e\x00"),
        ("prompt_version", "p" * 33),
        ("group_forms", 10**10),
        ("scores", {"f1": float("nan")}),
        ("scores", {f"s{i}": 1.0 for i in range(65)}),
        ("scores", {"audit": {"tier": "t" * 33, "agreed": True}}),
        ("scores", {"audit": {"tier": "bad tier"}}),
        ("scores", {"answer": {"k": 5, "bleu": float("inf")}}),
        ("scores", {"answer": {"k": 1001}}),
        (
            "scores",
            {
                "rules": {
                    "token_precision": 0,
                    "token_recall": 0,
                    "token_f1": 0.0,
                    "stale_version": -1,
                }
            },
        ),
        ("scores", {"reference_free": {"selfcheck": "maybe"}}),
        ("retrieved_ids", ["d"] * 201),
        ("relevant_doc_ids", ["d" * (MAX_DOC_ID + 1)]),
        ("answer", "a" * (MAX_TEXT + 1)),
        ("reason", "r" * (MAX_TEXT + 1)),
        ("expected", {"values": ["a"] * 65}),
        ("expected", {"values": ["a"], "version": 2**31}),
        ("series", "s" * 129),
        ("cycle", 2**31),
        ("judged_at", "0001-01-01T00:00:00+14:00"),
    ],
)
def test_ids_and_sizes_beyond_their_columns_are_refused(field: str, value: Any) -> None:
    with pytest.raises(ValidationError):
        Judgement.model_validate(_judgement(**{field: value}))


def test_nul_in_an_answer_is_replaced_and_flagged_not_refused() -> None:
    """The issue's reproduction: the endpoint's first reply held a NUL."""
    j = Judgement.model_validate(_judgement(answer="The answer is \x00 unknown"))
    assert j.answer == f"The answer is {REPLACEMENT} unknown" and j.answer_sanitized
    wire = TOPICS.judgements.decode(j.to_bytes())
    assert wire == j
    clean = Judgement.model_validate(_judgement(answer="The answer is unknown"))
    assert not clean.answer_sanitized


def test_unstorable_ground_truth_is_replaced_on_both_sides_alike() -> None:
    """A NUL in the source data's answer and the same NUL in the reply still match."""
    j = Judgement.model_validate(
        _judgement(expected={"values": ["a\x00b"], "options": ["\ud800"]}, answer="a\x00b")
    )
    assert j.expected.values == [f"a{REPLACEMENT}b"] and j.expected.options == [REPLACEMENT]
    assert j.answer == j.expected.values[0]


def test_postgres_does_refuse_a_raw_nul(engines: list[Engine]) -> None:
    """The stores under test are the real backends, and PostgreSQL does refuse a raw NUL (so
    the property test would fail without the contract's replacement)."""
    from sqlalchemy import insert
    from sqlalchemy.exc import DataError

    dialects = sorted(e.dialect.name for e in engines)
    assert dialects == ["postgresql", "sqlite"]
    (pg,) = [e for e in engines if e.dialect.name == "postgresql"]
    row = {
        "probe_id": str(uuid.uuid4()),
        "run_id": "r",
        "target": "t",
        "cohort": "c",
        "scenario": "s",
        "dataset_id": "d",
        "group_id": "g",
        "form_id": "f",
        "query": "q",
        "verdict": "correct",
        "tier": "exact",
        "answer": "a\x00b",
        "expected": {},
        "probe_created_at": datetime.now(UTC),
        "judged_at": datetime.now(UTC),
    }
    with pytest.raises(DataError), pg.begin() as conn:
        conn.execute(insert(JudgementRow), [row])


# ------------------------------------------------------------------------------- caps vs columns
def _unbounded(node: Any, path: str = "") -> Iterator[str]:
    """Places in a JSON schema where a string, list or map has no size cap."""
    if isinstance(node, dict):
        kind = node.get("type")
        capped = {"maxLength", "format", "enum", "const"} & node.keys()
        if kind == "string" and not capped:
            yield path
        if kind == "array" and "maxItems" not in node:
            yield path
        extra = node.get("additionalProperties")
        if kind == "object" and isinstance(extra, dict) and "maxProperties" not in node:
            yield path
        for k, v in node.items():
            if k != "$defs":
                yield from _unbounded(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _unbounded(v, f"{path}[{i}]")


@pytest.mark.parametrize("model", [Probe, RagResponse, Judgement, DeadLetter])
def test_every_string_list_and_map_of_every_message_is_capped(model: type[Any]) -> None:
    # ``expected`` is the core's model, capped by the contract's validator (refusal test above)
    assert list(_unbounded(model.model_json_schema())) == []


@pytest.mark.parametrize(("model", "row"), [(Judgement, JudgementRow), (Probe, JudgementRow)])
def test_every_cap_fits_its_column(model: type[Any], row: type[Any]) -> None:
    schema = model.model_json_schema()["properties"]
    checked = 0
    for column in row.__table__.columns:
        length = getattr(column.type, "length", None)
        if length is None or column.name not in schema:
            continue
        prop = schema[column.name]
        strings = [p for p in prop.get("anyOf", [prop]) if p.get("type") == "string"]
        if not strings:
            continue  # an enumeration (verdict, status): its values are short and fixed
        # a UUID is written as its 36-character text
        caps = [36 if p.get("format") == "uuid" else p.get("maxLength") for p in strings]
        assert caps and all(c is not None and c <= length for c in caps), (column.name, caps)
        checked += 1
    assert checked >= 8
