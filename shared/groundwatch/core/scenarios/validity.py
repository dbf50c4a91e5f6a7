"""RAGProbe's validity check (§5.2), and the scenario report it completes.

A generated question is *valid* when retrieval over the corpus with the question finds the chunks
the question was made from: it names its subject well enough to be answered from the corpus at
all. RAGProbe chunks the corpus as the generator did, retrieves with each question and compares
the retrieved chunks with the pre-assigned ones; S6 questions have no pre-assigned chunks and are
left out. Here retrieval is BM25 over the scenario's own chunking, ``k`` chunks (at least as many
as the item was made from); an item is valid when every one of its chunks comes back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from groundwatch.core.model import SemanticGroup
from groundwatch.core.retrieval.retrievers import Bm25Retriever
from groundwatch.core.scenarios.chunking import chunk_corpus
from groundwatch.core.scenarios.items import ScenarioRun
from groundwatch.core.scenarios.spec import Chunking, ScenarioSpec

DEFAULT_K = 3


def _source_chunks(item: SemanticGroup) -> list[str]:
    chunks = item.provenance.get("chunks") or []
    return [str(c["chunk_id"]) for c in chunks if isinstance(c, dict) and "chunk_id" in c]


def validity(
    items: Sequence[SemanticGroup],
    specs: Mapping[str, ScenarioSpec],
    corpus: Mapping[str, str],
    *,
    k: int = DEFAULT_K,
) -> dict[str, dict[str, Any]]:
    """Per scenario: items, items checked, valid items, validity and mean chunk recall@k."""
    retrievers: dict[Chunking, Bm25Retriever] = {}
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        s = out.setdefault(
            item.scenario,
            {"items": 0, "checked": 0, "valid": 0, "_recall": 0.0, "not_checked": 0},
        )
        s["items"] += 1
        src = _source_chunks(item)
        spec = specs.get(item.scenario)
        if not src or spec is None or not item.answer.answerable:
            s["not_checked"] += 1
            continue
        retriever = retrievers.get(spec.chunking)
        if retriever is None:
            index = {
                c.chunk_id: c.text
                for cs in chunk_corpus(corpus, spec.chunking).values()
                for c in cs
            }
            retriever = retrievers[spec.chunking] = Bm25Retriever(index)
        question = item.forms[0].text if item.forms else ""
        got = {r.doc_id for r in retriever.retrieve(question, max(k, len(src)))}
        found = sum(1 for c in src if c in got)
        s["checked"] += 1
        s["_recall"] += found / len(src)
        s["valid"] += int(found == len(src))
    for s in out.values():
        n = s["checked"]
        s["validity"] = s["valid"] / n if n else None
        s["mean_chunk_recall"] = s.pop("_recall") / n if n else None
    return dict(sorted(out.items()))


def scenario_report(
    run: ScenarioRun,
    specs: Mapping[str, ScenarioSpec],
    corpus: Mapping[str, str] | None,
    *,
    k: int = DEFAULT_K,
) -> dict[str, Any]:
    """The scenario report: what each scenario generated and dropped (by reason) and, with a
    corpus, the validity of the kept questions."""
    checked = validity(run.items, specs, corpus, k=k) if corpus is not None else {}
    scenarios: dict[str, Any] = {}
    for sid, summary in run.summary().items():
        scenarios[sid] = {**summary, "validity": checked.get(sid)}
    return {
        "schema": "groundwatch.scenario-report/1",
        "retrieval": {"method": "bm25", "k": k} if corpus is not None else None,
        "items": len(run.items),
        "scenarios": scenarios,
    }
