"""The reference RAG: an example target to evaluate, in one package.

A small, explainable RAG (the core's retrievers, an extractive or LLM reader, fault switches)
whose weaknesses (GRAMMAR §5's keyword matching suffers on long queries) and planted faults the
rest of groundwatch must detect. ``services/reference_rag`` serves it over HTTP; ``groundwatch
demo`` calls it in-process.
"""

from groundwatch.core.model import DONT_KNOW
from groundwatch.reference_rag.faults import FaultSwitches, InjectedFault
from groundwatch.reference_rag.pipeline import RagAnswer, RagPipeline
from groundwatch.reference_rag.readers import ExtractiveReader, Reader

__all__ = [
    "DONT_KNOW",
    "ExtractiveReader",
    "FaultSwitches",
    "InjectedFault",
    "RagAnswer",
    "RagPipeline",
    "Reader",
]
