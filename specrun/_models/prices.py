"""What a model call costs, from litellm's own price table, read without importing litellm.

The direct route (:mod:`specrun._models.direct_route`) prices its answers as litellm does: from the table
litellm ships (``model_prices_and_context_window_backup.json``, the one litellm reads itself
under ``LITELLM_LOCAL_MODEL_COST_MAP``), the answer's model first, then the model asked for.
A model found in no entry has no known price (``None``), as with litellm. Only the standard
tier's per-token rates are read (input, cached input, output, and their rates above a prompt
size): what prices a chat call of an OpenAI model at the standard tier, audio aside (the
direct route never asks for audio, another tier or a regional endpoint). A model priced in any
other way is routed through litellm instead (:func:`priceable`).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger("specrun._models.client")

TABLE_FILE = "model_prices_and_context_window_backup.json"
_RATE = re.compile(r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost)(_above_(\d+)k_tokens)?$")


@functools.cache
def table() -> dict[str, Any] | None:
    """litellm's price table, or None when litellm or its table cannot be found."""
    try:
        spec = importlib.util.find_spec("litellm")  # finds the package without importing it
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        data = json.loads((Path(folders[0]) / TABLE_FILE).read_text("utf-8")) if folders else None
    except (ImportError, OSError, ValueError, IndexError):
        logger.debug("litellm's price table cannot be read", exc_info=True)
        return None
    return data if isinstance(data, dict) else None


def entry(model: str) -> dict[str, Any] | None:
    """The price entry of an OpenAI-provider model (named without ``openai/``), if any."""
    prices = table() or {}
    found = prices.get(model) or prices.get(f"openai/{model}")
    return found if isinstance(found, dict) else None


def priceable(model: str) -> bool:
    """Whether :func:`cost` prices ``model`` as litellm does: litellm reads its bundled table
    (specrun's default), which is readable, and the model is absent from it (no price) or an
    OpenAI model with per-token rates."""
    if os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "True").lower() != "true" or table() is None:
        return False  # litellm prices from the list it downloads: only litellm can price alike
    found = entry(model)
    if found is None:
        return True
    rates = ("input_cost_per_token", "output_cost_per_token")
    return found.get("litellm_provider") == "openai" and all(isinstance(found.get(r), int | float) for r in rates)


def _rate(found: Mapping[str, Any], name: str, prompt_tokens: int) -> float | None:
    """The rate ``name`` at this prompt size: the highest tier the prompt is above, else the base."""
    tiers = sorted(
        (int(m.group(3)) * 1000, key) for key in found if (m := _RATE.match(key)) and m.group(1) == name and m.group(3)
    )
    chosen = name
    for threshold, key in tiers:
        if prompt_tokens > threshold:
            chosen = key
    value = found.get(chosen)
    return float(value) if isinstance(value, int | float) else None


def cost(models: Iterable[str], usage: Mapping[str, Any]) -> float | None:
    """The USD cost of an answer's ``usage`` (the OpenAI usage object), priced by the first of
    ``models`` with a per-token price; None when none has one."""
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    details = usage.get("prompt_tokens_details")
    cached = int((details or {}).get("cached_tokens") or 0) if isinstance(details, dict) else 0
    for model in models:
        found = entry(model)
        if found is None:
            continue
        input_rate = _rate(found, "input_cost_per_token", prompt)
        output_rate = _rate(found, "output_cost_per_token", prompt)
        if input_rate is None or output_rate is None:
            continue
        cached_rate = _rate(found, "cache_read_input_token_cost", prompt)
        cached_rate = input_rate if cached_rate is None else cached_rate
        return (prompt - cached) * input_rate + cached * cached_rate + completion * output_rate
    return None
