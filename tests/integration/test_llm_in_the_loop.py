"""The LLM in the judging loop, end to end through the real ``openai`` SDK against the local
OpenAI-compatible test server: the embedded pipeline over the demo (the LLM tier decides what the
rules leave, audits a share of what they decided, RAGProbe metrics the rules leave open, RAGAS-Fact
and SelfCheck beside the judge with samples of the reference RAG itself), the report and
``/metrics`` of it; ``groundwatch demo`` configured by the environment; and the judge service."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from groundwatch.adapters.db.tables import JudgementRow
from groundwatch.adapters.llm.cache import MemoryVerdictCache
from groundwatch.adapters.llm.client import LlmClient, LlmSettings
from groundwatch.app.embedded import EmbeddedPipeline, monitoring_app, reference_runner
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus
from groundwatch.core.judging.normalize import normalize
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.score_json import scores_from_json
from groundwatch.core.scores import AuditScore
from groundwatch.report.build import report_from_tagger
from groundwatch.report.html import render_html
from groundwatch.report.text import render_text
from groundwatch.stages.judge.reference_free import ReferenceFreeSettings
from groundwatch.stages.judge.tiered import JudgeSettings, build_judge
from groundwatch.stages.runner.lanes import SelfCheckSampling
from tests.fakes import FakeOpenAIServer, fake_openai, fake_openai_server  # noqa: F401
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


#: The stand-in LLM's idea of a direct answer.
STRICT_WORDS = 11


def _field(prompt: str, name: str) -> str:
    m = re.search(rf"##{name}##: (.*?)(?:\n##|$)", prompt, re.S)
    return m.group(1).strip() if m else ""


def judge_model(body: dict[str, Any]) -> str:
    """A deterministic stand-in for the judge's LLM, answering each of groundwatch's prompts:
    the GRAMMAR prompt as a strict grader (the true answer must be there, in an answer of at most
    :data:`STRICT_WORDS` words: it disagrees with the rules about long sentences that merely
    contain the value), RAGAS statement extraction and NLI, SelfCheck-QA, RAGProbe's Pass/Fail."""
    prompt = str(body["messages"][-1]["content"])
    if prompt.startswith("Evaluate the accuracy"):
        gold, given = _field(prompt, "True Answer"), _field(prompt, "Given Response")
        found = bool(normalize(gold)) and normalize(gold) in normalize(given)
        return "Correct" if found and len(given.split()) <= STRICT_WORDS else "Incorrect"
    if prompt.startswith("Break the answer"):
        answer = prompt.split("answer:", 1)[1].split("statements:", 1)[0].strip()
        return "" if "know" in answer.lower() else answer
    if prompt.startswith("Natural language inference"):
        context = prompt.split("context:", 1)[1].split("statement:", 1)[0]
        statement = prompt.split("statement:", 1)[1].split("verdict:", 1)[0].strip()
        return "Yes" if normalize(statement)[:40] in normalize(context) else "No"
    if prompt.startswith("Query:"):
        a = prompt.split("Answer A:", 1)[1].split("Answer B:", 1)[0].strip()
        b = prompt.split("Answer B:", 1)[1].split("Do both", 1)[0].strip()
        return "Yes" if a == b else "No"
    if "Reply with exactly one word: Pass or Fail" in prompt:
        return "Pass"
    return "Correct"


def llm_settings(server: FakeOpenAIServer) -> LlmSettings:
    return LlmSettings(
        base_url=server.base_url,
        api_key="test-key",
        model="judge-model",
        requests_per_second=0,
        max_concurrency=16,
        backoff_initial=0.01,
        backoff_max=0.02,
    )


async def test_embedded_pipeline_judges_with_the_llm_audits_and_measures_evaluators(
    fake_openai: FakeOpenAIServer,  # noqa: F811
) -> None:
    from groundwatch.adapters.scenario_files import select_scenarios
    from groundwatch.adapters.sources.scenarios import grounded_scenarios
    from groundwatch.demo import demo_dataset
    from groundwatch.reference_rag.app import create_app
    from groundwatch.reference_rag.settings import ReferenceRagSettings

    fake_openai.responder = judge_model
    domain, groups = await asyncio.to_thread(demo_dataset, 1, ("short", "long"))
    scenarios = await asyncio.to_thread(
        grounded_scenarios,
        domain.db_url,
        select_scenarios("S1,S4"),
        corpus=domain.documents,
        seed=domain.seed,
        dataset_id="demo-scenarios",
    )
    share = 0.3
    judge = build_judge(
        JudgeSettings(llm_enabled=True, audit_share=share),
        client=LlmClient(llm_settings(fake_openai)),
        cache=MemoryVerdictCache(),
        reference_free=ReferenceFreeSettings(
            reference_free="ragas_fact,selfcheck", reference_free_share=share, selfcheck_samples=2
        ),
    )
    runner, close = reference_runner(
        create_app(ReferenceRagSettings(rag_retriever="keyword"), domain.documents),
        selfcheck=SelfCheckSampling(share, 2),
    )
    pipeline = EmbeddedPipeline([*groups, *scenarios.items], runner, judge=judge, on_stop=[close])
    await pipeline.start()
    try:
        result = await pipeline.run(1)
        report = report_from_tagger(result.tagger)
        transport = httpx.ASGITransport(app=monitoring_app(pipeline))
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as http:
            metrics = (await http.get("/metrics")).text
        with pipeline.engine.connect() as conn:
            rows = conn.execute(
                select(JudgementRow.tier, JudgementRow.reason, JudgementRow.scores)
            ).all()
    finally:
        await pipeline.stop()

    assert result.published == len(rows) > 0
    # 1. the LLM tier decided what the rules left undecided, and the verdict says so
    llm_rows = [r for r in rows if r.tier == "llm"]
    assert llm_rows and all("; rules: " in r.reason for r in llm_rows)
    grammar_prompts = [p for p in fake_openai.prompts if p.startswith("Evaluate the accuracy")]
    assert grammar_prompts and all(r.body["model"] == "judge-model" for r in fake_openai.requests)

    # 2. the self-audit: a share of the rule-decided answers also went to the LLM
    audited = [r for r in rows if scores_from_json(r.scores).audit is not None]
    rule_decided = [r for r in rows if r.tier not in ("llm", "target") and "ragprobe" not in r.tier]
    assert 0 < len(audited) < len(rule_decided)
    assert all("audit: the LLM" in r.reason for r in audited)
    q = report.scores
    assert q is not None
    audit = q.audit["reference"]
    assert sum(a.audited for a in audit.values()) == len(audited)
    counted = sum(judge.counters.audit.values())
    assert counted == len(audited)
    for numbers in audit.values():
        assert numbers.agreement is not None and numbers.agreement_ci is not None
        assert numbers.agreement_ci[0] <= numbers.agreement <= numbers.agreement_ci[1]
    # the strict stand-in rejects long sentences the containment rule accepts: the audit sees it
    contains = audit["contains"]
    assert contains.disagree == contains.rules_correct_llm_incorrect > 0
    assert contains.agreement is not None and contains.agreement < 1.0
    assert judge.counters.audit[("contains", "false")] == contains.disagree

    # 3. answer metrics per target x cohort from the reference RAG's answers and retrieved ids
    for cohort in ("short", "long"):
        g = q.answer_metrics["reference"][cohort]["factual"]
        assert g.answers == sum(len(x.forms_in(cohort)) for x in groups)
        for metric in ("exact_match", "token_f1", "rouge_l", "bleu", "recall@5", "ndcg@5"):
            assert g.metrics[metric].mean is not None, metric
    short, long_ = (q.answer_metrics["reference"][c]["factual"] for c in ("short", "long"))
    recall_short, recall_long = short.metrics["recall@5"].mean, long_.metrics["recall@5"].mean
    assert recall_short is not None and recall_long is not None and recall_short > recall_long

    # 4. RAGAS-Fact and SelfCheck against the SQL truth, with Wilson intervals
    rf = q.reference_free["reference"]
    assert set(rf) == {"ragas_fact", "selfcheck"}
    r = rf["ragas_fact"]
    assert r.n > 0 and r.interval == "wilson"
    assert r.precision is not None and r.precision_ci is not None
    # the reference RAG answers deterministically and has no sampling knob: its repeats would
    # always agree, so SelfCheck is reported as not sampled (issue 31), never scored on them
    assert rf["selfcheck"].n == 0 and rf["selfcheck"].unsampled > 0
    assert "selfcheck on reference:" in render_text(report)

    # 5. RAGProbe metrics: open ones asked of the LLM
    assert any(r.tier == "ragprobe_llm" for r in rows)
    s1 = q.ragprobe_metrics["reference"]["S1"]
    assert s1.probes == sum(1 for i in scenarios.items if i.scenario == "S1")
    assert set(s1.metrics) == {"correctness", "relevance", "completeness", "consistency"}

    # 6. /metrics exports all of it with bounded labels
    for series in (
        'groundwatch_judge_audit_total{agree="true"',
        'groundwatch_judge_audit_agreement{target="reference"',
        'groundwatch_evaluator_reliability{evaluator="ragas_fact",measure="precision"',
        'groundwatch_evaluator_calls{evaluator="selfcheck",says="not_sampled"',
        'groundwatch_evaluator_reliability_ci{bound="low",evaluator="ragas_fact"',
        'groundwatch_answer_metric_mean{cohort="short",metric="recall@5"',
        'groundwatch_answer_metric_bucket{cohort="long",le="0.1",metric="bleu"',
        'groundwatch_ragprobe_metric_failure_ratio{metric="relevance",scenario="S1"',
        'groundwatch_reference_free_evaluations_total{evaluator="selfcheck"}',
    ):
        assert series in _sorted_labels(metrics), series
    assert "group_id" not in metrics

    # 7. the HTML report shows them
    html = render_html(report)
    for heading in ("Answer metrics (Oro et al.)", "Self-audit", "GRAMMAR Table 1, live"):
        assert heading in html


def _sorted_labels(text: str) -> str:
    """The exposition with each sample's labels in name order (prometheus_client keeps the
    order of declaration), so a test can look for a prefix."""

    def sort(m: re.Match[str]) -> str:
        labels = sorted(re.findall(r'(\w+="[^"]*")', m.group(2)))
        return f"{m.group(1)}{{{','.join(labels)}}}"

    return re.sub(r"^(\w+)\{([^}]*)\}", sort, text, flags=re.M)


async def test_demo_uses_the_llm_tier_the_environment_configures(
    fake_openai: FakeOpenAIServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from groundwatch.app.demo import run_demo
    from groundwatch.app.runs import Console

    fake_openai.responder = judge_model
    for name, value in {
        "GW_JUDGE_LLM_ENABLED": "true",
        "GW_JUDGE_AUDIT_SHARE": "0.1",
        "GW_LLM_BASE_URL": fake_openai.base_url,
        "GW_LLM_API_KEY": "test-key",
        "GW_LLM_MODEL": "demo-judge",
        "GW_LLM_REQUESTS_PER_SECOND": "0",
    }.items():
        monkeypatch.setenv(name, value)
    out = await run_demo(1, ("short", "long"), 1, "keyword", Console(say=print), None, "none")
    printed = capsys.readouterr().out
    assert "judge: rules, then the LLM tier (demo-judge), 10% of rule-decided answers" in printed
    q = out.report.scores
    assert q is not None and q.audit["reference"]
    assert any(p.startswith("Evaluate the accuracy") for p in fake_openai.prompts)
    assert {r.body["model"] for r in fake_openai.requests} == {"demo-judge"}
    assert "Self-audit: rule-decided answers also judged by the LLM tier" in printed
    # without the LLM: nothing is asked, undecided verdicts stay undecided and are shown
    fake_openai.reset()
    monkeypatch.setenv("GW_JUDGE_LLM_ENABLED", "false")
    plain = await run_demo(1, ("short", "long"), 1, "keyword", Console(say=print), None, "none")
    assert not fake_openai.requests and "rules only" in capsys.readouterr().out
    assert plain.report.scores is not None and not plain.report.scores.audit
    coverage = [c.coverage for c in plain.report.cohorts.values()]
    assert all(c is not None and c <= 1.0 for c in coverage)


def test_judge_service_uses_the_llm_tier_and_exports_the_audit(
    fake_openai: FakeOpenAIServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    from services.judge.app import create_app
    from services.judge.settings import JudgeServiceSettings

    fake_openai.responder = judge_model
    for name, value in {
        "GW_JUDGE_LLM_ENABLED": "true",
        "GW_JUDGE_AUDIT_SHARE": "1.0",
        "GW_JUDGE_LLM_CACHE": "false",
        "GW_LLM_BASE_URL": fake_openai.base_url,
        "GW_LLM_API_KEY": "test-key",
        "GW_LLM_REQUESTS_PER_SECOND": "0",
    }.items():
        monkeypatch.setenv(name, value)
    settings = JudgeServiceSettings(bus="memory", database_url=f"sqlite:///{tmp_path}/j.db", port=0)
    app = create_app(settings)
    questions = [
        ("Who leads the project?", "Ada Quinn", "Ada Quinn leads it."),  # rules: correct
        ("When did it start?", "2023-04-01", "It started in spring 2023."),  # rules: undecided
    ]
    with TestClient(app) as client:
        parts = app.state.parts
        responses = [
            RagResponse.for_probe(
                Probe(
                    probe_id=uuid.uuid4(),
                    run_id="r",
                    dataset_id="d",
                    group_id=f"g{i}",
                    form_id="f",
                    cohort="short",
                    target="t",
                    query=q,
                    expected=Expected(values=[gold]),
                ),
                status=TargetStatus.OK,
                answer=answer,
            )
            for i, (q, gold, answer) in enumerate(questions)
        ]
        from groundwatch.adapters.bus import Outgoing

        async def publish() -> None:
            await parts.bus.publish_many(
                [Outgoing(parts.topics.responses.name, r.key, r.to_bytes()) for r in responses]
            )

        client.portal.call(publish)  # type: ignore[union-attr]

        def judged_both() -> list[Judgement] | None:
            judged = [
                parts.topics.judgements.decode(r.value)
                for r in parts.bus.records(parts.topics.judgements.name)
            ]
            return judged if len(judged) >= 2 else None

        judged = wait_until("both responses judged", judged_both)
        metrics = client.get("/metrics").text
    by_group = {j.group_id: j for j in judged}
    assert by_group["g0"].tier == "contains"
    assert by_group["g0"].scores.audit == AuditScore("contains", True)
    # the stand-in LLM looks for the gold verbatim: "spring 2023" is not "2023-04-01"
    assert by_group["g1"].tier == "llm" and by_group["g1"].verdict is Verdict.INCORRECT
    assert by_group["g0"].scores.answer is not None
    assert by_group["g0"].scores.answer.token_f1 is not None
    assert 'groundwatch_judge_audit_total{agree="true",tier="contains"} 1.0' in _sorted_labels(
        metrics
    )
