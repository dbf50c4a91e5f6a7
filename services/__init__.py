"""The five groundwatch services: thin FastAPI apps around the shared core."""
