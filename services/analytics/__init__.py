"""analytics service."""
