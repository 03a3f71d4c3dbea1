"""Plugin discovery and the registry (specrun/_project/plugin_manager.py, specrun/_project/registry.py).

End to end: the real distribution under tests/fake_plugin/ is pip-installed into a temporary
folder and found through its ``specrun`` entry point by the ``specrun`` console script.
In process: each test builds its own manager from small in-test plugin classes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from support.background import Job
from support.started import finish

import specrun
from specrun._core import hookspecs
from specrun._core.data import Assertion
from specrun._core.errors import PluginError, SuiteError
from specrun._core.kinds import AssertionType, Check, Reporter, Verdict
from specrun._load.loader import Loader
from specrun._load.schemas import compose
from specrun._project.plugin_manager import DISABLE_ENV, blocked_names, get_plugin_manager
from specrun._project.registry import KINDS

ROOT = Path(__file__).resolve().parent.parent
FAKE_PLUGIN = Path(__file__).parent / "fake_plugin"
SPECRUN = str(Path(sys.executable).with_name("specrun"))

SHOUTING_SUITE = """\
- id: loud
  input: say it loud
  assertions:
    - type: shouting
      min_length: 3
"""


# From the source folder, as a user installs a checkout (flit_core writes nothing into it).
# Started when collection finishes (tests/support/background.py): the install's 2 s overlap the
# tests before these.
INSTALL = Job(
    __name__, "fake_site",
    lambda folder: [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                    str(folder / "site"), str(FAKE_PLUGIN)],
)


@pytest.fixture(scope="module")
def fake_site() -> Path:
    """specrun-fake-plugin installed (``pip install --target``) into a folder of its own."""
    result = INSTALL.result(timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert INSTALL.folder is not None
    site = INSTALL.folder / "site"
    assert (site / "specrun_fake_plugin-0.1.0.dist-info").is_dir()
    return site


def start_specrun(*args: str, site: Path | None = None, cwd: Path | None = None,
                  **env: str) -> subprocess.Popen[str]:
    environ = {k: v for k, v in os.environ.items()
               if k not in (DISABLE_ENV, "PYTHONPATH", "SPECRUN_FAKE_PLUGIN_BREAK")}
    if site is not None:
        environ["PYTHONPATH"] = str(site)
    environ.update(env)
    # Two independent commands of a test are started together, then finished: see support.started.
    return subprocess.Popen([SPECRUN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=environ, cwd=cwd)


def run_specrun(*args: str, site: Path | None = None, cwd: Path | None = None,
                **env: str) -> subprocess.CompletedProcess[str]:
    return finish(start_specrun(*args, site=site, cwd=cwd, **env), timeout=60)


@pytest.fixture
def shouting_suite(tmp_path: Path) -> Path:
    path = tmp_path / "loud.yaml"
    path.write_text(SHOUTING_SUITE)
    return path


# -- the fake distribution, end to end ------------------------------------------------------------


def test_plugins_lists_the_third_party_plugin(fake_site: Path) -> None:
    result = run_specrun("plugins", site=fake_site)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = lines.index("fake (specrun-fake-plugin 0.1.0)")
    assert lines[at + 1] == "  assertion: shouting"


def test_plugins_json_has_the_third_party_plugin(fake_site: Path) -> None:
    result = run_specrun("plugins", "--json", site=fake_site)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    fake = next(p for p in data["plugins"] if p["name"] == "fake")
    assert fake == {
        "name": "fake",
        "distribution": "specrun-fake-plugin",
        "version": "0.1.0",
        "types": {"assertion": ["shouting"]},
    }
    assert data["blocked"] == []


def test_schema_contains_the_plugin_type_and_its_parameters(fake_site: Path) -> None:
    with_plugin, without = start_specrun("schema", site=fake_site), start_specrun("schema")
    result = finish(with_plugin)
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    slot = schema["$defs"]["assertion"]
    assert "shouting" in slot["properties"]["type"]["enum"]
    branch = next(b["then"] for b in slot["allOf"]
                  if b["if"]["properties"]["type"]["const"] == "shouting")
    assert branch["properties"]["min_length"]["type"] == "integer"
    assert branch["additionalProperties"] is False
    assert "shouting" not in finish(without).stdout


def test_suite_using_the_plugin_validates(fake_site: Path, shouting_suite: Path) -> None:
    result = run_specrun("validate", str(shouting_suite), site=fake_site)
    assert result.returncode == 0, result.stderr
    assert "ok: 1 cases in 1 suite files" in result.stdout


def test_plugin_parameters_are_checked(fake_site: Path, tmp_path: Path) -> None:
    started = []
    for folder, line in (("misspelt", "min_lenght: three"), ("mistyped", "min_length: three")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "typo.yaml").write_text(SHOUTING_SUITE.replace("min_length: 3", line))
        started.append(start_specrun("validate", "typo.yaml", site=fake_site, cwd=tmp_path / folder))
    result = finish(started[0])
    assert result.returncode == 2
    assert ("typo.yaml:5:7: unknown field 'min_lenght'; did you mean 'min_length'? "
            "(allowed: message, min_length, negate, type) "
            "(at cases[0].assertions[0].min_lenght)") in result.stderr
    result = finish(started[1])
    assert result.returncode == 2
    assert "typo.yaml:5:19: " in result.stderr
    assert "min_length must be an integer, not a string" in result.stderr


@pytest.mark.parametrize("block", ["fake", "specrun-fake-plugin", "other, fake"])
def test_blocking_the_plugin_makes_the_suite_invalid(
    fake_site: Path, shouting_suite: Path, block: str
) -> None:
    validate = start_specrun("validate", str(shouting_suite), site=fake_site, **{DISABLE_ENV: block})
    plugins = start_specrun("plugins", site=fake_site, **{DISABLE_ENV: block})
    result = finish(validate)
    assert result.returncode == 2
    assert "unknown assertion type 'shouting'" in result.stderr
    assert "(at cases[0].assertions[0].type)" in result.stderr
    assert "Traceback" not in result.stderr
    listed = finish(plugins)
    assert "fake (specrun-fake-plugin" not in listed.stdout
    assert "blocked by SPECRUN_DISABLE_PLUGINS:" in listed.stdout


def test_without_the_plugin_installed_the_suite_is_invalid(shouting_suite: Path) -> None:
    result = run_specrun("validate", str(shouting_suite))
    assert result.returncode == 2
    assert re.search(r"loud\.yaml:4:13: unknown assertion type 'shouting'", result.stderr)


def test_a_plugin_that_fails_to_import_names_its_distribution(
    fake_site: Path, shouting_suite: Path
) -> None:
    suite = shouting_suite.with_name("plain.jsonl")
    suite.write_text('{"id": "a", "input": "hi"}\n')
    broken = start_specrun("validate", str(shouting_suite), site=fake_site,
                           SPECRUN_FAKE_PLUGIN_BREAK="1")
    blocked = start_specrun("validate", str(suite), site=fake_site, SPECRUN_FAKE_PLUGIN_BREAK="1",
                            **{DISABLE_ENV: "fake"})
    result = finish(broken)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "specrun: plugin 'fake' from distribution specrun-fake-plugin failed to import: "
        "RuntimeError: broken on purpose: SPECRUN_FAKE_PLUGIN_BREAK is set"
    )
    # Blocking a broken plugin is the way around it: it is never imported.
    result = finish(blocked)
    assert result.returncode == 0, result.stderr


def test_in_process_discovery_and_import_failure(
    fake_site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(fake_site))
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    monkeypatch.delitem(sys.modules, "specrun_fake_plugin", raising=False)
    plugins = get_plugin_manager()
    info = next(i for i in plugins.infos if i.name == "fake")
    assert (info.distribution, info.version, info.types) == (
        "specrun-fake-plugin", "0.1.0", {"assertion": ["shouting"]}
    )
    entry = plugins.registry.types["assertion"]["shouting"]
    assert (entry.plugin, entry.distribution) == ("fake", "specrun-fake-plugin")

    monkeypatch.delitem(sys.modules, "specrun_fake_plugin", raising=False)
    monkeypatch.setenv("SPECRUN_FAKE_PLUGIN_BREAK", "1")
    with pytest.raises(PluginError, match="plugin 'fake' from distribution specrun-fake-plugin "
                                          "failed to import: RuntimeError"):
        get_plugin_manager()

    monkeypatch.setenv(DISABLE_ENV, "fake")
    plugins = get_plugin_manager()
    assert plugins.manager.is_blocked("fake")
    assert "shouting" not in plugins.registry.names("assertion")


# -- the registry, in process ---------------------------------------------------------------------


class Loud(AssertionType):
    name = "loud"
    params_schema: ClassVar[dict[str, Any]] = {
        "properties": {"min_length": {"type": "integer"}},
        "required": ["min_length"],
    }

    async def evaluate(self, assertion: Assertion, check: Check) -> Verdict:
        return Verdict(check.response.text.isupper())


class AlsoLoud(AssertionType):
    name = "loud"


class LoudPlugin:
    @specrun.hookimpl
    def register_assertion_types(self, register: Callable[[type[AssertionType]], None]) -> None:
        register(Loud)


class OtherLoudPlugin:
    @specrun.hookimpl
    def register_assertion_types(self, register: Callable[[type[AssertionType]], None]) -> None:
        register(AlsoLoud)


@pytest.fixture(autouse=True)
def _no_blocking(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    yield


def test_an_in_test_plugin_registers_its_type_with_provenance() -> None:
    plugins = get_plugin_manager(extra=[LoudPlugin()], use_entry_points=False)
    assert plugins.registry.names("assertion") == ["loud"]
    assert plugins.registry.get("assertion", "loud") is Loud
    assert plugins.registry.types["assertion"]["loud"].plugin == "LoudPlugin"
    assert [(i.name, i.types) for i in plugins.infos] == [("LoudPlugin", {"assertion": ["loud"]})]


def test_duplicate_type_name_names_both_plugins() -> None:
    with pytest.raises(PluginError) as info:
        get_plugin_manager(extra=[LoudPlugin(), OtherLoudPlugin()], use_entry_points=False)
    message = str(info.value)
    assert "assertion type 'loud' is registered twice" in message
    assert "'LoudPlugin'" in message and "'OtherLoudPlugin'" in message


def test_misspelt_hook_name_is_an_error() -> None:
    class Typo:
        @specrun.hookimpl
        def register_assertion_type(self, register: Any) -> None:  # missing "s"
            register(Loud)

    with pytest.raises(PluginError, match="plugin 'Typo': unknown hook 'register_assertion_type'"):
        get_plugin_manager(extra=[Typo()], use_entry_points=False)


def test_misspelt_hook_argument_is_an_error() -> None:
    class BadArgument:
        @specrun.hookimpl
        def register_assertion_types(self, registrar: Any) -> None:
            registrar(Loud)

    with pytest.raises(PluginError, match=r"(?s)plugin 'BadArgument': .*\{'registrar'\}"):
        get_plugin_manager(extra=[BadArgument()], use_entry_points=False)


def test_registering_the_wrong_kind_or_a_nameless_class_is_an_error() -> None:
    class WrongKind:
        @specrun.hookimpl
        def register_reporters(self, register: Any) -> None:
            register(Loud)

    with pytest.raises(PluginError, match=r"registered .*Loud.* as a reporter, which is not a "
                                          "Reporter subclass"):
        get_plugin_manager(extra=[WrongKind()], use_entry_points=False)

    class Nameless(Reporter):
        pass

    class NoName:
        @specrun.hookimpl
        def register_reporters(self, register: Any) -> None:
            register(Nameless)

    with pytest.raises(PluginError, match="reporter class Nameless has no name"):
        get_plugin_manager(extra=[NoName()], use_entry_points=False)


def test_a_hook_that_raises_is_an_error_naming_the_plugin() -> None:
    class Crashes:
        @specrun.hookimpl
        def register_targets(self, register: Any) -> None:
            raise KeyError("oops")

    with pytest.raises(PluginError, match="plugin 'Crashes' failed in register_targets: KeyError"):
        get_plugin_manager(extra=[Crashes()], use_entry_points=False)


def test_blocked_names_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DISABLE_ENV, " fake, ,other ,")
    assert blocked_names() == {"fake", "other"}


def test_composed_schema_validates_plugin_parameters(tmp_path: Path) -> None:
    registry = get_plugin_manager(extra=[LoudPlugin()], use_entry_points=False).registry
    schema = compose(registry)
    assert schema["$defs"]["assertion"]["properties"]["type"]["enum"] == ["loud"]
    loader = Loader(registry)
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": "a", "input": "hi", "assert": {"type": "loud", "min_length": 2}}\n')
    [suite] = loader.load([good])
    assert suite.cases[0].assertions[0].params == {"min_length": 2}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "input": "hi", "assert": {"type": "loud"}}\n')
    with pytest.raises(SuiteError, match="missing required field 'min_length'"):
        loader.load([bad])


# -- docs ------------------------------------------------------------------------------------------


def _hook_names() -> list[str]:
    return sorted(name for name, value in vars(hookspecs).items() if hasattr(value, "specrun_spec"))


def test_every_hook_is_documented() -> None:
    """datasette's rule: a hook missing from the plugin guide fails the build."""
    guide = (ROOT / "docs" / "plugins.md").read_text("utf-8")
    names = _hook_names()
    assert "register_assertion_types" in names and "run_finished" in names
    missing = [name for name in names if f"`{name}" not in guide]
    assert not missing, f"hooks not documented in docs/plugins.md: {missing}"


def test_every_kind_is_documented() -> None:
    guide = (ROOT / "docs" / "plugins.md").read_text("utf-8")
    missing = [cls.__name__ for cls in KINDS.values() if f"`{cls.__name__}`" not in guide]
    assert not missing, f"kinds not documented in docs/plugins.md: {missing}"
