"""The LLM reader of the reference RAG: answer from the retrieved context, or say "I don't know".

The prompt tells the model to use only the context and to answer exactly ``I don't know.`` when the
context does not contain the answer. A guess from the model's own knowledge would hide a knowledge
gap in the retrieval database (GRAMMAR §5.2, open-domain leakage), which is what we are measuring.
"""

from __future__ import annotations

from collections.abc import Sequence

from groundwatch.core.llm import ChatModel
from groundwatch.core.model import DONT_KNOW
from groundwatch.core.retrieval import Retrieved

PROMPT_VERSION = "reader-v1"

SYSTEM_PROMPT = (
    "You answer questions about an organisation using only the context documents given. "
    "Reply with the answer alone, as short as possible (a name, number, date or short phrase). "
    "If the context does not contain the answer, reply exactly: " + DONT_KNOW + " "
    "Never guess and never use knowledge that is not in the context."
)


def user_prompt(query: str, docs: Sequence[Retrieved], max_chars_per_doc: int = 6000) -> str:
    """The context block followed by the question; long documents are cut to bound the prompt."""
    blocks = [
        f"[Document {i + 1}: {d.doc_id}]\n{d.text[:max_chars_per_doc]}" for i, d in enumerate(docs)
    ]
    context = "\n\n".join(blocks) if blocks else "(no documents were retrieved)"
    return f"Context:\n{context}\n\nQuestion: {query}\nAnswer:"


class LlmReader:
    """:class:`~groundwatch.reference_rag.Reader` that asks a
    :class:`~groundwatch.core.llm.ChatModel`."""

    name = "llm"

    def __init__(self, client: ChatModel, max_tokens: int = 128) -> None:
        self._client = client
        self._max_tokens = max_tokens

    async def read(self, query: str, docs: Sequence[Retrieved]) -> str:
        if not docs:
            return DONT_KNOW  # nothing to read: do not give the model a chance to guess
        replies = await self._client.complete(
            SYSTEM_PROMPT, user_prompt(query, docs), temperature=0.0, max_tokens=self._max_tokens
        )
        answer = replies[0].strip() if replies else ""
        return answer or DONT_KNOW
