"""groundwatch: grounded, continuous evaluation of production RAG systems."""

__version__ = "0.1.0"
