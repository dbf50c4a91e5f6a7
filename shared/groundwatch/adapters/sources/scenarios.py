"""RAGProbe scenarios with SQL truth against a real database: the wiring of core and adapters.

One read-only transaction (a consistent snapshot) serves everything: introspection, the rule
templates' semantic groups with one interrogative form each, the DISTINCT values distractors
and absent names come from, and the check that an absent name really returns no row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from groundwatch.adapters.sources.connect import SourcePolicy, readonly_engine
from groundwatch.adapters.sources.introspect import introspect
from groundwatch.adapters.sources.port import SqlAlchemyPort
from groundwatch.core.generation.pipeline import build_groups, offline_text_templates
from groundwatch.core.generation.rules import RuleConfig, rule_templates
from groundwatch.core.generation.verbalizers import default_verbalizers
from groundwatch.core.scenarios.grounded import GroundedBuilder, GroundedSource
from groundwatch.core.scenarios.items import ScenarioRun
from groundwatch.core.scenarios.spec import ScenarioSpec
from groundwatch.errors import ConfigError

#: The cohort whose realizer patterns are questions ("What is the budget of …?").
QUESTION_COHORT = "interrogative"
#: Text files a corpus directory is read from.
CORPUS_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".text")


def grounded_scenarios(
    engine_url: str,
    specs: Sequence[ScenarioSpec],
    *,
    corpus: Mapping[str, str] | None = None,
    seed: int = 0,
    dataset_id: str = "scenarios",
    max_items: int | None = None,
    rule_config: RuleConfig | None = None,
    policy: SourcePolicy | None = None,
) -> ScenarioRun:
    """Scenario items with SQL truth from the database at ``engine_url`` (opened read-only).

    With ``corpus`` (document id → text), S1–S5 items are kept only when a document states their
    answer, and S6 names are checked absent from every document.
    """
    verbalizer = default_verbalizers()[QUESTION_COHORT]
    engine = readonly_engine(engine_url, policy=policy)
    run = ScenarioRun()
    try:
        with engine.connect() as conn, conn.begin():
            schema = introspect(conn)
            templates = rule_templates(schema, rule_config)
            texts = offline_text_templates(
                templates, {QUESTION_COHORT: verbalizer}, [QUESTION_COHORT]
            )
            port = SqlAlchemyPort(conn, schema)
            result = build_groups(
                port,
                schema,
                templates,
                texts,
                k=1,
                cohorts=(QUESTION_COHORT,),
                dataset_id=dataset_id,
            )
            source = GroundedSource(
                port=port,
                schema=schema,
                templates=templates,
                groups=result.groups,
                text_templates={tid: by[QUESTION_COHORT] for tid, by in texts.items()},
                corpus=corpus,
                dataset_id=dataset_id,
            )
            builder = GroundedBuilder(source, seed=seed)
            for spec in specs:
                builder.build(spec, run, max_items)
    finally:
        engine.dispose()
    return run


def load_corpus(path: str | Path) -> dict[str, str]:
    """A corpus as document id → text: every text file under a directory (id = relative path),
    or a JSON object file such as ``groundwatch gen --demo --docs-out`` writes."""
    p = Path(path)
    if p.is_file() and p.suffix == ".json":
        data = orjson.loads(p.read_bytes())
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise ConfigError(f"{p}: expected a JSON object of document id → text")
        return {str(k): v for k, v in data.items()}
    if not p.is_dir():
        raise ConfigError(f"{p}: not a directory or a .json corpus file")
    out = {
        f.relative_to(p).as_posix(): f.read_text(encoding="utf-8", errors="replace")
        for f in sorted(p.rglob("*"))
        if f.is_file() and f.suffix.lower() in CORPUS_SUFFIXES
    }
    if not out:
        raise ConfigError(f"{p}: no text documents ({', '.join(CORPUS_SUFFIXES)}) found")
    return out
