"""The open-domain filter (GRAMMAR §5.2, Table 4).

An LLM asked without retrieval (the LLM-only baseline) sometimes knows the answer from its
pre-training. Such a semantic group says nothing about the knowledge base: a RAG system may answer
it from the model's memory even when the documents lack the fact. Groups the baseline answers
correctly are flagged open-domain and can be left out of gap statistics. The live tagger keeps the
same flags incrementally (``Tagger(open_domain_baseline=…)``); these functions are the batch form,
and the report filters a tagger's observations with :func:`closed_domain`.
"""

from __future__ import annotations

from collections.abc import Iterable

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation


def open_domain_groups(observations: Iterable[Observation], baseline: str) -> set[str]:
    """Groups whose question the baseline target answered correctly in at least one text form."""
    return {
        o.group_id for o in observations if o.target == baseline and o.verdict is Verdict.CORRECT
    }


def closed_domain(
    observations: Iterable[Observation], baseline: str, open_domain: set[str]
) -> list[Observation]:
    """The other targets' observations outside the open-domain groups (what gap statistics use)."""
    return [o for o in observations if o.target != baseline and o.group_id not in open_domain]
