"""Source databases seen through SQLAlchemy: read-only connections, schema introspection and the
grouped answer queries the generation core asks for.

The core (``groundwatch.core.generation``) is pure; this package is its adapter to real databases.
"""

from groundwatch.adapters.sources.connect import readonly_engine
from groundwatch.adapters.sources.generate import generate_groups, offline_templates
from groundwatch.adapters.sources.introspect import introspect
from groundwatch.adapters.sources.port import SqlAlchemyPort

__all__ = [
    "SqlAlchemyPort",
    "generate_groups",
    "introspect",
    "offline_templates",
    "readonly_engine",
]
