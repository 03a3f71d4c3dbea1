"""A weather agent built on the OpenAI Agents SDK, as an application would build it.

specrun runs ``agent`` itself (``target: python:weather_agent:agent``): the case's messages go
in, the final text, every tool call and the token usage come out. The one stand-in is the
model: ``OfflineModel`` answers the way a real model would for these cases, so the example runs
with no network and no API key. With a key, use ``model="gpt-4o-mini"`` instead.
"""

from __future__ import annotations

import itertools
from typing import Any

from agents import Agent, Model, ModelResponse, Usage, function_tool
from agents.testing import assistant_message, function_call

FORECASTS = {"paris": "sunny, 24°C", "oslo": "rain, 9°C", "rome": "clear, 28°C"}


@function_tool
def get_weather(city: str) -> str:
    """Today's forecast for a city."""
    forecast = FORECASTS.get(city.lower())
    if forecast is None:
        raise LookupError(f"no forecast for {city}")  # the SDK tells the model; specrun: status error
    return forecast


def _field(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _text(item: Any) -> str:
    content = _field(item, "content")
    if isinstance(content, list):
        return " ".join(str(_field(part, "text") or "") for part in content)
    return str(content or "")


class OfflineModel(Model):
    """Calls get_weather when the user names a city, then says what the tool answered."""

    ids = itertools.count(1)

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        last = items[-1]
        if _field(last, "type") == "function_call_output":
            output = [assistant_message(f"The forecast: {_field(last, 'output')}")]
        else:
            words = [w.strip("?.,!") for w in _text(last).split()]
            city = next((w for w in words if w.istitle() and w.lower() not in ("what", "and", "how", "hello")), None)
            if city:
                output = [function_call("get_weather", {"city": city}, call_id=f"call_{next(self.ids)}")]
            else:
                output = [assistant_message("Hello! Ask me about the weather in a city.")]
        usage = Usage(requests=1, input_tokens=12 * len(items), output_tokens=8, total_tokens=12 * len(items) + 8)
        return ModelResponse(output=output, usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the offline model does not stream")


agent = Agent(
    name="Weather",
    instructions="Answer questions about the weather. Use get_weather for any city.",
    tools=[get_weather],
    model=OfflineModel(),
)
