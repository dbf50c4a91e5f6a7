"""The pure domain core: generation, judging, tagging, metrics and statistics.

Nothing under this package imports Kafka, an HTTP server or client, a database driver or
SQLAlchemy; it takes and returns plain objects. That is what lets one core serve the embedded
demo, the batch CLI and the scaled services. ``tests/unit/test_core_purity.py`` keeps it so.
"""
