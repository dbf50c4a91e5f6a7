"""What groundwatch needs of a chat model, and the small text helpers its prompts share.

The prompts and the logic that reads the replies live beside their users — the judge's LLM tier,
RAGProbe's metrics and the reference-free evaluators in ``groundwatch.stages.judge``, the
generators' prompts in ``groundwatch.core.generation`` and ``groundwatch.core.scenarios``, the
reference RAG's reader in ``groundwatch.reference_rag`` — and code against :class:`ChatModel`.
Only ``groundwatch.adapters.llm`` talks to a model (the OpenAI-compatible client, its budget
ledger and the verdict cache); tests pass a fake.
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: ``n`` replies to a system and a user message
    (:class:`groundwatch.adapters.llm.client.LlmClient` is one)."""

    async def complete(
        self,
        system: str,
        user: str,
        *,
        temperature: float = 0.0,
        n: int = 1,
        max_tokens: int | None = None,
    ) -> list[str]: ...


class NamedChatModel(ChatModel, Protocol):
    """A chat model that names its model: the name is part of every cached verdict's key, so a
    verdict of one model is never served for another."""

    model: str


def fill(template: str, **values: str) -> str:
    """``template`` with each ``{name}`` replaced by its value — ``str.replace``, not
    ``str.format``: a brace in a question or an answer must not break (or inject into) the
    prompt."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


_LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")


def listed_lines(text: str) -> list[str]:
    """The non-blank lines of a reply, list markers ("1.", "-", "*", "•") removed."""
    out = []
    for line in text.splitlines():
        s = _LIST_MARKER.sub("", line).strip()
        if s:
            out.append(s)
    return out


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (~4 characters per token for English), for ``--dry-run``."""
    return max(1, (len(text) + 3) // 4)
