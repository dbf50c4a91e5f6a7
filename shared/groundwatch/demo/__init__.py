"""The demo domain: Meridian Vale, a fictitious engineering consultancy, its database and corpus.

Used by ``make demo`` and the tests: a seeded database (clients, employees, projects with foreign
keys), documents rendered from its rows with a recorded list of omitted facts (the injected
knowledge gaps), and the semantic groups generated from it.
"""

from groundwatch.demo.corpus import OmittedFact
from groundwatch.demo.domain import (
    DEMO_RULES,
    DemoDomain,
    build_demo,
    demo_dataset,
    demo_generation,
)

__all__ = [
    "DEMO_RULES",
    "DemoDomain",
    "OmittedFact",
    "build_demo",
    "demo_dataset",
    "demo_generation",
]
