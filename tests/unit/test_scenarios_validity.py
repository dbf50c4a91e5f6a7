"""RAGProbe's validity check and the scenario report: does BM25 over the corpus, asked the
question, bring back the chunk the question was made from?"""

from __future__ import annotations

import pytest

from groundwatch.adapters.scenario_files import builtin_scenarios
from groundwatch.core.model import Expected, SemanticGroup
from groundwatch.core.scenarios.chunking import Chunk
from groundwatch.core.scenarios.items import ScenarioRun, scenario_group, scenario_group_id
from groundwatch.core.scenarios.validity import scenario_report, validity

pytestmark = pytest.mark.unit

CORPUS = {
    "bridge": "The Harbour bridge is 1,250 metres long and was designed by Tomas Ferreira.",
    "depot": "The Riverside depot employs 240 people and stores salt for the winter roads.",
    "library": "The Northgate library holds 86,000 books in twelve reading rooms.",
    "museum": "The Quarry museum shows old mining tools and opens every weekend.",
}
SPECS = builtin_scenarios()


def item(
    scenario: str, question: str, docs: list[str], expected: Expected | None = None
) -> SemanticGroup:
    chunks = [Chunk(d, 0, CORPUS[d]).provenance() for d in docs]
    return scenario_group(
        SPECS[scenario],
        group_id=scenario_group_id(scenario, {"q": question}),
        question=question,
        expected=expected or Expected(values=["x"]),
        provenance={"chunks": chunks, "expected_response": "x"},
        dataset_id="t",
        relevant_doc_ids=docs,
    )


def test_validity_per_scenario() -> None:
    items = [
        item("S1", "How long is the Harbour bridge?", ["bridge"]),  # names its subject: valid
        item("S1", "How many books does the Northgate library hold?", ["library"]),
        item("S1", "How many are there?", ["depot"]),  # says nothing to retrieve with
        item("S5", "How long is the Harbour bridge? How many people work at the Riverside depot?",
             ["bridge", "depot"]),
        item("S6", "What did the Quarry museum cost?", [], Expected(answerable=False)),
    ]  # fmt: skip
    got = validity(items, SPECS, CORPUS, k=1)
    assert got["S1"]["checked"] == 3 and got["S1"]["valid"] == 2
    assert got["S1"]["validity"] == pytest.approx(2 / 3)
    assert got["S1"]["mean_chunk_recall"] == pytest.approx(2 / 3)
    # k grows to the number of source chunks, so a two-document item can be fully found
    assert got["S5"]["valid"] == 1 and got["S5"]["mean_chunk_recall"] == 1.0
    # S6 has no pre-assigned chunks: left out, as in RAGProbe §5.2
    assert got["S6"]["checked"] == 0 and got["S6"]["validity"] is None
    assert got["S6"]["not_checked"] == 1


def test_scenario_report_joins_generation_counts_and_validity() -> None:
    run = ScenarioRun()
    run.keep(item("S1", "How long is the Harbour bridge?", ["bridge"]))
    run.drop("S1", "invalid_json")
    run.drop("S1", "invalid_json")
    run.drop("S2", "answer_not_in_source")
    report = scenario_report(run, SPECS, CORPUS)
    s1 = report["scenarios"]["S1"]
    assert (s1["attempted"], s1["kept"], s1["dropped"]) == (3, 1, 2)
    assert s1["dropped_by_reason"] == {"invalid_json": 2}
    assert s1["validity"]["valid"] == 1
    assert report["scenarios"]["S2"]["kept"] == 0 and report["scenarios"]["S2"]["validity"] is None
    assert scenario_report(run, SPECS, None)["retrieval"] is None
