"""The reference RAG service's settings (``GW_RAG_*`` and the common ``GW_*``).

The fields live with the example target (``groundwatch.reference_rag.settings``) because
``groundwatch demo`` configures the same RAG in-process; the service reads them from its
environment through this class.
"""

from groundwatch.reference_rag.settings import ReferenceRagSettings


class ReferenceRagServiceSettings(ReferenceRagSettings):
    """What ``groundwatch-reference-rag`` reads at start-up."""
