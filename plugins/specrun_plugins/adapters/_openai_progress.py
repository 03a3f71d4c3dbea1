"""An OpenAI Agents SDK run that tells ``Context.progress`` what it has done as it goes, for the
``openai-agents`` adapter: so that a case over its ``limits:`` is stopped mid-reply, before the
tools a model response asks for run.

The SDK calls its ``RunHooks`` in tasks of its own, but ``Context.progress`` stops a reply only
when told from the task awaiting ``send`` (the case's limits cancel that task). So the run goes
in a task of its own; each model response's hook (``on_llm_end``, which the SDK awaits before it
runs that response's tools, streamed or not) hands the session a report and waits until the
session, in its own task, has told ``Context.progress``. Over a limit, that raises
``CancelledError`` in the session's task, which cancels the run, its hook and its tools.
Nothing here imports the SDK at module level.
"""

from __future__ import annotations

import asyncio
import functools
import json
import types
from typing import Any

from specrun.plugin import Context, Response

from . import _openai_items as items


@functools.cache
def _reporting_hooks(run_hooks: type) -> type:
    """A ``RunHooks`` subclass (made once the SDK is imported) that keeps the run's model
    responses and tool results, and hands a report over after each model response."""

    class ReportingHooks(run_hooks):
        def __init__(self) -> None:
            self.responses: list[Any] = []
            self.results: dict[str, Any] = {}  # call id -> what the tool returned
            self.reports: asyncio.Queue[asyncio.Future[None]] = asyncio.Queue()

        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            self.responses.append(response)
            told = asyncio.get_running_loop().create_future()
            self.reports.put_nowait(told)
            await told  # this response's tools wait until the case's limits have seen its calls

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            call_id = getattr(context, "tool_call_id", None)
            if isinstance(call_id, str):
                self.results[call_id] = result

    return ReportingHooks


def so_far(hooks: Any, run_input: Any, failed: set[str]) -> Response:
    """What the run has done so far: the tool calls its model responses asked for (those that
    ran with their results), and their usage."""
    run = types.SimpleNamespace(raw_responses=hooks.responses, new_items=[], input=run_input)
    calls = items.tool_calls(run)
    for call in calls:
        if call.id in hooks.results:
            call.result = _jsonable(hooks.results[call.id])
            if call.id in failed:
                call.status = "error"
    return Response(None, tool_calls=calls, usage=items.usage_of(hooks.responses))


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)
    return value


async def run_reporting(
    sdk: Any, agent: Any, run_input: Any, context: Context, failed: set[str], **options: Any
) -> Any:
    """``Runner.run(agent, run_input, context=context, **options)`` in a task of its own, each
    model response reported to ``context.progress`` from this task; cancelled (and waited for,
    its tools with it) when this task is, or when ``progress`` stops it. ``failed``: the call
    ids the run's ``tool_error_formatter`` has been told of."""
    hooks = _reporting_hooks(sdk.RunHooks)()
    run = asyncio.ensure_future(sdk.Runner.run(agent, run_input, context=context, hooks=hooks, **options))
    try:
        while not run.done():
            report = asyncio.ensure_future(hooks.reports.get())
            try:
                await asyncio.wait((run, report), return_when=asyncio.FIRST_COMPLETED)
            finally:
                report.cancel()  # nothing when it came
            if report.done() and not report.cancelled():
                told = report.result()
                context.progress(so_far(hooks, run_input, failed))  # over a limit: CancelledError
                if not told.done():
                    told.set_result(None)
    except BaseException:
        run.cancel()
        await asyncio.wait((run,))  # its tools are stopped before the case goes on
        raise
    return run.result()
