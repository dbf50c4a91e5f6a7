"""Schemathesis against each service's own OpenAPI schema, in-process (ASGI), bounded examples.

Every operation of every service gets generated requests — valid and invalid parameters and
bodies, with and without the bearer token — and must never answer 5xx, must answer in the content
type and shape its schema documents, and must keep health and metrics open.
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
SERVICES = ["generator", "rag-runner", "judge", "analytics", "reference-rag"]


def make_app(name: str, tmp: Path) -> Any:
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
    return rag_app(ReferenceRagSettings(rag_admin_token=TOKEN), dict(CORPUS))


_schemas: dict[str, Any] = {}


def schema_of(name: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Each service's schema once per session (schemathesis keeps the app's lifespan running)."""
    if name not in _schemas:
        app = make_app(name, tmp_path_factory.mktemp(name))
        _schemas[name] = schemathesis.openapi.from_asgi("/openapi.json", app)
    return _schemas[name]


CHECKS = [
    checks.not_a_server_error,
    oa_checks.response_schema_conformance,
    oa_checks.content_type_conformance,
]

# Negative data (wrong types, out-of-range values, malformed bodies) needs operations that take
# input in a query, path or body; the judge, runner and generator have none.
CASES = [(name, GenerationMode.POSITIVE) for name in SERVICES] + [
    ("analytics", GenerationMode.NEGATIVE),
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
    name: str, mode: GenerationMode, tmp_path_factory: pytest.TempPathFactory
) -> None:
    api = schema_of(name, tmp_path_factory)
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
