"""RAGProbe scenario items (``gen --scenarios``): the grounded variants with SQL truth from a
database (the demo's or ``--db``), checked against a corpus when there is one, or RAGProbe's own
generator over a corpus through the LLM client (``GW_LLM_*``).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from groundwatch.core.scenarios.items import ScenarioRun
from groundwatch.core.scenarios.spec import ScenarioSpec
from groundwatch.errors import ConfigError


async def llm_scenarios(
    corpus: Mapping[str, str], specs: Sequence[ScenarioSpec], seed: int, dataset_id: str,
    max_items: int | None,
) -> ScenarioRun:  # fmt: skip
    """RAGProbe's generator over ``corpus``: the LLM writes each scenario's items."""
    from groundwatch.app.bootstrap import llm_client
    from groundwatch.core.scenarios.generate import CorpusScenarioGenerator

    client = llm_client("gen --scenarios over a corpus (RAGProbe's generator)")
    try:
        gen = CorpusScenarioGenerator(
            client, corpus, seed=seed, dataset_id=dataset_id, model=client.settings.model
        )
        return await gen.generate(specs, max_items=max_items)
    finally:
        await client.aclose()


def scenario_items(
    wanted: str,
    *,
    demo: bool,
    db: str | None,
    corpus_path: Path | None,
    llm: bool,
    seed: int,
    dataset_id: str,
    max_items: int | None,
    scenario_paths: Sequence[Path] = (),
    source_timeout_s: float = 60.0,
    allow_privileged_source: bool = False,
) -> tuple[ScenarioRun, list[ScenarioSpec], dict[str, str] | None]:
    """The items of the scenarios ``wanted`` names (``S1,S2``, ``all``; ``scenario_paths`` add
    scenario YAML files), the specs they follow and the corpus they were checked against."""
    from groundwatch.adapters.scenario_files import (
        builtin_scenarios,
        load_scenarios,
        select_scenarios,
    )
    from groundwatch.adapters.sources.connect import SourcePolicy

    available = builtin_scenarios()
    if scenario_paths:
        available.update(load_scenarios(scenario_paths))
    specs = select_scenarios(wanted, available)
    with tempfile.TemporaryDirectory(prefix="groundwatch-demo-") as workdir:
        corpus: dict[str, str] | None = None
        url = db
        if demo:
            from groundwatch.demo import build_demo

            domain = build_demo(seed=seed, workdir=workdir)
            url, corpus = domain.db_url, domain.documents
        elif corpus_path is not None:
            from groundwatch.adapters.sources.scenarios import load_corpus

            corpus = load_corpus(corpus_path)
        if llm or url is None:
            if corpus is None:
                raise ConfigError("the LLM path needs a corpus (--corpus or --demo)")
            run = asyncio.run(llm_scenarios(corpus, specs, seed, dataset_id, max_items))
        else:
            from groundwatch.adapters.sources.scenarios import grounded_scenarios

            run = grounded_scenarios(
                url,
                specs,
                corpus=corpus,
                seed=seed,
                dataset_id=dataset_id,
                max_items=max_items,
                policy=SourcePolicy(source_timeout_s, allow_privileged_source),
            )
    return run, list(specs), corpus
