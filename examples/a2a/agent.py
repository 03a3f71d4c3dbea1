"""A small A2A agent on a2a-sdk's server: ``python agent.py`` serves it on 127.0.0.1:9999.

It echoes messages, and answers "weather" with a task that asks which city first.
"""

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Role
from starlette.applications import Starlette

URL = "http://127.0.0.1:9999/"


class WeatherAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text, task = context.get_user_input().strip(), context.current_task
        if task is None and text != "weather":
            await event_queue.enqueue_event(new_text_message(f"You said: {text}", role=Role.ROLE_AGENT))
            return
        if task is None:
            assert context.message is not None
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if text == "weather":
            await updater.requires_input(updater.new_agent_message([new_text_part("Which city?")]))
        else:
            await updater.complete(updater.new_agent_message([new_text_part(f"Sunny in {text}.")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


card = AgentCard(
    name="Weather",
    description="Says the weather",
    version="1.0.0",
    supported_interfaces=[AgentInterface(url=URL, protocol_binding="JSONRPC", protocol_version="1.0")],
    capabilities=AgentCapabilities(streaming=True),
    default_input_modes=["text"],
    default_output_modes=["text"],
    skills=[AgentSkill(id="weather", name="Weather", description="The weather in a city", tags=["weather"])],
)
handler = DefaultRequestHandler(agent_executor=WeatherAgent(), task_store=InMemoryTaskStore(), agent_card=card)
app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=9999)
