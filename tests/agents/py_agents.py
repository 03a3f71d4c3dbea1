"""Python agents for the python target tests."""

import asyncio
import threading
import time

from specrun import Response, ToolCall


def echo(messages, ctx):
    return f"echo: {messages[-1].text}"


async def async_echo(messages, ctx):
    await asyncio.sleep(0)
    return f"async echo: {messages[-1].text} ({ctx.user})"


def structured(messages, ctx):
    return {"answer": 42, "case": ctx.case_id, "turns": len(messages)}


def full(messages, ctx):
    return Response(content="calling", tool_calls=[ToolCall("search", {"q": messages[-1].text})], latency_ms=7.0)


def boom(messages, ctx):
    raise ValueError("bad input")


async def async_boom(messages, ctx):
    raise KeyError("missing")


def returns_set(messages, ctx):
    return {"a", "b"}


def blocking(messages, ctx):
    time.sleep(0.15)
    return f"slept in {threading.current_thread().name}"


def mutating(messages, ctx):
    messages.append(messages[-1])
    return str(len(messages))


class Callable:
    async def __call__(self, messages, ctx):
        return "async instance"


instance = Callable()
