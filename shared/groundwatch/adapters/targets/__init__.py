"""Target adapters: the RAG systems (and LLM-only baselines) groundwatch probes.

HTTP JSON endpoints, OpenAI-compatible chat models and Python callables all answer
:meth:`Target.ask` with a :class:`TargetReply` or raise a :class:`TargetError` with a kind.
Per-target limits and guards live here too; :class:`groundwatch.stages.runner.lanes.Runner`
applies them.
"""

from typing import TYPE_CHECKING, Any

from groundwatch.adapters.targets.base import (
    TRANSIENT,
    ErrorKind,
    Target,
    TargetError,
    TargetReply,
    reply_from,
)
from groundwatch.adapters.targets.callable import CallableTarget
from groundwatch.adapters.targets.guards import BreakerState
from groundwatch.adapters.targets.http_json import HttpJsonTarget, expand_env, render_body
from groundwatch.adapters.targets.limits import TargetLimits
from groundwatch.adapters.targets.transport import (
    HttpClient,
    HttpClients,
    HttpxClient,
    TransportSettings,
    make_http_client,
)
from groundwatch.adapters.throttle import TokenBucket

if TYPE_CHECKING:
    from groundwatch.adapters.targets.openai_chat import OpenAIChatTarget


def __getattr__(name: str) -> Any:
    """``OpenAIChatTarget`` on first use: it brings the ``openai`` SDK (~15 MB), which a run
    probing only HTTP or in-process targets never needs."""
    if name == "OpenAIChatTarget":
        from groundwatch.adapters.targets.openai_chat import OpenAIChatTarget

        return OpenAIChatTarget
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "TRANSIENT",
    "BreakerState",
    "CallableTarget",
    "ErrorKind",
    "HttpClient",
    "HttpClients",
    "HttpJsonTarget",
    "HttpxClient",
    "OpenAIChatTarget",
    "Target",
    "TargetError",
    "TargetLimits",
    "TargetReply",
    "TokenBucket",
    "TransportSettings",
    "expand_env",
    "make_http_client",
    "render_body",
    "reply_from",
]
