"""rag_runner service."""
