"""Each cycle re-reads the SQL truth: a fact changed in the source database reaches the next
cycle's probes as a new answer version, with the old answer kept as stale."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, select, text

from groundwatch.adapters.bus.memory import MemoryBus
from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.tables import AnswerVersionRow
from groundwatch.contracts import Topics
from groundwatch.demo import demo_dataset
from groundwatch.runtime.refresh import answer_refresher
from groundwatch.stages.generator.stage import GeneratorStage

pytestmark = pytest.mark.integration


async def test_changed_source_fact_starts_a_new_answer_version(tmp_path: Path) -> None:
    domain, groups = demo_dataset(k=1, cohorts=("short",))
    group = next(
        g
        for g in groups
        if g.sql.startswith("SELECT") and len(g.params) == 1 and g.answer.types[0].value == "text"
    )
    store = make_engine(f"sqlite:///{tmp_path}/gw.db")
    create_schema(store)
    from prometheus_client import Counter

    changes = Counter("changes", "test", registry=CollectorRegistry())
    bus, topics = MemoryBus(), Topics("v.")
    worker = GeneratorStage(
        bus, topics, [group], ["t"], refresh=answer_refresher(domain.db_url, store, changes.inc)
    )
    await worker.run_cycle()

    # Change the fact in the source database (a writable connection of the test's own).
    src = create_engine(domain.db_url)
    select_list = group.sql.split("SELECT", 1)[1].split("FROM", 1)[0].strip()
    table = group.sql.split("FROM", 1)[1].split()[0]
    where = group.sql.split("WHERE", 1)[1]
    with src.begin() as conn:
        conn.execute(
            text(f"UPDATE {table} SET {select_list} = 'Changed Value' WHERE {where}"), group.params
        )
    src.dispose()

    await worker.run_cycle()
    probes = [topics.probes.decode(r.value) for r in bus.records(topics.probes.name)]
    first, second = probes[0].expected, probes[-1].expected
    assert first.version == 1 and second.version == 2
    assert second.values == ["Changed Value"] and second.stale_values == [first.values]
    assert worker.state.runs[-1].answers_changed == 1 and changes._value.get() == 1
    with store.connect() as conn:
        row = conn.execute(select(AnswerVersionRow)).one()
    assert row.version == 2 and row.answer["values"] == ["Changed Value"]
    store.dispose()
