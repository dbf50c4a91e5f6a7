"""RAG runner settings (``GW_*``).

The class lives in the library (:mod:`groundwatch.app.settings`), where the bootstrap builds
the service from it.
"""

from groundwatch.app.settings import RunnerSettings

__all__ = ["RunnerSettings"]
