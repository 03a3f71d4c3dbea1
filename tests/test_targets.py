"""The targets family: registration, schemas, and the examples in docs/targets.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specrun._core.errors import SuiteError
from specrun._load.loader import load_mapping_file
from specrun._load.schemas import agent_schema
from specrun._project.plugin_manager import get_plugin_manager
from specrun._project.project import Project

DOCS = Path(__file__).parents[1] / "docs" / "targets.md"


@pytest.fixture(scope="module")
def registry():
    return get_plugin_manager().registry


def test_family_registers_its_targets(registry):
    names = registry.names("target")
    assert {"python", "http", "process"} <= set(names)
    assert not any(n.startswith("_") for n in names)


def yaml_examples() -> list[str]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S)
    return [b for b in blocks if "target:" in b]


@pytest.mark.parametrize("example", yaml_examples())
def test_docs_examples_are_valid_agent_files(registry, example, tmp_path):
    path = tmp_path / "agent.yaml"
    path.write_text(example)
    data = load_mapping_file(path, agent_schema(registry))
    config = Project(tmp_path, registry).target_config(data["target"])  # a mapping, or the string shorthand
    assert config is not None, data["target"]
    registry.get("target", config["type"])(config, tmp_path)  # builds without error


def test_schema_rejects_unknown_keys_and_wrong_types(registry, tmp_path):
    path = tmp_path / "agent.yaml"
    path.write_text("target:\n  type: http\n  url: http://x\n  retries: -1\n  verbose: true\n")
    with pytest.raises(SuiteError) as info:
        load_mapping_file(path, agent_schema(registry))
    text = str(info.value)
    assert "verbose" in text and "retries" in text
    path.write_text("target:\n  type: process\n  command: []\n")
    with pytest.raises(SuiteError, match="command"):
        load_mapping_file(path, agent_schema(registry))
