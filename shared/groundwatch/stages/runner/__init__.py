"""stages/runner."""
