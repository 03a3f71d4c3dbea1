"""The Python test API: drive an agent from pytest and compare its answers (Agent Kernel's ``Test``).

::

    from specrun.testing import Test, Mode

    async with Test("demo.py") as t:               # a CLI agent: python demo.py
        await t.send("Who won the 1996 cricket world cup?")
        await t.expect(["Sri Lanka won the 1996 cricket world cup."])
    Test.compare("Paris.", expected="Paris", mode=Mode.SCORE)   # synchronous, as in Agent Kernel

The agent is a CLI script or command (talked to line by line until its prompt, by the
target that declares ``command_param``, the ``process`` target), a specrun agent id,
``python:module:function``, a URL, or a target mapping such as ``{"type": "http", ...}``.
Comparisons use specrun's compare engine (the ``match`` assertion's) or the configured
evaluator; settings and their precedence are described in :mod:`specrun.testing.config`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import os
import shlex
import shutil
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .._core.data import Context, Message, Response
from .._core.errors import EvaluationError, SpecrunError, TargetError
from .._core.kinds import Verdict
from .._judges.matching import Mode, alternatives
from . import clients
from .config import TestConfig, load_config, load_evaluator
from .tools import expect_tools, tool_params

DEFAULT_READ_TIMEOUT = 30.0
T = TypeVar("T")


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from synchronous code, even inside a running event loop
    (then in a worker thread with its own loop, blocking the caller until it is done)."""
    __tracebackhide__ = True
    try:
        asyncio.get_running_loop()
        running = True
    except RuntimeError:
        running = False
    try:
        if not running:
            return asyncio.run(_await(make))
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="specrun-compare") as pool:
            return pool.submit(asyncio.run, _await(make)).result()
    except (AssertionError, SpecrunError) as exc:
        # The message is the failure; the frames of the loop and the thread under it only hide it.
        raise exc.with_traceback(None)  # noqa: B904 (the same exception, not a new one)


async def _await(make: Callable[[], Awaitable[T]]) -> T:
    __tracebackhide__ = True
    return await make()


def _describe_failure(actual: str, expected: list[str], mode: str, threshold: float, score: float, why: str) -> str:
    lines = [f"the agent's answer matches none of the expected answers (mode {mode}, threshold {threshold:g})"]
    lines.append(f"  received: {actual!r}")
    lines.append("  expected (any of):")
    lines.extend(f"    - {item!r}" for item in expected)
    lines.append(f"  best score: {score:g}" + (f"; {why}" if why else ""))
    return "\n".join(lines)


async def evaluate(
    actual: str | None,
    expected: str | Sequence[str],
    *,
    user_input: str | None = None,
    threshold: float | None = None,
    mode: Mode | str | None = None,
    evaluator: Any = None,
    config: TestConfig | None = None,
) -> tuple[bool, float, str]:
    """Compare ``actual`` with ``expected``; raise ``AssertionError`` (with both) when it does not match.

    Returns ``(passed, score, reason)`` of the evaluator when it does.
    """
    __tracebackhide__ = True  # a failure shows the comparison at the user's line, not these frames
    wanted = alternatives(expected)
    config = config or load_config()
    chosen_mode, chosen_threshold = config.resolve(mode, threshold)
    judge = load_evaluator(evaluator, config)
    text = "" if actual is None else str(actual)
    verdict = judge.evaluate(text, wanted, user_input, chosen_threshold, chosen_mode)
    if inspect.isawaitable(verdict):
        verdict = await verdict
    try:
        passed, score, reason = verdict
    except (TypeError, ValueError):
        raise TypeError(
            f"evaluator {type(judge).__name__} must return (passed, score, reason), not {verdict!r}"
        ) from None
    # the script assertion's rule: a truthy "no" or a 1 is no verdict, and neither is a missing score
    who = f"evaluator {type(judge).__name__}"
    passed, checked = Verdict.checked(passed, score, who)
    if checked is None:
        raise EvaluationError(f"{who} returned a non-numeric score None")
    if not passed:
        raise AssertionError(_describe_failure(text, wanted, chosen_mode, chosen_threshold, checked, str(reason)))
    return passed, float(checked), str(reason)


def _script(token: str, caller_dir: Path | None) -> str:
    """A relative script path as given when it exists here, else next to the calling test file."""
    path = Path(token)
    if path.is_absolute() or path.exists() or caller_dir is None:
        return token
    beside = caller_dir / path
    return str(beside) if beside.exists() else token


def _caller_dir() -> Path | None:
    frame = inspect.currentframe()
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name != __name__:
            file = frame.f_globals.get("__file__")
            return Path(file).resolve().parent if file else None
        frame = frame.f_back
    return None


class Test:
    """An agent under test, driven turn by turn; see the module docstring.

    :param target: ``"demo.py"`` (run with this Python), a command string or list, an agent
        id of the project around the working directory (``agents:ID`` to be explicit),
        ``python:module:function``, a URL, or a target mapping.
    :param match_threshold: threshold of :meth:`expect` (default: the configured one, 0.8).
    :param mode: mode of :meth:`expect` (default: the configured one, ``fallback``).
    :param prompt: regex ending a CLI agent's reply; group 1 names the current agent
        (default: Agent Kernel's ``(name) >> ``).
    :param read_timeout: seconds a CLI agent may take to print its prompt (any other agent:
        to reply); past it the call fails with ``TargetError`` (and later calls fail at once).
    :param cwd: working folder of a CLI agent; ``env``: extra environment variables for it.
    :param grace: seconds a CLI agent's processes get between SIGTERM and SIGKILL when it is
        stopped (default: the process target's, 2).
    :param evaluator: an evaluator (instance, class or dotted path) overriding the configured one.
    """

    __test__ = False  # a class named Test in a test module is not a pytest test class

    def __init__(
        self,
        target: str | Sequence[str] | Mapping[str, Any],
        match_threshold: float | None = None,
        mode: Mode | str | None = None,
        prompt: str | None = None,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        *,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        evaluator: Any = None,
        grace: float | None = None,
    ):
        self.target = target
        self.match_threshold = match_threshold
        self.mode = mode
        self.prompt = prompt
        self.read_timeout = read_timeout
        self.cwd = cwd
        self.env = dict(env or {})
        self.evaluator = evaluator
        self.grace = grace
        self.last_user_input: str | None = None
        self.last_agent_response: str | None = None
        self.last_response: Response | None = None
        self.agent_name: str | None = None
        self.banner = ""
        self._caller_dir = _caller_dir()
        self._process: Any = None  # AgentProcess of a CLI agent
        self._session: Any = None  # a target session otherwise
        self._project: Any = None
        self._history: list[Message] = []
        self._failed: str | None = None
        self._cli_reply = False  # the last reply came from a CLI agent, which reports no tool calls
        self._holding = False  # this test keeps its loop's judge clients open from start() to stop()
        self._command = self._command_of(target)

    # -- what the target is ---------------------------------------------------------------------

    def _command_of(self, target: Any) -> list[str] | None:
        """The argv when ``target`` is a CLI command, else None (an agent or target mapping)."""
        if isinstance(target, Mapping):
            return None
        if not isinstance(target, str):
            argv = [str(a) for a in target]
        else:
            if target.startswith("agents:") or self._is_target_spec(target):
                return None
            argv = shlex.split(target)
            if len(argv) == 1 and not self._looks_like_program(argv[0]):
                return None  # a bare name that is no file or program: an agent id
        if not argv:
            raise ValueError("the agent command is empty")
        argv[0] = _script(argv[0], self._caller_dir) if argv[0].endswith(".py") else argv[0]
        return argv

    def _looks_like_program(self, token: str) -> bool:
        if token.endswith(".py") or os.sep in token or Path(token).is_file():
            return True
        return not self._is_agent_id(token) and shutil.which(token) is not None

    @staticmethod
    def _is_target_spec(text: str) -> bool:
        """True for a string a target claims (``python:module:function``, a URL)."""
        from .._project.plugin_manager import default_plugins

        return any(cls.from_spec(text) is not None for cls in default_plugins().registry.classes("target").values())

    @staticmethod
    def _is_agent_id(name: str) -> bool:
        try:
            return name in Test._open_project().agents()
        except Exception:
            return False

    @staticmethod
    def _open_project() -> Any:
        from .._project.plugin_manager import default_plugins
        from .._project.project import Project

        return Project.discover(Path.cwd(), default_plugins().registry)

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> str:
        """Start the agent (a CLI agent: up to its first prompt); returns its banner.

        On failure everything started is stopped again before the error is raised.
        """
        if self._process is not None or self._session is not None:
            return self.banner
        self._failed = None
        if not self._holding:
            clients.hold()
            self._holding = True
        try:
            if self._command is not None:
                self._process = self._new_process(self._command)
                self.banner = await self._process.start()
                self.agent_name = self._process.agent_name
            else:
                await self._open_session()
        except BaseException as exc:
            self._failed = str(exc)
            await self.stop()
            raise
        return self.banner

    def _new_process(self, argv: list[str]) -> Any:
        """The unstarted process of a CLI agent, from the target that declares it runs commands."""
        from .._project.plugin_manager import default_plugins

        cls = default_plugins().registry.declaring("target", "command_param")
        if cls is None:
            raise TargetError("no installed target runs a command")
        config: dict[str, Any] = {cls.command_param: argv, "read_timeout": self.read_timeout, "env": self.env}
        if self.prompt:
            config["prompt"] = self.prompt
        if self.grace is not None:
            config["grace"] = self.grace
        return cls(config, Path(self.cwd or ".")).session(Context(case_id="specrun.testing")).process

    async def _open_session(self) -> None:
        self._project = self._open_project()
        spec: str | dict[str, Any] = dict(self.target) if isinstance(self.target, Mapping) else str(self.target)
        if isinstance(spec, dict) and self.prompt:  # the prompt of a CLI agent's target
            cls = self._project.registry.classes("target").get(spec.get("type"))
            if cls is not None and cls.command_param:
                spec["prompt"] = self.prompt
        agent = self._project.resolve(spec, Path.cwd())
        self.agent_name = agent.id if self._project.target_config(spec) is None else None
        target = self._project.target(agent)
        self._session = target.session(Context(case_id="specrun.testing"))
        process = getattr(self._session, "process", None)
        if process is not None and hasattr(process, "start"):  # a stateful CLI agent: start it now
            self.banner = await process.start()
            self.agent_name = process.agent_name or self.agent_name

    async def stop(self) -> None:
        """Stop the agent and release what it held. A CLI agent ends with everything it started
        (SIGTERM, then SIGKILL after ``grace`` seconds, two by default; see :mod:`specrun._run.proctree`)."""
        process, session, project = self._process, self._session, self._project
        self._process = self._session = self._project = None
        try:
            if process is not None:
                await process.close()
            if session is not None:
                await session.close()
            if project is not None:
                await project.aclose()
        finally:
            if self._holding:
                self._holding = False
                await clients.release()

    async def __aenter__(self) -> Test:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def stderr(self) -> str:
        """The end of what a CLI agent wrote to stderr (kept apart from its replies)."""
        process = self._process or getattr(self._session, "process", None)
        return process.stderr_tail if process is not None else ""

    # -- the conversation -----------------------------------------------------------------------

    async def send(self, message: str) -> str:
        """Send one user message; return the reply text (also in ``last_agent_response``).

        ``!select NAME`` switches a CLI agent; the name its prompt shows is ``agent_name``.
        An agent that fails (exits, or prints no prompt within ``read_timeout``) raises
        ``TargetError``, and every later call raises it at once instead of waiting again.
        """
        if self._failed is not None:
            raise TargetError(f"the agent failed earlier: {self._failed}")
        if self._process is None and self._session is None:
            await self.start()
        self.last_user_input = message
        self.last_agent_response = self.last_response = None
        try:
            if self._process is not None:
                reply = await self._process.ask(message)
                self.agent_name = self._process.agent_name or self.agent_name
                response = Response(content=reply)
            else:
                self._history.append(Message("user", message))
                try:
                    async with asyncio.timeout(self.read_timeout):
                        response = Response.of(await self._session.send(list(self._history)))
                except TimeoutError:
                    self._history.pop()
                    raise TargetError(f"no reply within {self.read_timeout:g}s") from None
                self._history.append(Message("assistant", response.text))
                self.agent_name = getattr(self._session, "agent_name", None) or self.agent_name
        except TargetError as exc:
            self._failed = str(exc)
            raise
        self.last_response = response
        self.last_agent_response = response.text
        self._cli_reply = (self._process or getattr(self._session, "process", None)) is not None
        return response.text

    def expect_tool_called(self, name: str | Sequence[str], arguments: Mapping[str, Any] | None = None) -> None:
        """Assert that the agent called ``name`` (a list: any of them) in its last reply, with
        ``arguments`` as a subset of the call's (the ``tool_called`` assertion's rule).

        Synchronous: nothing to await. ``AssertionError`` lists the calls made otherwise;
        ``EvaluationError`` for a CLI agent, whose tool calls are not known.
        """
        __tracebackhide__ = True
        params = tool_params(name, arguments)
        run_sync(lambda: expect_tools(self.last_response, "tool_called", params, self._cli_reply))

    def expect_tool_not_called(self, name: str | Sequence[str], arguments: Mapping[str, Any] | None = None) -> None:
        """Assert that the agent did not call ``name`` (a list: any of them; with ``arguments``:
        with those arguments) in its last reply; the negation of :meth:`expect_tool_called`."""
        __tracebackhide__ = True
        params = tool_params(name, arguments)
        run_sync(lambda: expect_tools(self.last_response, "tool_not_called", params, self._cli_reply))

    async def expect(self, expected: str | Sequence[str]) -> tuple[bool, float, str]:
        """Assert that the last reply matches one of ``expected`` (a bare string is one answer),
        with this test's mode and ``match_threshold``; ``AssertionError`` shows both otherwise."""
        __tracebackhide__ = True
        if self.last_agent_response is None:
            raise AssertionError("no reply to check: call send() first")
        return await evaluate(
            self.last_agent_response,
            expected,
            user_input=self.last_user_input,
            threshold=self.match_threshold,
            mode=self.mode,
            evaluator=self.evaluator,
        )

    # -- comparing any answer -------------------------------------------------------------------

    @staticmethod
    def compare(
        actual: str | None,
        expected: str | Sequence[str],
        user_input: str | None = None,
        threshold: float | None = None,
        mode: Mode | str | None = None,
        *,
        evaluator: Any = None,
    ) -> tuple[bool, float, str]:
        """Assert that ``actual`` matches one of ``expected``; synchronous, as in Agent Kernel.

        Works with or without a running event loop (inside one it judges in a worker thread and
        blocks until done; ``await Test.acompare(...)`` does not block). ``mode`` and
        ``threshold`` default to the configured ones. Raises ``AssertionError`` showing the
        expected and received answers; returns ``(passed, score, reason)``.
        """
        __tracebackhide__ = True
        return run_sync(lambda: Test.acompare(actual, expected, user_input, threshold, mode, evaluator=evaluator))

    @staticmethod
    async def acompare(
        actual: str | None,
        expected: str | Sequence[str],
        user_input: str | None = None,
        threshold: float | None = None,
        mode: Mode | str | None = None,
        *,
        evaluator: Any = None,
    ) -> tuple[bool, float, str]:
        """:meth:`compare` for async code."""
        __tracebackhide__ = True
        return await evaluate(
            actual, expected, user_input=user_input, threshold=threshold, mode=mode, evaluator=evaluator
        )

    # -- a validator agent judging any answer ----------------------------------------------------

    @staticmethod
    def assert_agent(
        actual: Any,
        validator: str | None,
        options: Mapping[str, Any] | None = None,
        *,
        threshold: float | None = None,
        user_input: str | None = None,
    ) -> tuple[bool, float, str]:
        """Have a validator agent judge ``actual``, as V2's ``t.assert.Agent(response, validator, options)``.

        ``validator`` is an agent id of the project around the working directory (``agents:``
        optional; None: the built-in validator with the configured judge model); it receives
        ``options`` (``{"metadata": {"criteria": ..., "conversation": [...]}}``) and answers a
        score from 0 to 1, passing at ``threshold`` (default 0.5). Raises ``AssertionError`` when
        it rejects the answer, ``EvaluationError`` when it reaches no verdict; returns
        ``(passed, score, reason)``. Synchronous like :meth:`compare`; ``await Test.aassert_agent(...)``.
        """
        __tracebackhide__ = True
        return run_sync(
            lambda: Test.aassert_agent(actual, validator, options, threshold=threshold, user_input=user_input)
        )

    @staticmethod
    async def aassert_agent(
        actual: Any,
        validator: str | None,
        options: Mapping[str, Any] | None = None,
        *,
        threshold: float | None = None,
        user_input: str | None = None,
    ) -> tuple[bool, float, str]:
        """:meth:`assert_agent` for async code."""
        __tracebackhide__ = True
        from .validators import judge_with_agent

        return await judge_with_agent(actual, validator, options, threshold=threshold, user_input=user_input)
