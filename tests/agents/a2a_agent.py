"""A small A2A agent for the a2a target's tests, built on a2a-sdk's server (Starlette routes).

What it does depends on the user's text:
- ``task ...``: a Task, worked on, with a text and a data artifact, completed with a message;
- ``report ...``: the same with the text artifact only;
- ``fail``: a Task that fails; ``reject``: one rejected;
- ``ask``: a Task that needs input ("Which city?"); the next message in that task completes it;
- ``hang``: does not answer until ``RELEASE`` is set (as a test's server stops: a2a-sdk's
  request tasks do not stop when cancelled, and a server left with one cannot close);
- anything else: a reply Message ``echo: TEXT (turn N)``, N counting the turns of its context.

``app(url, streaming=...)`` is the ASGI app (its card says it is at ``url``).
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

from a2a.helpers import new_data_part, new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Role
from starlette.applications import Starlette

TURNS: Counter[str] = Counter()  # turns seen per context id
RELEASE = threading.Event()


class Agent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        context_id = str(context.context_id)
        TURNS[context_id] += 1
        task = context.current_task
        if task is None and not text.startswith(("task", "report", "fail", "reject", "ask")):
            while text == "hang" and not RELEASE.is_set():
                await asyncio.sleep(0.01)
            reply = new_text_message(
                f"echo: {text} (turn {TURNS[context_id]})", context_id=context_id, role=Role.ROLE_AGENT
            )
            await event_queue.enqueue_event(reply)
            return
        if task is None:
            assert context.message is not None
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        say = updater.new_agent_message
        if text == "fail":
            await updater.failed(say([new_text_part("the tool broke")]))
        elif text == "reject":
            await updater.reject(say([new_text_part("not allowed")]))
        elif text == "ask":
            await updater.requires_input(say([new_text_part("Which city?")]))
        elif text.startswith(("task", "report")):
            await updater.start_work()
            await updater.add_artifact([new_text_part(f"report on {text.split(' ', 1)[-1]}")], name="report")
            if text.startswith("task"):
                await updater.add_artifact([new_data_part({"items": 3})], name="data")
            await updater.complete(say([new_text_part("Done.")]))
        else:  # the answer to "ask"
            await updater.complete(say([new_text_part(f"Weather in {text}: sunny")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def card(url: str, streaming: bool, version: str = "1.0") -> AgentCard:
    return AgentCard(
        name="Echo",
        description="Echoes, and runs tasks",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=version)],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes text", tags=["echo"])],
    )


def app(url: str, streaming: bool = False, version: str = "1.0") -> Starlette:
    """The agent; ``version="0.3"``: its card says it speaks A2A 0.3 (``message/send``)."""
    agent_card = card(url, streaming, version)
    handler = DefaultRequestHandler(agent_executor=Agent(), task_store=InMemoryTaskStore(), agent_card=agent_card)
    return Starlette(
        routes=[*create_agent_card_routes(agent_card), *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True)]
    )
