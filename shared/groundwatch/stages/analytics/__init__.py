"""stages/analytics."""
