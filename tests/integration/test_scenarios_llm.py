"""RAGProbe's LLM path for real: the ``openai`` SDK against the local OpenAI-compatible server.

The fake model reads the passage in each prompt and answers like a model would — and for some
documents it answers badly (not JSON, the wrong shape, an answer the passage does not state), or
the call fails. Those items are dropped and counted by reason; the run goes on and every kept
item passes the checks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from groundwatch.adapters.db.datasets import read_jsonl
from groundwatch.adapters.llm.client import LlmClient, LlmSettings
from groundwatch.adapters.scenario_files import select_scenarios
from groundwatch.cli.gen import register
from groundwatch.core.scenarios.generate import CorpusScenarioGenerator
from groundwatch.core.scenarios.item_checks import supported
from groundwatch.core.scenarios.spec import DocumentSampling, ScenarioSpec
from tests.fakes import FakeOpenAIServer, Reply, fake_openai, fake_openai_server  # noqa: F401

pytestmark = pytest.mark.integration

DOCS = {
    "riverside.txt": "Riverside Depot\nThe Riverside depot opened on 14 May 2019.\n"
    "The depot employs 240 people and stores 3,500 tonnes of salt.\n"
    "Its manager is Ana Kowalczyk.",
    "harbour.txt": "Harbour Bridge\nThe Harbour bridge was completed on 2 March 2015.\n"
    "It is 1,250 metres long and carries 18,000 vehicles a day.\n"
    "It was designed by the engineer Tomas Ferreira.",
    "library.txt": "Northgate Library\nThe Northgate library reopened on 9 September 2021.\n"
    "It holds 86,000 books in 12 reading rooms.\nIts manager is Irena Sokol.",
    "garbled.txt": "MALFORMED Station\nThe station opened on 1 June 1999 with 4 platforms.",
    "shape.txt": "WRONGSHAPE Tower\nThe tower was finished on 3 April 2003 and has 31 floors.",
    "invented.txt": "UNSUPPORTED Mill\nThe mill was restored on 5 July 2011 and has 7 wheels.",
}
DISTRACTORS = ["Lena Novak", "Piotr Zielinski", "Maria Costa"]

_NUMBER = re.compile(r"\b(\d{1,3}(?:,\d{3})+|\d+) (people|metres|books|platforms|floors|wheels)")
_DATE = re.compile(r"\b(\d{1,2} [A-Z][a-z]+ \d{4})")
_NAME = re.compile(r"(?:manager is|engineer) ([A-Z][a-z]+ [A-Z][a-z]+)")
_PASSAGES = re.compile(r"Passage (\d+):\n(.*?)(?=\n\nPassage \d+:\n|\Z)", re.S)


def _passage(prompt: str) -> str:
    return prompt.rsplit("Passage:\n", 1)[-1]


def _bad(text: str) -> str | None:
    if "MALFORMED" in text:
        return "Sure! I could not produce JSON for this one, sorry."
    if "WRONGSHAPE" in text:
        return json.dumps({"q": "What is this?", "a": "A tower"})
    return None


def fake_model(body: dict[str, Any]) -> str:
    """A stand-in model: reads the passage(s) in the prompt and writes the JSON asked for."""
    prompt = body["messages"][-1]["content"]
    if "Does any passage state the answer" in prompt:
        return json.dumps({"answerable": "Riverside" in prompt.split("Passages")[0], "answer": ""})
    if "does NOT answer" in prompt:
        title = _passage(prompt).split("\n")[0]
        return json.dumps({"question": f"What was the construction cost of the {title}?"})
    if "come from one document" in prompt or "come from different documents" in prompt:
        parts = []
        for idx, text in _PASSAGES.findall(prompt.split("Example reply")[-1]):
            if (bad := _bad(text)) is not None:
                return bad
            n, d = _NUMBER.search(text), _DATE.search(text)
            if n:
                parts.append(
                    {"question": f"How many {n[2]} are there?", "answer": n[1], "passage": int(idx)}
                )
            if d and "one document" in prompt:
                parts.append({"question": "When did it open?", "answer": d[1], "passage": int(idx)})
        return json.dumps({"questions": parts})
    text = _passage(prompt)
    if (bad := _bad(text)) is not None:
        return bad
    if "multiple-choice" in prompt:
        name = _NAME.search(text)
        right = name[1] if name else "Nobody Known"
        options = {"A": DISTRACTORS[0], "B": right, "C": DISTRACTORS[1], "D": DISTRACTORS[2]}
        return (
            "```json\n"
            + json.dumps({"question": "Who runs it?", "options": options, "answer": "B"})
            + "\n```"
        )
    if "date or a time" in prompt:
        d = _DATE.search(text)
        return json.dumps({"question": "When did it open?", "answer": d[1] if d else "never"})
    n = _NUMBER.search(text)
    answer = "999,999" if "UNSUPPORTED" in text else (n[1] if n else "none")
    return json.dumps({"question": "How many are there?", "answer": answer})


def _specs(ids: str) -> list[ScenarioSpec]:
    every_doc = DocumentSampling(strategy="iterative")
    return [s.model_copy(update={"document_sampling": every_doc}) for s in select_scenarios(ids)]


def _client(server: FakeOpenAIServer, **kw: Any) -> LlmClient:
    settings: dict[str, Any] = {
        "base_url": server.base_url, "api_key": "test-key", "model": "gen-model", "timeout": 5.0,
        "max_retries": 0, "requests_per_second": 0,
    }  # fmt: skip
    return LlmClient(LlmSettings(**(settings | kw)))


async def test_corpus_scenarios_are_validated_and_bad_outputs_dropped_and_counted(
    fake_openai: FakeOpenAIServer,  # noqa: F811
) -> None:
    fake_openai.responder = fake_model
    # documents are visited in id order: the second call (harbour.txt, S1) fails outright
    fake_openai.script(Reply(), Reply.status_code(500))
    client = _client(fake_openai)
    gen = CorpusScenarioGenerator(client, DOCS, seed=1, concurrency=1, model="gen-model")
    run = await gen.generate(_specs("all"))
    await client.aclose()

    summary = run.summary()
    for s in ("S1", "S2", "S3", "S4", "S5", "S6"):
        assert summary[s]["kept"] >= 1, (s, summary[s])
    # the failed call and each kind of bad output were dropped and counted, and the run went on
    s1 = summary["S1"]["dropped_by_reason"]
    assert s1 == {"llm_error": 1, "invalid_json": 1, "missing_fields": 1, "answer_not_in_source": 1}
    assert summary["S1"]["kept"] == 2 and summary["S1"]["attempted"] == 6
    for s in ("S2", "S3"):
        reasons = summary[s]["dropped_by_reason"]
        assert reasons["invalid_json"] == 1 and reasons["missing_fields"] == 1
    assert summary["S6"]["dropped_by_reason"].get("answerable_in_corpus", 0) >= 1
    assert sum(summary[s]["kept"] + summary[s]["dropped"] for s in summary) == sum(
        summary[s]["attempted"] for s in summary
    )

    bad_docs = {"garbled.txt", "shape.txt"}  # the model never answers these properly
    for item in run.items:
        p = item.provenance
        assert p["source"] == "corpus" and p["model"] == "gen-model"
        assert p["prompt_version"] and p["expected_response"]
        if item.scenario == "S6":
            assert not item.answer.answerable and p["verification"]["answerable"] is False
            assert "Riverside" not in item.forms[0].text
            continue
        chunks = {c["chunk_id"]: c["text"] for c in p["chunks"]}
        used = {c.split("#")[0] for c in chunks}
        assert chunks and not (used & bad_docs)
        assert item.scenario != "S1" or "invented.txt" not in used  # its S1 answer is made up
        text = " ".join(chunks.values())
        for value in item.answer.values:
            assert supported(value, text), (item.scenario, value)
        if item.scenario == "S3":
            assert item.answer.options and len(item.answer.options) == 4
            assert p["correct_option"] == "B" and item.answer.values[0] not in DISTRACTORS
        if item.scenario in ("S4", "S5"):
            assert len(item.answer.values) >= 2
        if item.scenario == "S5":
            assert len({c.split("#")[0] for c in chunks}) >= 2

    prompts = fake_openai.prompts
    s1_prompt = next(p for p in prompts if "answer is a number" in p)
    assert s1_prompt.count("Example passage:") == 1 and "384,570" in s1_prompt
    s3_prompt = next(p for p in prompts if "multiple-choice" in p)
    assert s3_prompt.count("Example passage:") == 3
    verify = [p for p in prompts if "Does any passage state the answer" in p]
    assert verify and all("Question: What was the construction cost" in p for p in verify)
    assert all("Passage 1:" in p for p in verify)  # the retrieved passages are in its context


def test_cli_gen_scenarios_from_a_corpus_directory_through_the_llm(
    fake_openai: FakeOpenAIServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_openai.responder = fake_model
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text)
    for key, value in {
        "GW_LLM_BASE_URL": fake_openai.base_url, "GW_LLM_API_KEY": "test-key",
        "GW_LLM_MODEL": "gen-model", "GW_LLM_MAX_RETRIES": "0", "GW_LLM_REQUESTS_PER_SECOND": "0",
    }.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    app = typer.Typer()
    register(app)

    @app.command()
    def noop() -> None:
        """Nothing."""

    out = tmp_path / "items.jsonl"
    quality = tmp_path / "quality.json"
    res = CliRunner().invoke(
        app,
        ["gen", "--scenarios", "S1,S3", "--corpus", str(corpus), "--out", str(out),
         "--scenario-report", str(quality)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    items = read_jsonl(out)
    assert items and {g.scenario for g in items} <= {"S1", "S3"}
    report = json.loads(quality.read_text())
    assert report["retrieval"] == {"method": "bm25", "k": 3}
    for sid in ("S1", "S3"):
        s = report["scenarios"][sid]
        assert s["kept"] == sum(1 for g in items if g.scenario == sid)
        assert s["validity"]["checked"] == s["kept"]
    assert "kept, dropped, valid" in res.output
