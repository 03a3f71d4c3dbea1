"""The plugin API: ``specrun.plugin`` is all a plugin imports, and the engine names no plugin."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import specrun.plugin
from specrun._core.errors import PluginError, UsageError
from specrun._project.plugin_manager import default_plugins
from specrun._project.registry import Registry
from specrun.cli.plugins import command as plugins_command
from specrun.plugin import AssertionType, Simulator
from specrun.plugin.testing import check_assertion, run_suite

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_DIRS = [ROOT / "plugins" / "specrun_plugins", ROOT / "tests" / "fake_plugin"]
ALLOWED = {"specrun", "specrun.plugin"}


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_plugins_import_only_the_public_api():
    wrong = {
        f"{path.relative_to(ROOT)}: {module}"
        for folder in PLUGIN_DIRS
        for path in folder.rglob("*.py")
        for module in _imported_modules(path)
        if module.split(".")[0] == "specrun" and module not in ALLOWED
    }
    assert not wrong, "plugins may import only specrun and specrun.plugin:\n" + "\n".join(sorted(wrong))


# The engine's own plugins (in its rooms, e.g. specrun._report.reporters): entry points like a family's.
ENGINE_PLUGINS = tuple(
    ep.value + "." for ep in importlib.metadata.entry_points(group="specrun") if ep.value.startswith("specrun.")
)


def _first_party_names(*kinds: str) -> set[str]:
    registry = default_plugins().registry
    return {
        name
        for kind in kinds or registry.types
        for name, entry in registry.types[kind].items()
        if entry.cls.__module__.startswith(("specrun_plugins.", *ENGINE_PLUGINS))
    }


def _named_plugins(path: Path, names: set[str], typed: set[str]) -> list[str]:
    """Places where engine code picks a concrete plugin by name: a registry lookup, a default
    ``type``, a ``{"type": name}`` config (``typed``: the kinds configured so, not an OpenAI
    content part's ``{"type": "file"}``), an ``Assertion(name, ...)``, a ``.name == name``."""

    def plugin_name(node: ast.AST | None, among: set[str] = names) -> str | None:
        return node.value if isinstance(node, ast.Constant) and node.value in among else None

    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        hit = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "specrun_plugins" in node.value:
            hit = node.value
        elif isinstance(node, ast.ImportFrom | ast.Import):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            hit = next((m for m in modules if m.startswith("specrun_plugins")), None)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called == "get" and len(node.args) == 2:
                hit = plugin_name(node.args[1])  # registry.get(kind, "x") and config.get("type", "x")
            elif called == "Assertion" and node.args:
                hit = plugin_name(node.args[0])
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "type":
                    hit = hit or plugin_name(value, typed)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr in {"name", "type"} for s in sides) or any(
                isinstance(s, ast.Call) and getattr(s.func, "attr", "") == "get" for s in sides
            ):
                hit = next((plugin_name(s) for s in sides if plugin_name(s)), None)
        if hit:
            found.append(f"{path.name}:{getattr(node, 'lineno', '?')}: {hit}")
    return found


def test_the_engine_names_no_concrete_plugin():
    names, typed = _first_party_names(), _first_party_names("assertion", "target", "simulator")
    assert {"equals", "agent", "process", "python", "http"} <= names  # jsonl is the engine's own stream
    assert len(ENGINE_PLUGINS) == 4
    engine = sorted(
        path
        for path in (ROOT / "specrun").rglob("*.py")
        if not ".".join(path.relative_to(ROOT).with_suffix("").parts).startswith(ENGINE_PLUGINS)
    )
    found = [f"{path.parent.name}/{hit}" for path in engine for hit in _named_plugins(path, names, typed)]
    assert not found, "the engine names concrete plugins; make each a declaration by the plugin:\n" + "\n".join(found)


def test_the_grep_catches_what_it_is_for(tmp_path):
    code = tmp_path / "x.py"
    code.write_text(
        "from specrun_plugins.targets.process import AgentProcess\n"
        "a = registry.get('reporter', 'agent')\n"
        "b = config.get('type', 'agent')\n"
        "c = {'type': 'python', 'function': f}\n"
        "d = Assertion('equals', {'value': 1})\n"
        "e = cls.name == 'jsonl'\n"
        "f = config.get('agent')\n"  # a key that happens to be a plugin's name is fine
    )
    hits = _named_plugins(code, {"agent", "python", "equals", "jsonl"}, {"python"})
    assert [h.split(":", 1)[1] for h in hits] == [
        "1: specrun_plugins.targets.process",
        "2: agent",
        "3: agent",
        "4: python",
        "5: equals",
        "6: jsonl",
    ]


def test_every_public_name_is_documented():
    doc = (ROOT / "docs" / "plugins.md").read_text()
    missing = [name for name in specrun.plugin.__all__ if not re.search(rf"`{name}[`(]", doc)]
    assert not missing, f"docs/plugins.md does not document: {', '.join(missing)}"
    assert len(set(specrun.plugin.__all__)) == len(specrun.plugin.__all__)
    assert all(hasattr(specrun.plugin, name) for name in specrun.plugin.__all__)


def test_specrun_plugins_api_lists_the_public_names():
    result = CliRunner().invoke(plugins_command, ["--api"])
    assert result.exit_code == 0, result.output
    listed = [line.split()[0] for line in result.output.splitlines() if line.startswith("  ")]
    assert listed == sorted(specrun.plugin.__all__, key=str.lower)
    assert "complete_json" in result.output  # the model client's methods are listed with it


def test_check_assertion_runs_as_a_run_would(monkeypatch):
    assert check_assertion("contains", {"value": "ell"}, "hello").status == "passed"
    failed = check_assertion("equals", {"value": "x"}, "hello")
    assert (failed.status, failed.expected, failed.actual) == ("failed", "x", "hello")
    assert check_assertion("contains", {"value": "ell"}, "hello", negate=True).status == "failed"
    assert check_assertion("match", {"mode": "score"}, "Paris", expected="Paris").status == "passed"
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "fake_plugin"))  # a plugin that is not installed
    monkeypatch.delitem(sys.modules, "specrun_fake_plugin", raising=False)
    shouting = check_assertion("shouting", {}, "quiet", plugins=[importlib.import_module("specrun_fake_plugin")])
    assert (shouting.status, shouting.message) == ("failed", "the output is not all upper case")
    assert check_assertion("llm", {"rubric": "polite"}, "hi").status == "error"  # no model outside a run


AGENT = "def reply(messages, ctx):\n    return 'The capital is ' + messages[-1].text\n"


def test_run_suite_runs_a_suite_in_a_temp_project(tmp_path):
    suite = (
        "- id: bare-expected\n  input: Paris\n  expected: The capital is Paris\n"
        "- id: wrong\n  input: Lyon\n  expected: The capital is Paris\n"
        "- id: match-from-config\n  input: Paris.\n  assertions: [{type: match, expected: The capital is Paris}]\n"
    )
    outcome = run_suite(
        tmp_path, suite, agent="python:capital:reply", files={"capital.py": AGENT}, config="compare_mode: score\n"
    )
    by_id = {r["id"]: r for r in outcome.results}
    assert outcome.exit_code == 1, outcome.stderr
    # a bare `expected` means the type that declares it (equals)
    assert [a["type"] for a in by_id["bare-expected"]["assertions"]] == ["equals"]
    assert by_id["bare-expected"]["status"] == "passed" and by_id["wrong"]["status"] == "failed"
    # match reads compare_mode from specrun.yaml through its services: score mode, no judge called
    decided = by_id["match-from-config"]["assertions"][0]
    assert decided["status"] == "passed" and decided["details"]["decided_by"] == "score"
    assert outcome.summary is not None and outcome.summary["total"] == 3


def test_a_declaration_claimed_twice_is_a_plugin_error():
    class One(AssertionType):
        name = "one"
        expected_param = "value"

    class Two(AssertionType):
        name = "two"
        expected_param = "value"

    registry = Registry()
    assert registry.declaring("assertion", "expected_param") is None
    registry.register("assertion", One, "a")
    assert registry.declaring("assertion", "expected_param") is One
    registry.register("assertion", Two, "b")
    with pytest.raises(PluginError, match=re.escape("'one' (plugin 'a'), 'two' (plugin 'b')")):
        registry.declaring("assertion", "expected_param")


def test_a_simulator_owns_its_shorthand():
    class Persona(Simulator):
        name = "persona"
        shorthand = "who"
        agent_params = ("who",)

    registry = Registry()
    registry.register("simulator", Persona, "p")
    assert registry.simulator_for({"who": "sim"}) is Persona
    assert registry.simulator_config("sim") == {"type": "persona", "who": "sim"}
    with pytest.raises(UsageError, match="known: persona"):
        registry.simulator_for({"type": "nope"})
