"""The reference RAG service: the example target ``groundwatch.reference_rag`` over HTTP."""

from __future__ import annotations

import sys

from groundwatch.core.llm import ChatModel
from groundwatch.errors import ConfigError
from groundwatch.reference_rag.app import create_app
from groundwatch.runtime.service import serve, settings_or_exit
from groundwatch.runtime.settings import load_settings
from services.reference_rag.settings import ReferenceRagServiceSettings


def main() -> None:
    """Console entry ``groundwatch-reference-rag``."""
    settings = settings_or_exit(ReferenceRagServiceSettings)
    llm: ChatModel | None = None
    try:
        if settings.rag_reader == "llm":  # the model and its limits come from GW_LLM_*
            from groundwatch.adapters.llm.client import LlmClient as OpenAIClient
            from groundwatch.adapters.llm.client import LlmSettings

            llm = OpenAIClient(load_settings(LlmSettings))
        app = create_app(settings, llm=llm)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    serve(app, settings)
