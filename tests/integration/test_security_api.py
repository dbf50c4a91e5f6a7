"""API security of the five services, in-process on the embedded bus.

- every endpoint that changes state (found by walking the routes, so a new unguarded one fails
  this test) answers 401 without the bearer token or with a wrong one, 403 when no token is
  configured, and works with the right one;
- health, readiness and metrics stay open;
- no CORS headers are sent unless someone configures CORS;
- secrets — the API token, the admin token, target headers and URL keys, the LLM API key, the
  database password — appear in no log record, response body or error message, through a failing
  target call, a failing LLM call, rejected requests and configuration errors.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.testclient import TestClient

from groundwatch.adapters.llm.client import LlmClient, LlmSettings
from groundwatch.contracts import Probe
from groundwatch.core.model import Expected
from groundwatch.errors import ConfigError
from groundwatch.reference_rag.app import create_app as rag_app
from groundwatch.reference_rag.settings import ReferenceRagSettings
from groundwatch.runtime.settings import load_settings
from groundwatch.stages.judge.tiered import JudgeSettings, build_judge
from groundwatch.stages.runner.factory import make_runner
from services.analytics.app import create_app as analytics_app
from services.analytics.settings import AnalyticsSettings
from services.generator.app import create_app as generator_app
from services.generator.settings import GeneratorSettings
from services.judge.app import create_app as judge_app
from services.judge.settings import JudgeServiceSettings
from services.rag_runner.app import create_app as runner_app
from services.rag_runner.settings import RunnerSettings
from tests.e2e.procs import free_port
from tests.fakes import FakeOpenAIServer, Reply
from tests.unit._rag_corpus import CORPUS

pytestmark = pytest.mark.integration

API_TOKEN = f"api-{uuid.uuid4().hex}"
ADMIN_TOKEN = f"admin-{uuid.uuid4().hex}"
HEADER_SECRET = f"hdr-{uuid.uuid4().hex}"
URL_SECRET = f"url-{uuid.uuid4().hex}"
LLM_KEY = f"sk-{uuid.uuid4().hex}"
DB_PASSWORD = f"pw{uuid.uuid4().hex}"
SECRETS = [API_TOKEN, ADMIN_TOKEN, HEADER_SECRET, URL_SECRET, LLM_KEY, DB_PASSWORD]

#: Non-GET routes that change nothing: the reference RAG's question endpoint is the system under
#: evaluation, called by the runner like any client would.
NOT_STATE_CHANGING = {("reference-rag", "POST", "/query")}


#: A valid body of each state-changing route that takes one (the rest: the reference RAG's)
BODIES: dict[str, object] = {
    "/runs": {"runs": 1},
    "/traffic": [{"target": "shipbot", "question": "rotterdam berths?", "answer": "320"}],
    "/v1/traces": {"resourceSpans": []},
}


def build_apps(tmp: Path, *, tokens: bool = True) -> dict[str, FastAPI]:
    api = API_TOKEN if tokens else None
    return {
        "generator": generator_app(GeneratorSettings(bus="memory", runs=0, api_token=api)),
        "rag-runner": runner_app(RunnerSettings(bus="memory")),
        "judge": judge_app(JudgeServiceSettings(bus="memory")),
        "analytics": analytics_app(
            AnalyticsSettings(
                bus="memory", database_url=f"sqlite:///{tmp}/a-{tokens}.db", api_token=api
            )
        ),
        "reference-rag": rag_app(
            ReferenceRagSettings(rag_admin_token=ADMIN_TOKEN if tokens else None), dict(CORPUS)
        ),
    }


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, TestClient]]:
    tmp = tmp_path_factory.mktemp("apps")
    with (
        TestClient(build_apps(tmp)["generator"]) as gen,
        TestClient(build_apps(tmp)["rag-runner"]) as run,
    ):
        apps = build_apps(tmp)
        with (
            TestClient(apps["judge"]) as jud,
            TestClient(apps["analytics"]) as ana,
            TestClient(apps["reference-rag"]) as rag,
        ):
            yield {
                "generator": gen,
                "rag-runner": run,
                "judge": jud,
                "analytics": ana,
                "reference-rag": rag,
            }


def state_changing(app: FastAPI, name: str) -> list[tuple[str, str]]:
    out = []
    for route in app.routes:
        if isinstance(route, APIRoute):
            for method in sorted((route.methods or set()) - {"GET", "HEAD", "OPTIONS"}):
                if (name, method, route.path) not in NOT_STATE_CHANGING:
                    out.append((method, route.path))
    return out


def token_for(name: str) -> str:
    return ADMIN_TOKEN if name == "reference-rag" else API_TOKEN


def test_state_changing_endpoints_need_the_bearer_token(clients: dict[str, TestClient]) -> None:
    guarded = {
        name: state_changing(c.app, name)  # type: ignore[arg-type]
        for name, c in clients.items()
    }
    assert ("POST", "/runs") in guarded["generator"]
    assert ("POST", "/runs/continuous/start") in guarded["generator"]
    assert ("PUT", "/faults") in guarded["reference-rag"]
    assert {("POST", "/traffic"), ("POST", "/v1/traces")} <= set(guarded["analytics"])
    for name, routes in guarded.items():
        c = clients[name]
        for method, path in routes:
            body = BODIES.get(path, {"top_k": 3})  # a valid body for each
            for headers in (
                {},
                {"Authorization": "Bearer wrong-token"},
                {"Authorization": f"Basic {token_for(name)}"},
                {"Authorization": f"Bearer {token_for(name)}x"},
                {"Authorization": token_for(name)},
            ):
                r = c.request(method, path, headers=headers, json=body)
                assert r.status_code == 401, (name, method, path, headers, r.status_code)
                assert r.headers.get("www-authenticate") == "Bearer"
            ok = c.request(
                method, path, headers={"Authorization": f"Bearer {token_for(name)}"}, json=body
            )
            assert ok.status_code < 400, (name, method, path, ok.status_code, ok.text)
    clients["generator"].post(
        "/runs/continuous/stop", headers={"Authorization": f"Bearer {API_TOKEN}"}
    )


def test_without_a_configured_token_state_changing_endpoints_are_closed(tmp_path: Path) -> None:
    apps = build_apps(tmp_path, tokens=False)
    for name in ("generator", "analytics", "reference-rag"):
        c = TestClient(apps[name])  # no lifespan needed: the guard answers first
        for method, path in state_changing(apps[name], name):
            for headers in ({}, {"Authorization": "Bearer anything"}):
                r = c.request(method, path, headers=headers, json={"top_k": 3})
                assert r.status_code == 403, (name, method, path, r.status_code)


def test_health_readiness_and_metrics_stay_open(clients: dict[str, TestClient]) -> None:
    for name, c in clients.items():
        assert c.get("/healthz").status_code == 200, name
        assert c.get("/readyz").status_code in (200, 503), name  # never 401/403
        m = c.get("/metrics")
        assert m.status_code == 200 and m.headers["content-type"].startswith("text/plain"), name


def test_no_cors_headers_by_default(clients: dict[str, TestClient]) -> None:
    origin = {"Origin": "https://evil.example"}
    for name, c in clients.items():
        for r in (
            c.get("/healthz", headers=origin),
            c.options(
                "/runs" if name == "generator" else "/faults",
                headers={**origin, "Access-Control-Request-Method": "POST"},
            ),
        ):
            leaked = {k for k in r.headers if k.lower().startswith("access-control-")}
            assert not leaked, (name, leaked)


# --------------------------------------------------------------------------- secrets
def assert_no_secret(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"a secret leaked into {where}"


def test_secrets_never_reach_logs_or_errors(
    clients: dict[str, TestClient],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
) -> None:
    caplog.set_level(logging.DEBUG)  # stricter than any deployment: every library's debug lines
    seen: list[str] = []

    # 1. rejected requests: the bodies name no token
    seen.append(clients["generator"].post("/runs", headers={"Authorization": "Bearer x"}).text)
    seen.append(
        clients["reference-rag"].put("/faults", json={}, headers={"Authorization": "Bearer x"}).text
    )

    # 2. failing target calls: a secret header and a secret URL key, against a dead port and a
    #    server that answers 500
    monkeypatch.setenv("GW_SEC_HEADER", HEADER_SECRET)
    monkeypatch.setenv("GW_SEC_URL_KEY", URL_SECRET)
    dead = free_port()
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        f"""
targets:
  - name: dead
    type: http_json
    url: "http://127.0.0.1:{dead}/ask?key=${{GW_SEC_URL_KEY}}"
    headers: {{Authorization: "Bearer ${{GW_SEC_HEADER}}", X-Api-Key: "${{GW_SEC_HEADER}}"}}
    limits: {{retries: 1, backoff_initial_s: 0.01, timeout_s: 5}}
  - name: failing
    type: http_json
    url: "{fake_openai.base_url}/chat/completions?key=${{GW_SEC_URL_KEY}}"
    headers: {{Authorization: "Bearer ${{GW_SEC_HEADER}}"}}
    limits: {{retries: 1, backoff_initial_s: 0.01, timeout_s: 5}}
"""
    )
    fake_openai.script(*[Reply.status_code(500)] * 4)

    async def ask_targets() -> list[str]:
        async with httpx.AsyncClient() as http:
            runner = make_runner(http, targets_file=targets)
            try:
                out = []
                for target in ("dead", "failing"):
                    p = Probe(
                        probe_id=uuid.uuid4(),
                        run_id="r",
                        dataset_id="d",
                        group_id="g",
                        form_id="f",
                        cohort="c",
                        target=target,
                        query="q",
                        expected=Expected(values=["a"]),
                    )
                    resp = await runner.run(p)
                    assert resp.status.value == "error", resp
                    out.append(resp.model_dump_json())
                out.append(repr(runner.snapshot()))
                return out
            finally:
                await runner.aclose()

    seen.extend(asyncio.run(ask_targets()))

    # 3. a failing LLM call with an API key
    fake_openai.script(Reply.status_code(401), Reply.status_code(500), Reply.status_code(500))
    llm = LlmSettings(
        api_key=LLM_KEY,
        base_url=fake_openai.base_url,
        max_retries=1,
        backoff_initial=0.01,
        backoff_max=0.01,
    )
    judge = build_judge(JudgeSettings(llm_enabled=True, llm_cache=False), client=LlmClient(llm))

    async def ask_llm() -> str:
        assert judge.llm is not None
        try:
            decision = await judge.llm.judge("q?", "gold", "an answer the rules cannot decide")
        finally:
            await judge.aclose()
        return repr(decision)

    seen.append(asyncio.run(ask_llm()))
    seen.append(repr(llm) + str(llm.model_dump()))

    # 4. configuration errors with secrets set next to the bad value
    monkeypatch.setenv("GW_API_TOKEN", API_TOKEN)
    monkeypatch.setenv("GW_PORT", "not-a-port")
    with pytest.raises(ConfigError) as err:
        load_settings(GeneratorSettings)
    seen.append(str(err.value))
    monkeypatch.setenv("GW_RAG_ADMIN_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("GW_RAG_TOP_K", "0")
    with pytest.raises(ConfigError) as err:
        load_settings(ReferenceRagSettings)
    seen.append(str(err.value))

    records = "\n".join(
        f"{r.name} {r.getMessage()} {r.exc_text or ''} {r.args!r}" for r in caplog.records
    )
    assert "failing" in records or "dead" in records or caplog.records, "nothing was logged"
    assert_no_secret("log records", records)
    for i, text in enumerate(seen):
        assert_no_secret(f"response/error #{i}", text)


@pytest.mark.parametrize(
    "script, env",
    [
        ("groundwatch-generator", {"GW_API_TOKEN": API_TOKEN, "GW_PORT": "not-a-port"}),
        ("groundwatch-reference-rag", {"GW_RAG_ADMIN_TOKEN": ADMIN_TOKEN, "GW_RAG_TOP_K": "-1"}),
        (
            "groundwatch-analytics",  # the database is unreachable: start-up fails, logged
            {
                "GW_DATABASE_URL": f"postgresql+psycopg://gw:{DB_PASSWORD}@127.0.0.1:{free_port()}/gw",
                "GW_PORT": str(free_port()),
            },
        ),
        (
            "groundwatch-judge",  # an LLM judge that cannot start: the key must not be printed
            {"GW_LLM_API_KEY": LLM_KEY, "GW_JUDGE_LLM_ENABLED": "true", "GW_LLM_TIMEOUT": "-5"},
        ),
    ],
)
def test_failing_service_start_prints_no_secret(script: str, env: dict[str, str]) -> None:
    exe = Path(sys.executable).with_name(script)
    proc = subprocess.run(
        [str(exe)],
        env={"PATH": "/usr/bin:/bin", "GW_LOG_LEVEL": "DEBUG", "GW_BUS": "memory", **env},
        capture_output=True,
        text=True,
        timeout=90,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert "error" in out.lower()
    assert_no_secret(f"{script} output", out)


READ_TOKEN = "read-token-for-the-evidence-7f3a"
EVIDENCE = ["/groups", "/groups/g1", "/report", "/report.html"]


def test_read_token_protects_the_evidence_endpoints(tmp_path: Path) -> None:
    """GW_API_READ_TOKEN set: /groups, /groups/{id}, /report, /report.html need it (401 without or
    with a wrong one); health, readiness and metrics stay open."""
    app = analytics_app(
        AnalyticsSettings(
            bus="memory", database_url=f"sqlite:///{tmp_path}/r.db", api_read_token=READ_TOKEN
        )
    )
    with TestClient(app) as c:
        for path in EVIDENCE:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": READ_TOKEN}):
                r = c.get(path, headers=headers)
                assert r.status_code == 401, (path, headers, r.status_code)
            ok = c.get(path, headers={"Authorization": f"Bearer {READ_TOKEN}"})
            # /groups/g1 has no judgements in an empty store: 404 once past the guard
            assert ok.status_code == (404 if path == "/groups/g1" else 200), (path, ok.text)
        for path in ("/healthz", "/metrics"):
            assert c.get(path).status_code == 200, path


def test_without_a_read_token_the_evidence_endpoints_stay_open(
    clients: dict[str, TestClient],
) -> None:
    """The documented default: no GW_API_READ_TOKEN, the read endpoints answer anyone."""
    c = clients["analytics"]
    assert [c.get(p).status_code for p in EVIDENCE] == [200, 404, 200, 200]
