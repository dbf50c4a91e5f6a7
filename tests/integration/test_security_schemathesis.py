"""Schemathesis against each service's own OpenAPI schema, in-process (ASGI), bounded examples.

Every operation of every service gets generated requests — valid and invalid parameters and
bodies, with and without the bearer token — and must never answer 5xx, must answer in the content
type and shape its schema documents, and must keep health and metrics open. The analytics service
runs twice: on SQLite, and on a PostgreSQL store holding a stored cycle (PostgreSQL refuses what
SQLite takes, such as a NUL in a text: ``GET /groups/a%00b`` answered 500 there).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import checks
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi import checks as oa_checks

from groundwatch.reference_rag import FaultSwitches
from groundwatch.reference_rag.app import create_app as rag_app
from groundwatch.reference_rag.settings import ReferenceRagSettings
from services.analytics.app import create_app as analytics_app
from services.analytics.settings import AnalyticsSettings
from services.generator.app import create_app as generator_app
from services.generator.settings import GeneratorSettings
from services.judge.app import create_app as judge_app
from services.judge.settings import JudgeServiceSettings
from services.rag_runner.app import create_app as runner_app
from services.rag_runner.settings import RunnerSettings
from tests.unit._rag_corpus import CORPUS

pytestmark = pytest.mark.integration

TOKEN = "schemathesis-token-7f3a9c"
SERVICES = ["generator", "rag-runner", "judge", "analytics", "analytics-postgres", "reference-rag"]


def seeded_pg_store(pg_url: str) -> str:
    """A fresh PostgreSQL database holding one stored demo cycle (30 groups)."""
    import asyncio
    import uuid

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from groundwatch.adapters.targets import CallableTarget, TargetLimits
    from groundwatch.app.embedded import run_embedded
    from groundwatch.demo import demo_dataset
    from groundwatch.stages.runner.lanes import Runner

    name = f"gw_st_{uuid.uuid4().hex[:10]}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    _pg_made.append((pg_url, name))
    url = make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    _, groups = demo_dataset(k=1, cohorts=("short",))
    runner = Runner({"t": CallableTarget(lambda q: {"answer": "No idea."})}, {"t": TargetLimits()})
    asyncio.run(run_embedded(groups[:30], runner, database_url=url))
    return url


def make_app(name: str, tmp: Path, pg_url: str = "") -> Any:
    if name == "generator":
        # no start-up runs; a started continuous loop publishes one small cycle, then waits
        return generator_app(
            GeneratorSettings(bus="memory", runs=0, api_token=TOKEN, sample=5, interval_s=3600)
        )
    if name == "rag-runner":
        return runner_app(RunnerSettings(bus="memory"))
    if name == "judge":
        return judge_app(JudgeServiceSettings(bus="memory"))
    if name == "analytics":
        return analytics_app(AnalyticsSettings(bus="memory", database_url=f"sqlite:///{tmp}/a.db"))
    if name == "analytics-postgres":
        return analytics_app(AnalyticsSettings(bus="memory", database_url=seeded_pg_store(pg_url)))
    return rag_app(ReferenceRagSettings(rag_admin_token=TOKEN), dict(CORPUS))


_schemas: dict[str, Any] = {}
#: (admin URL, database) of the PostgreSQL stores made for the session, dropped at its end
_pg_made: list[tuple[str, str]] = []


@pytest.fixture(scope="module", autouse=True)
def _drop_pg_stores() -> Any:
    yield
    from sqlalchemy import create_engine, text

    for admin_url, name in _pg_made:
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    _pg_made.clear()


def schema_of(name: str, tmp_path_factory: pytest.TempPathFactory, pg_url: str = "") -> Any:
    """Each service's schema once per session (schemathesis keeps the app's lifespan running)."""
    if name not in _schemas:
        app = make_app(name, tmp_path_factory.mktemp(name), pg_url)
        _schemas[name] = schemathesis.openapi.from_asgi("/openapi.json", app)
    return _schemas[name]


CHECKS = [
    checks.not_a_server_error,
    oa_checks.response_schema_conformance,
    oa_checks.content_type_conformance,
]

# Negative data (wrong types, out-of-range values, malformed bodies) needs operations that take
# input in a query, path or body; the judge and the runner have none.
CASES = [(name, GenerationMode.POSITIVE) for name in SERVICES] + [
    ("generator", GenerationMode.NEGATIVE),
    ("analytics", GenerationMode.NEGATIVE),
    ("analytics-postgres", GenerationMode.NEGATIVE),
    ("reference-rag", GenerationMode.NEGATIVE),
]


def strategy(api: Any, mode: GenerationMode) -> Any:
    ops = [r.ok() for r in api.get_all_operations()]
    if mode is GenerationMode.NEGATIVE:
        ops = [op for op in ops if list(op.body) or list(op.query) or list(op.path_parameters)]
    assert ops
    return st.one_of([op.as_strategy(generation_mode=mode) for op in ops])


@pytest.mark.parametrize("name, mode", CASES, ids=[f"{n}-{m.value}" for n, m in CASES])
def test_api_conforms_and_never_fails(
    name: str,
    mode: GenerationMode,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> None:
    pg_url = request.getfixturevalue("pg_url") if name.endswith("-postgres") else ""
    api = schema_of(name, tmp_path_factory, pg_url)
    cases = strategy(api, mode)
    statuses: Counter[int] = Counter()

    @settings(
        max_examples=60,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        case = data.draw(cases)
        # half the writes carry the right token, so guarded operations run past the guard
        if case.method.upper() in ("POST", "PUT") and data.draw(st.booleans()):
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {TOKEN}"}
        response = case.call()
        statuses[response.status_code] += 1
        if name == "reference-rag" and case.path == "/faults":
            # accepted switches (added latency up to 600 s…) would slow every later query
            api.app.state.pipeline.faults = FaultSwitches()
        case.validate_response(response, checks=CHECKS)
        if case.path in ("/healthz", "/metrics"):
            assert response.status_code == 200

    run()
    assert not any(s >= 500 for s in statuses), statuses
    print(f"\nSCHEMATHESIS {name} {mode.value} {dict(sorted(statuses.items()))}")
