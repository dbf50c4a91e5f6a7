"""stages/generator."""
