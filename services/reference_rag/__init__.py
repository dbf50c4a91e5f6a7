"""reference_rag service."""
