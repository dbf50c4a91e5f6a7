"""Probe spans and verdicts in a real Phoenix: `groundwatch run --once` with the three OTEL_*
lines a user sets, then Phoenix's own REST API says what arrived.

The target is an HTTP endpoint of this test that answers half the groups and records the
``traceparent`` header of every request, so the test also sees that the target's own spans
would join the probe's trace.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from groundwatch.adapters.tracing import probe_trace_id
from tests.integration._http_rag import serve
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("groundwatch"))


def _spans(phoenix: str, project: str, kind: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 1000, "span_kind": kind}
        if cursor:
            params["cursor"] = cursor
        reply = httpx.get(f"{phoenix}/v1/projects/{project}/spans", params=params, timeout=30)
        if reply.status_code == 404:  # the project appears with its first span
            return []
        reply.raise_for_status()
        body = reply.json()
        out.extend(body["data"])
        cursor = body.get("next_cursor")
        if not cursor:
            return out


def _wait_for(what: str, probe: Any, deadline_s: float = 120.0) -> Any:
    """Poll ``probe()`` until it returns something true: Phoenix ingests asynchronously."""
    return wait_until(f"Phoenix to show {what}", probe, timeout=deadline_s, step=1.0)


def test_probe_spans_and_verdicts_arrive_in_phoenix(tmp_path: Path, phoenix_url: str) -> None:
    dataset = tmp_path / "demo.jsonl"
    subprocess.run(
        [CLI, "gen", "--demo", "--out", str(dataset)], check=True, capture_output=True, timeout=120
    )
    groups = [orjson.loads(line) for line in dataset.read_bytes().splitlines()]
    known = {g["group_id"] for g in groups[::2]}
    answers = {
        f["text"]: " and ".join(g["answer"]["values"])
        for g in groups
        if g["group_id"] in known
        for f in g["forms"]
    }
    project = f"gw-test-{uuid.uuid4().hex[:8]}"
    seen: list[str] = []
    with serve(
        answers, reply=lambda a: {"answer": a, "ids": ["doc-1", "doc-2"]}, traceparents=seen
    ) as url:
        targets = tmp_path / "targets.yaml"
        targets.write_text(
            "targets:\n"
            "  - name: mine\n"
            "    type: http_json\n"
            f"    url: {url}\n"
            "    body: {query: '{query}'}\n"
            "    answer_path: answer\n"
            "    retrieved_ids_path: ids\n"
        )
        report = tmp_path / "report.json"
        env = {
            **os.environ,
            # the three lines a user sets (the project name is Phoenix's own resource attribute)
            "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix_url,
            "OTEL_SERVICE_NAME": "groundwatch-test",
            "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
            "GW_TRACE_PHOENIX_URL": phoenix_url,
        }
        proc = subprocess.run(
            [
                CLI,
                "run",
                "--dataset",
                str(dataset),
                "--targets",
                str(targets),
                "--once",
                "--sample",
                "6",
                "--json",
                str(report),
                "--database-url",
                f"sqlite:///{tmp_path / 'store.db'}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    asked = len(seen)
    assert asked > 0
    # every request carried the W3C trace context of its probe's span
    parents = {h.split("-")[2]: h.split("-")[1] for h in seen if h}
    assert len(parents) == asked, seen[:3]

    probes = _wait_for(
        f"{asked} probe spans",
        lambda: (s := _spans(phoenix_url, project, "CHAIN")) and len(s) >= asked and s,
    )
    by_span = {s["context"]["span_id"]: s for s in probes}
    assert set(parents) == set(by_span), "the traceparent sent is the probe span's own"
    for span_id, trace_id in parents.items():
        span = by_span[span_id]
        assert span["context"]["trace_id"] == trace_id
        attrs = span["attributes"]
        assert attrs["groundwatch.group_id"] in {g["group_id"] for g in groups}
        assert attrs["input.value"] and "output.value" in attrs
        assert attrs["gen_ai.operation.name"] == "invoke_agent"
        assert attrs["retrieval.documents.0.document.id"] == "doc-1"
        assert format(probe_trace_id(attrs["groundwatch.probe_id"]), "032x") == trace_id

    # every probe span carries its verdict: as the event on it (one process probed and judged,
    # the verdict came while the span was held) or in an EVALUATOR span under it
    def verdicts() -> dict[str, str]:
        found = {
            span_id: span["attributes"]["groundwatch.verdict"]
            for span_id, span in by_span.items()
            if "groundwatch.verdict" in span["attributes"]
            and [e["name"] for e in span["events"]] == ["gen_ai.evaluation.result"]
        }
        for ev in _spans(phoenix_url, project, "EVALUATOR"):
            assert [e["name"] for e in ev["events"]] == ["gen_ai.evaluation.result"]
            assert ev["attributes"]["gen_ai.evaluation.name"] == "groundwatch.verdict"
            found[ev["parent_id"]] = ev["attributes"]["groundwatch.verdict"]
        return found if len(found) >= asked else {}

    on_spans = _wait_for("a verdict on every probe span", verdicts)
    assert set(on_spans) == set(by_span)

    def annotations() -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        ids = list(by_span)
        for i in range(0, len(ids), 50):
            reply = httpx.get(
                f"{phoenix_url}/v1/projects/{project}/span_annotations",
                params={"span_ids": ids[i : i + 50], "limit": 1000},
                timeout=30,
            )
            reply.raise_for_status()
            got.extend(reply.json()["data"])
        return got if len(got) >= asked else []

    notes = _wait_for("an annotation on every probe span", annotations)
    for note in notes:
        span = by_span[note["span_id"]]
        group = span["attributes"]["groundwatch.group_id"]
        assert note["name"] == "groundwatch.verdict"
        assert note["annotator_kind"] == "CODE"
        assert note["identifier"] == f"groundwatch:{group}"
        if span["attributes"]["groundwatch.scenario"] != "factual":
            continue
        # the endpoint knows every other group: its verdicts are right there and wrong elsewhere
        expected = "correct" if group in known else "incorrect"
        assert note["result"]["label"] == expected, (group, note["result"])
