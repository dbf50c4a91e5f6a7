"""The reference RAG service: the example target ``groundwatch.reference_rag`` over HTTP."""

from __future__ import annotations

import sys

from groundwatch.app.services import reference_rag_app, settings_or_exit
from groundwatch.errors import ConfigError
from groundwatch.runtime.service import serve
from services.reference_rag.settings import ReferenceRagServiceSettings


def main() -> None:
    """Console entry ``groundwatch-reference-rag``."""
    settings = settings_or_exit(ReferenceRagServiceSettings)
    try:
        app = reference_rag_app(settings)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    serve(app, settings)
