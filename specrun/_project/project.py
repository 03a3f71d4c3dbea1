"""The project: its root and config (``specrun.yaml``), and the agents under test (``agent.yaml``).

The project root is the nearest folder at or above the first input that holds ``specrun.yaml``
(else the working directory). An agent's id is its file's ``id``, else its folder path from the
root, dotted: ``assistants/expense/agent.yaml`` → ``assistants.expense``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._core.data import Agent, Context, Message, Response
from .._core.errors import Problem, SpecrunError, SuiteError, UsageError
from .._core.kinds import Adapter, Session, Target
from .._load.discovery import folder_skip_reason
from .._load.documents import load_mapping
from .._load.loader import load_mapping_file
from .._load.problems import display_path
from .._load.schemas import agent_schema, config_schema
from .registry import Registry

CONFIG_NAMES = ("specrun.yaml", "specrun.yml")
AGENT_NAMES = ("agent.yaml", "agent.yml")


def find_config(start: Path, registry: Registry | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The project root at or above ``start`` and its validated ``specrun.yaml`` (its executor
    options checked against ``registry``'s executors when given), or None."""
    start = start.resolve()
    folder = start if start.is_dir() else start.parent
    for candidate in [folder, *folder.parents]:
        for name in CONFIG_NAMES:
            if (candidate / name).is_file():
                return candidate, load_mapping_file(candidate / name, config_schema(registry), empty_ok=True)
    return None


@dataclass
class Project:
    """The project root, its config, and the agents found in it (indexed on first use)."""

    root: Path
    registry: Registry
    config: dict[str, Any] = field(default_factory=dict)
    _agents: dict[str, Agent] | None = None
    _targets: dict[str, Target] = field(default_factory=dict)
    _by_agent: dict[tuple[int, str | None], Target] = field(default_factory=dict)
    _tracing: Any = None  # specrun._traces.tracing.Tracing, once an agent with traces on is talked to
    _mocks: Any = None  # specrun._mocks.server.MockServer, once a case declares tools:

    @classmethod
    def discover(cls, start: Path, registry: Registry) -> Project:
        found = find_config(start, registry)
        return cls(found[0], registry, found[1]) if found else cls(Path.cwd().resolve(), registry)

    # -- agents ---------------------------------------------------------------------------------

    def agent_id_for(self, agent_file: Path) -> str:
        try:
            rel = agent_file.parent.resolve().relative_to(self.root)
        except ValueError:
            rel = Path(agent_file.parent.name)
        return ".".join(rel.parts) or self.root.name

    def target_config(self, spec: str | dict[str, Any]) -> dict[str, Any] | None:
        """A mapping, or a string a target claims (``python:module:function``, a URL), as a
        target config; None for an agent id."""
        if isinstance(spec, dict):
            return dict(spec)
        for name, cls in self.registry.classes("target").items():
            config = cls.from_spec(spec)
            if config is not None:
                return {"type": name, **config}
        return None

    def read_agent(self, path: Path) -> Agent:
        data = load_mapping_file(path, agent_schema(self.registry))
        base = path.parent.resolve()
        config = self.target_config(data["target"])
        if config is None:
            raise UsageError(f"{path}: target {data['target']!r} must be python:module:function, a URL or a mapping")
        hooks = [base / data["hooks"]] if data.get("hooks") else []
        resources = dict(data.get("resources") or {})
        agent = Agent(data.get("id") or self.agent_id_for(path), config, base, path, hooks, resources)
        if data.get("traces") is not None:
            from .._traces import missing_packages, settings

            agent.traces = settings(data["traces"])
            if missing := missing_packages():
                display = display_path(path)
                line, col = load_mapping(path, display)[1].position(["traces"])
                raise SuiteError([Problem(display, line, col, missing, "traces")])
        return agent

    def agents(self) -> dict[str, Agent]:
        """Every agent file under the root, by id (hidden and vendored folders skipped)."""
        if self._agents is None:
            found: dict[str, Agent] = {}
            problems = []
            for dirpath, dirnames, filenames in os.walk(self.root):
                dirnames[:] = sorted(d for d in dirnames if folder_skip_reason(d) is None)
                for name in AGENT_NAMES:
                    if name in filenames:
                        try:
                            agent = self.read_agent(Path(dirpath, name))
                        except SuiteError as exc:
                            problems.extend(exc.problems)
                            continue
                        if agent.id in found:
                            raise UsageError(
                                f"agent id {agent.id!r} is defined twice: {found[agent.id].path} and {agent.path}"
                            )
                        found[agent.id] = agent
            if problems:
                raise SuiteError(problems)
            self._agents = found
        return self._agents

    def agent(self, agent_id: str) -> Agent:
        agents = self.agents()
        if agent_id not in agents:
            known = ", ".join(sorted(agents)) or "none"
            raise UsageError(f"unknown agent {agent_id!r} (agents under {self.root}: {known})")
        return agents[agent_id]

    def nearest_agent(self, suite_path: Path) -> Agent | None:
        """The agent file nearest above a suite file, up to the project root (the seed's rule)."""
        folder = suite_path.resolve().parent
        for candidate in [folder, *folder.parents]:
            for name in AGENT_NAMES:
                if (candidate / name).is_file():
                    return self.read_agent(candidate / name)
            if candidate == self.root:
                break
        return None

    def resolve(self, spec: str | dict[str, Any], base_dir: Path) -> Agent:
        """An agent from ``-n``/``target`` spelling: an agent id, ``python:mod:func``, a URL or a mapping."""
        config = self.target_config(spec)
        if config is None:
            assert isinstance(spec, str)
            return self.agent(spec.removeprefix("agents:"))
        label = spec if isinstance(spec, str) else f"{config.get('type')} target"
        return Agent(str(label), config, base_dir)

    # -- targets --------------------------------------------------------------------------------

    def connector_model(self, connector: str | None) -> str | None:
        """The litellm model a connector id (``-c``, ``options.connector``) names: its entry in
        ``specrun.yaml``'s ``connectors``, else the id itself."""
        if not connector:
            return None
        return (self.config.get("connectors") or {}).get(connector, connector)

    def adapters(self) -> tuple[type[Adapter], ...]:
        """The installed framework adapters, by ascending priority (what a target asks)."""
        entries = self.registry.types.get("adapter", {}).values()
        return tuple(sorted((e.cls for e in entries), key=lambda cls: cls.priority))

    def target(self, agent: Agent, connector: str | None = None) -> Target:
        """The target instance of an agent (one per agent and run); ``connector`` (``-c``, a
        case's ``options.connector``) replaces the model of targets that take a ``model``."""
        model = self.connector_model(connector)
        known = self._by_agent.get((id(agent), model))
        if known is not None:
            return known
        config = dict(agent.target)
        cls = self.registry.get("target", config.get("type", ""))
        if model and self.takes_model(agent):
            config["model"] = model
        key = json.dumps([str(agent.base_dir), config], sort_keys=True, default=str)
        if key not in self._targets:
            target = cls(config, agent.base_dir)
            target.adapters = self.adapters()
            found = list(target.problems())
            if found:
                raise self._target_error(agent, found)
            self._targets[key] = target
        self._by_agent[(id(agent), model)] = self._targets[key]  # the plan's agents live all run
        return self._targets[key]

    def session(
        self,
        agent: Agent,
        context: Context,
        connector: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        target: Target | None = None,
    ) -> Session:
        """One conversation with ``agent`` (per case and run): its target's session, whose
        agent's spans are the case's evidence when its agent file says ``traces:`` (specrun._traces)
        and whose calls to the case's mocked ``tools`` are too (specrun._mocks). ``target``: the
        agent's ``target(agent, connector)``, when the caller has it already."""
        if target is None:
            target = self.target(agent, connector)
        if not tools:
            return self._session(target, agent, context)
        from .._mocks.session import MockedSession, open_case

        mocks = open_case(self.mocks(), tools, context)  # context.mcp_url: before the target's session
        try:
            return MockedSession(self._session(target, agent, context), self.mocks(), mocks)
        except BaseException:
            self.mocks().close_case(mocks)
            raise

    def _session(self, target: Target, agent: Agent, context: Context) -> Session:
        if agent.traces is None:
            return target.session(context)
        return self.tracing().session(target, agent.traces, context)

    def tracing(self) -> Any:
        """The run's tracing (its receivers and the router of spans to cases), made on first use."""
        if self._tracing is None:
            from .._traces.tracing import Tracing

            self._tracing = Tracing()
        return self._tracing

    def mocks(self) -> Any:
        """The run's mock MCP server (specrun._mocks.server.MockServer), made on first use."""
        if self._mocks is None:
            from .._mocks.server import MockServer

            self._mocks = MockServer()
        return self._mocks

    def _receivers(self, agents: list[Agent]) -> list[tuple[Agent, str | None, str | None]]:
        """Each traced agent, the receiver its spans go to (None: spans of this process) and its target's default."""
        found = []
        for agent in agents:
            if agent.traces is not None:
                default = self.registry.get("target", agent.target.get("type", "")).trace_receiver
                found.append((agent, agent.traces.get("receiver") or default, default))
        return found

    async def start_traces(self, agents: list[Agent]) -> None:
        """Listen for the spans of every traced agent before any case runs: a receiver port
        that is in use, or a tracer provider that is not the SDK's, is bad input, said now."""
        receivers = self._receivers(agents)
        if receivers:
            in_process = any(address is None for _, address, _ in receivers)
            await self.tracing().start([address for _, address, _ in receivers if address], in_process)

    def check_traces_elsewhere(self, agents: list[Agent], executor: str) -> None:
        """On an executor whose cases run in other processes, each listens for its own cases'
        spans: an agent exporting to a fixed receiver port (an ``http`` agent's 127.0.0.1:4318)
        would reach one of them at most (the others cannot bind it), so it is bad input."""
        from .._traces.receiver import parse_address

        for agent, address, default in self._receivers(agents):
            if address is None or parse_address(address)[1] == 0:
                continue
            message = (
                f"traces: otel cannot run on the {executor} executor with the fixed receiver {address}: each worker"
                " listens for its own cases' spans, and several cannot share one port; run it with --executor local"
            )
            if default is not None and parse_address(default)[1] == 0:  # the target tells the agent the port
                message += " (or drop receiver:, so that each worker listens on a free port it tells the agent)"
            if agent.path is None:
                raise UsageError(f"agent {agent.id!r}: {message}")
            display = display_path(agent.path)
            line, col = load_mapping(agent.path, display)[1].position(["traces"])
            raise SuiteError([Problem(display, line, col, message, "traces")])

    def trace_summary(self) -> dict[str, Any]:
        """The run summary's ``traces`` counts, when an agent was traced."""
        return self._tracing.summary() if self._tracing is not None else {}

    def add_trace_summary(self, part: dict[str, Any]) -> None:
        """Count the ``traces`` of a worker's ``trace_summary()`` part with this run's."""
        if part.get("traces"):
            self.tracing().router.add(part["traces"])

    async def call_agent(self, agent_id: str, messages: list[Message], context: Context) -> Response:
        """Send messages to a project agent in a session of its own (validators, simulators,
        generators, reporters). Not with the case's mocked tools: those are its agent's."""
        if context.mcp_url is not None or context._progress is not None:  # the case agent's, not this one's
            context = replace(context, mcp_url=None, _progress=None)
        session = self.session(self.agent(agent_id), context)
        try:
            return Response.of(await session.send(messages))
        finally:
            await session.close()

    def takes_model(self, agent: Agent) -> bool:
        """True when the agent's target has a ``model`` that ``-c`` replaces."""
        cls = self.registry.get("target", agent.target.get("type", ""))
        return "model" in cls.params_schema.get("properties", {})

    def _target_error(self, agent: Agent, found: list[tuple[str, str]]) -> SpecrunError:
        """Target config mistakes: located in the agent file when there is one."""
        if agent.path is None:
            return UsageError(f"target {agent.id!r}: " + "; ".join(f"{f}: {m}" for f, m in found))
        display = display_path(agent.path)
        _, record = load_mapping(agent.path, display)
        problems = []
        nested = isinstance(record.data.get("target"), dict)
        for name, message in found:
            line, col = record.position(["target", *name.split(".")] if nested else ["target"])
            problems.append(Problem(display, line, col, f"agent {agent.id!r}: {message}", f"target.{name}"))
        return SuiteError(problems)

    async def aclose(self) -> None:
        """Close every target built for the run (connection pools, processes)."""
        for target in self._targets.values():
            await target.aclose()
        self._targets.clear()
        self._by_agent.clear()
        if self._tracing is not None:  # after the targets: their agents' last spans may still come
            await self._tracing.close()
        if self._mocks is not None:
            await self._mocks.close()
