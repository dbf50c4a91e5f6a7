"""generator service."""
