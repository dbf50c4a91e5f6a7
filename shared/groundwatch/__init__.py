"""groundwatch: grounded, continuous evaluation of production RAG systems.

``groundwatch.evaluate(dataset, targets)`` runs the whole pipeline from Python and returns the
typed :class:`~groundwatch.report.document.Report` (imported on first use: ``import groundwatch``
stays light, so the CLI starts fast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Report", "TargetFailedWarning", "__version__", "evaluate", "evaluate_async"]

if TYPE_CHECKING:
    from groundwatch.app.evaluate import TargetFailedWarning, evaluate, evaluate_async
    from groundwatch.report.document import Report


def __getattr__(name: str) -> Any:
    if name in ("evaluate", "evaluate_async", "TargetFailedWarning"):
        from groundwatch.app import evaluate as module

        return getattr(module, name)
    if name == "Report":
        from groundwatch.report.document import Report

        return Report
    raise AttributeError(f"module 'groundwatch' has no attribute {name!r}")
