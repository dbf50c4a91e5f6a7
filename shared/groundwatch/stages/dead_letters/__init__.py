"""The dead-letter keeper: the dead-letter topic into the store."""
