"""stages/judge."""
