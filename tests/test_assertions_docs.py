"""docs/assertions.md: every deterministic type has a section, and every example is valid."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from specrun._load.loader import Loader
from specrun._project.plugin_manager import get_plugin_manager

DOC = Path(__file__).parent.parent / "docs" / "assertions.md"
MODULES = {"text", "similar", "json_assertions", "tools", "metrics", "script", "snapshot"}
BLOCK = re.compile(r"^```(yaml|python)\n(.*?)^```", re.M | re.S)


def blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text("utf-8")) if lang == kind]


def as_cases(data: Any, n: int) -> list[dict[str, Any]]:
    if isinstance(data, dict):
        return data["cases"]
    if data and "id" in data[0]:
        return data
    return [{"id": f"example-{n}", "input": "x", "assertions": data}]


def test_every_deterministic_type_has_a_section():
    registry = get_plugin_manager().registry
    names = [
        name for name, cls in registry.classes("assertion").items() if cls.__module__.rsplit(".", 1)[-1] in MODULES
    ]
    assert len(names) >= 19
    text = DOC.read_text("utf-8")
    assert [n for n in names if f"### `{n}`" not in text] == []


def test_every_yaml_example_validates(tmp_path: Path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "checks.py").write_text(blocks("python")[0])
    loader = Loader(get_plugin_manager().registry)
    examples = blocks("yaml")
    assert len(examples) >= 20  # the opening suite and one per type
    for n, example in enumerate(examples):
        cases = as_cases(YAML(typ="safe").load(example), n)
        loader.load_data(cases, f"example-{n}", tmp_path, generated=False)  # raises on a mistake


async def test_the_script_example_works():
    namespace: dict[str, Any] = {}
    exec(blocks("python")[0], namespace)
    found = namespace["mentions_keywords"]("a refund in 5 days", [], {"keywords": ["refund", "5 days"]})
    assert found == {"pass": True, "message": "all found"}
    context = {"options": {"max_amount": 100}, "tool_calls": [{"name": "pay", "arguments": {"amount": 500}}]}
    assert await namespace["within_budget"]("", [], None, context) is False
