"""judge service."""
