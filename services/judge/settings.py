"""Judge service settings (``GW_*``; the judging tiers themselves read ``GW_JUDGE_*``).

The class lives in the library (:mod:`groundwatch.app.settings`), where the bootstrap builds
the service from it.
"""

from groundwatch.app.settings import JudgeServiceSettings

__all__ = ["JudgeServiceSettings"]
