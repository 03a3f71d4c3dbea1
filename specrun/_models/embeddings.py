"""Embeddings as the model client returns them (``ModelClient.embed``), and how a provider's reply is read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._core.data import Usage
from .._core.errors import EvaluationError
from . import prices


@dataclass
class Embeddings:
    """One vector per text asked about, in order; ``usage`` is what the call cost (nothing when
    ``cached``)."""

    vectors: list[list[float]]
    usage: Usage = field(default_factory=Usage)
    cached: bool = False


def vectors_of(response: Any, count: int) -> list[list[float]]:
    """The vectors of a litellm embedding reply, in the order of the texts; an ``EvaluationError``
    when the reply does not hold one vector per text."""
    data = response.get("data") if isinstance(response, dict) else getattr(response, "data", None)
    try:
        rows = sorted(data or [], key=lambda d: d["index"] if isinstance(d, dict) else d.index)
        vectors = [[float(x) for x in (d["embedding"] if isinstance(d, dict) else d.embedding)] for d in rows]
    except (KeyError, AttributeError, TypeError, ValueError) as exc:
        raise EvaluationError(f"the embedding reply could not be read: {type(exc).__name__}: {exc}") from None
    if len(vectors) != count or not all(vectors):
        raise EvaluationError(f"the embedding reply holds {len(vectors)} vectors for {count} texts")
    return vectors


def embedding_usage(answer: dict[str, Any], asked: str) -> Usage:
    """The tokens and cost of an OpenAI embeddings JSON answer, priced as litellm prices it."""
    found = answer.get("usage")
    data: dict[str, Any] = found if isinstance(found, dict) else {}
    prompt = int(data.get("prompt_tokens") or 0)
    models = [m for m in (answer.get("model"), asked) if isinstance(m, str) and m]
    return Usage(prompt, 0, int(data.get("total_tokens") or prompt), prices.cost(models, data))
