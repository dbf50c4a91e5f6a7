"""Python callables used as targets by CLI tests (imported by name from a targets file)."""

from __future__ import annotations


def knows_nothing(query: str) -> dict[str, object]:
    return {"answer": "I don't know.", "retrieved_ids": [], "contexts": []}


def knows_the_client_locations(query: str) -> dict[str, object]:
    """An 'LLM-only baseline' that happens to know one kind of fact from pre-training."""
    from groundwatch.demo.data import make_rows

    rows = make_rows(7)
    for client in rows.clients:
        if client.name in query and "city" in query.lower():
            return {"answer": client.city}
    return {"answer": "I don't know."}


def scripted_capitals(query: str) -> dict[str, object]:
    """A scripted endpoint for the monitoring-cycle tests. The cycle number is read from the file
    named by ``GW_TEST_SCRIPT_STATE``: the fact of Country0 is missing in cycles 2–3 (a knowledge
    base that lost it, then got it back), and the first wording of Country1 is answered wrongly
    in every even cycle (a stochastic LM); everything else is answered right."""
    import os
    import re
    from pathlib import Path

    cycle = int(Path(os.environ["GW_TEST_SCRIPT_STATE"]).read_text().strip() or "1")
    m = re.search(r"Country(\d+)", query)
    if m is None:
        return {"answer": "I don't know."}
    i = int(m.group(1))
    if i == 0 and cycle in (2, 3):
        return {"answer": "I don't know."}
    if i == 1 and query.startswith("What is") and cycle % 2 == 0:
        return {"answer": "The capital is City5."}
    return {"answer": f"The capital is City{i}."}


def slow_to_answer(query: str) -> dict[str, object]:
    """An endpoint that takes ``GW_TEST_SLOW_S`` seconds (default 3) per question: a cycle is
    still in flight when a test signals the run."""
    import os
    import time

    time.sleep(float(os.environ.get("GW_TEST_SLOW_S", "3")))
    return {"answer": "I don't know."}
