"""Reusable fakes for tests, and their pytest fixtures.

Register the fixtures once with ``pytest_plugins = ("tests.fakes",)`` in ``tests/conftest.py``, or
import them into a test module.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeOpenAIServer, Recorded, Reply

__all__ = ["FakeOpenAIServer", "Recorded", "Reply", "fake_openai", "fake_openai_server"]


@pytest.fixture(scope="session")
def fake_openai_server() -> Iterator[FakeOpenAIServer]:
    """One local OpenAI-compatible server for the session (starting uvicorn costs ~0.3 s)."""
    server = FakeOpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture
def fake_openai(fake_openai_server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    """The session's fake server with an empty script and no recordings, per test."""
    fake_openai_server.reset()
    yield fake_openai_server
    fake_openai_server.reset()
