"""pytest plugin (entry point ``pytest11``): ``pytest suites/`` runs specrun suite files, one item per case.

Which files: suite files in a specrun project, decided by place and content so that the
other JSON and YAML of a repository (``package.json``, ``docker-compose.yaml``, reports specrun
wrote) is left alone; the rule is :mod:`specrun._load.pytest_collect`'s. ``--specrun`` collects them
outside a project too.

Each case is an item named by its id (node id ``path::case_id``), so ``-k``, ``-x``,
``--junitxml``, ``-m TAG`` (a case's ``tags`` are markers) and pytest-xdist work. The case runs
through :meth:`specrun._run.session.RunSession.run_case` on one event loop per pytest process, in the
item's setup: a failed assertion is a pytest failure showing each assertion's message,
expected and actual; a specrun error (the agent crashed or timed out, a judge gave no verdict)
is a pytest error; a skipped case is skipped. Mistakes in a suite are a collection error
listing every ``file:line:col``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ._load.pytest_collect import SUFFIXES, clear_caches, folders_in_testpaths, is_suite_file

T = TypeVar("T")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("specrun")
    group.addoption(
        "--specrun",
        action="store_true",
        default=False,
        help="Collect specrun suite files outside a specrun project too (default: only inside a folder"
        " with specrun.yaml or agent.yaml).",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "specrun: a case from a specrun suite file")
    config.stash[_STATE] = _State()
    clear_caches()  # a new session may see new specrun.yaml files


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix.lower() not in SUFFIXES:
        return None
    config = parent.config
    state = config.stash[_STATE]
    if state.testpaths is None:
        state.testpaths = folders_in_testpaths(config.rootpath, config.getini("testpaths"))
    named = parent.session.isinitpath(file_path)
    if is_suite_file(file_path, config.getoption("specrun"), config.invocation_params.dir, state.testpaths, named):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


class _State:
    """What the session shares: plugins, one loader and run session per project root (see
    :mod:`specrun._run.session`), and the event loop (in a thread) that every case runs on, so
    that connection pools live as long as the session."""

    def __init__(self) -> None:
        self._plugins: Any = None
        self.loaders: dict[Path, Any] = {}  # a project's specrun.yaml gives its assertions defaults
        self.sessions: dict[Path, Any] = {}
        self.testpaths: tuple[Path, ...] | None = None  # pytest's testpaths, as folders
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def plugins(self) -> Any:
        if self._plugins is None:
            from ._project.plugin_manager import default_plugins

            self._plugins = default_plugins()
        return self._plugins

    def loader_for(self, project: Any) -> Any:
        if project.root not in self.loaders:
            from ._load.loader import Loader

            self.loaders[project.root] = Loader(self.plugins.registry, config=project.config)
        return self.loaders[project.root]

    def session_for(self, path: Path) -> Any:
        """The run session of the project ``path`` belongs to."""
        from ._project.project import Project
        from ._run.session import RunRequest, RunSession

        project = Project.discover(path, self.plugins.registry)
        if project.root not in self.sessions:
            self.sessions[project.root] = RunSession(RunRequest([str(path)]), self.plugins, project)
        return self.sessions[project.root]

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="specrun-cases", daemon=True)
            self._thread.start()
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def close(self) -> None:
        if self._loop is None:
            return
        for session in self.sessions.values():
            try:
                self.run(asyncio.wait_for(session.aclose(), 10))
            except Exception:
                pass  # best effort: the session is over
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        if not self._loop.is_running():
            self._loop.close()
        self._loop = None


_STATE = pytest.StashKey[_State]()


class SuiteFile(pytest.File):
    """A suite file: one :class:`CaseItem` per case, each with the agent it will run against."""

    def collect(self) -> Iterator[CaseItem]:
        from ._core.errors import SpecrunError, SuiteError
        from ._run.plan import build_plan

        state = self.config.stash[_STATE]
        try:
            session = state.session_for(self.path)
            suite, problems = state.loader_for(session.project).load_file(self.path)
            if problems:
                raise SuiteError(problems)
            plan = build_plan([suite], session.project, state.plugins)
        except SpecrunError as exc:
            raise self.CollectError(str(exc)) from None
        collect_only = self.config.getoption("collectonly", False)
        if (
            session.models is not None
            and not collect_only
            and plan.needs_model(state.plugins.registry, session.project.config)
        ):
            session.models.preload(plan.model_uses(state.plugins.registry))
        several = Counter((ref.suite, ref.number) for ref, _ in plan.pairs)  # targets: a case against each agent
        for (ref, _), (case, agent) in zip(plan.pairs, plan.cases(), strict=True):
            name = f"{case.id}[{agent.id}]" if several[ref.suite, ref.number] > 1 else case.id
            yield CaseItem.from_parent(self, name=name, case=case, agent=agent, run_session=session)


class CaseFailed(Exception):
    """A case whose assertions said no; its representation lists them."""

    def __init__(self, result: Any):
        super().__init__(result.case.id)
        self.result = result


class CaseItem(pytest.Item):
    """One case of a suite, run once."""

    def __init__(self, *, case: Any, agent: Any, run_session: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.case = case
        self.agent = agent
        self.run_session = run_session  # pytest's own Node.session is the pytest session
        self.result: Any = None
        self.add_marker("specrun")
        for tag in case.tags:
            if tag.isidentifier() or all(c.isalnum() or c in "-_." for c in tag):
                self.config.addinivalue_line("markers", f"{tag}: specrun case tag")
                self.add_marker(tag)
        if case.skip:
            self.add_marker(pytest.mark.skip(reason=case.skip if isinstance(case.skip, str) else "skip: true"))
        self.user_properties.append(("agent", agent.id))

    def setup(self) -> None:
        if self.config.getoption("setuponly", False):
            return
        self.result = result = self.config.stash[_STATE].run(self.run_session.run_case(self.case, self.agent))
        if result.status == "error":
            pytest.fail(describe(result), pytrace=False)

    def runtest(self) -> None:
        result = self.result
        if result is None:
            return
        if result.status == "skipped":
            pytest.skip(result.error or "skipped")
        if result.status == "failed":
            raise CaseFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return describe(excinfo.value.result)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.case.location.line - 1, f"case {self.case.id}"


def _short(value: Any, limit: int = 500) -> str:
    import json

    from ._report.display import shorten

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = repr(text) if isinstance(value, str) else text
    return shorten(text, limit, "...")


def describe(result: Any) -> str:
    """A failed or errored result for a person: where, the input, the output, and why."""
    case = result.case
    lines = [f"specrun case {case.id!r} {result.status} ({case.location})"]
    if case.input:
        lines.append(f"  input:  {_short(case.input[-1].text)}")
    if result.response is not None:
        lines.append(f"  output: {_short(result.response.content)}")
    if result.error:
        lines.append(f"  error:  {result.error}")
    for verdict in result.assertions:
        if verdict.status == "passed":
            continue
        mark = "✗" if verdict.status == "failed" else "!"
        lines.append(f"  {mark} {verdict.type} {verdict.status}" + (f": {verdict.message}" if verdict.message else ""))
        if verdict.expected is not None:
            lines.append(f"      expected: {_short(verdict.expected)}")
        if verdict.actual is not None:
            lines.append(f"      actual:   {_short(verdict.actual)}")
    passed = sum(1 for v in result.assertions if v.status == "passed")
    if result.assertions:
        lines.append(f"  {passed} of {len(result.assertions)} assertions passed")
    from ._core.redact import redact

    return redact("\n".join(lines))
