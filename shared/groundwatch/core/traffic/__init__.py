"""Production traffic grounded in a dataset: which semantic group a user's question asks."""

from groundwatch.core.traffic.matcher import Grounding, GroundingIndex

__all__ = ["Grounding", "GroundingIndex"]
