"""Positions inside JSON records (specrun/_load/json_positions.py): found without ruamel.yaml, and
always the ones ruamel.yaml gives (what every file:line:col of a JSON or JSONL suite was)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from specrun._load.documents import _NOT_JSON_BREAKS, Record, _walk
from specrun._load.json_positions import JsonPositions, reads_as_yaml
from specrun._load.yaml_documents import bounded_yaml as _yaml


def ruamel_node(text: str) -> Any:
    """The text read as YAML, as positions were found before; None when ruamel.yaml fails."""
    try:
        return _yaml().load(text.translate(_NOT_JSON_BREAKS))
    except Exception:
        return None


def paths_into(data: Any) -> list[list[Any]]:
    """Every path into ``data``, and a missing key, index or step below a scalar at each level."""
    found: list[list[Any]] = [[]]

    def walk(node: Any, prefix: list[Any]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                found.append([*prefix, key])
                walk(value, [*prefix, key])
            found.extend([[*prefix, "missing"], [*prefix, 0]])
        elif isinstance(node, list):
            for index, value in enumerate(node):
                found.append([*prefix, index])
                walk(value, [*prefix, index])
            found.extend([[*prefix, len(node)], [*prefix, -1], [*prefix, "x"]])
        else:
            found.append([*prefix, "below"])

    walk(data, [])
    return found


# Pieces of keys and strings, among them what YAML reads otherwise than JSON.
PIECES = ["a", "id", "x y", ":", ",", "{", "]", "#", "&a", "*a", "<<", "-", "?", "!", "'", "---", "...", " ",
          '\\"', "\\\\", "\\/", "\\n", "\\t", "\\u00e9", "\\u0085", "\\u2028", "é", "😀", "\xa0", "true", "1",
          "\\ud83d\\ude00", "\\ud800", "\x85", "\u2028", "\u2029", "\x7f", "\x9f", "\ufeff", "\uffff"]  # fmt: skip


class Texts:
    """Random valid JSON texts, written with every kind of JSON whitespace between tokens."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def string(self) -> str:
        text = "".join(self.rng.choice(PIECES) for _ in range(self.rng.choice([0, 1, 2, 3, 5])))
        if self.rng.random() < 0.03:  # about ruamel.yaml's longest key
            text += "k" * self.rng.choice([300, 1020, 1021, 1022, 1023])
        return f'"{text}"'

    def blank(self) -> str:
        roll = self.rng.random()
        if roll < 0.5:
            return ""
        if roll < 0.8:
            return " "
        return "".join(self.rng.choice([" ", "\t", "\n", "\r", "  "]) for _ in range(self.rng.randint(1, 4)))

    def value(self, depth: int = 0) -> str:
        roll, b = self.rng.random(), self.blank
        if depth > 4 or roll < 0.35:
            return self.rng.choice([self.string(), self.string(), "1", "-2.5e3", "true", "null", "NaN"])
        if roll < 0.65:
            items = [b() + self.value(depth + 1) + b() for _ in range(self.rng.randint(0, 4))]
            return "[" + ",".join(items) + b() + "]"
        keys: list[str] = []
        for _ in range(self.rng.randint(0, 4)):
            keys.append(self.rng.choice(keys) if keys and self.rng.random() < 0.05 else self.string())
        return "{" + ",".join(b() + k + b() + ":" + b() + self.value(depth + 1) + b() for k in keys) + b() + "}"


@pytest.mark.parametrize("seed", range(4))
def test_every_position_is_the_one_ruamel_yaml_gives(seed: int) -> None:
    texts, fast = Texts(seed), 0
    for _ in range(120):
        text = texts.blank() + texts.value() + texts.blank()
        try:
            data = json.loads(text)
        except ValueError:  # a lone surrogate escape in a key, or the like
            continue
        record, node = Record(data, 3, 5, segment=text), ruamel_node(text)
        fast += reads_as_yaml(text)
        for path in paths_into(data):
            for at_key in (False, True):
                want = _walk(node, path, at_key) if node is not None else None
                if want is not None:  # to the record's place in its file, as Record.position does
                    line, col = want
                    want = (3 + line, col + 5 if line == 0 else col + 1)
                assert record.position(path, at_key) == (want or (3, 5)), (text, path, at_key)
    assert fast > 30  # the corpus tries the fast path, not only ruamel.yaml's


@pytest.mark.parametrize(
    ("odd", "plain"),
    [
        ('{"a": 1, "a": 2}', '{"a": 1, "b": 2}'),  # a duplicate key: ruamel.yaml refuses the text
        ('{"' + "k" * 1023 + '": 1}', '{"' + "k" * 1022 + '": 1}'),  # too long a key for YAML
        ('{"a"' + " " * 1022 + ": 1}", '{"a"' + " " * 1021 + ": 1}"),  # the same, in blanks
        ('{"a"\n: 1}', '{"a":\n 1}'),  # a key whose colon is on another line
        ('\t{"a": 1}', '{"a":\t1}'),  # a tab outside the brackets
        ('{"a\u2028b": 1}', '{"a\\u2028b": 1}'),  # a line separator: a space for YAML, so another key
        ('{"\\ud83d\\ude00": 1}', '{"😀": 1}'),  # one character for JSON, two for YAML
        ('{"\ufeffa": 1}', '{"\\ufeffa": 1}'),  # not counted in a column by YAML
        ('{"a": "\x7f"}', '{"a": "\\u007f"}'),  # not a character YAML accepts
    ],
)
def test_a_text_yaml_reads_otherwise_is_left_to_ruamel_yaml(odd: str, plain: str) -> None:
    assert json.loads(odd) and json.loads(plain)
    assert not reads_as_yaml(odd)
    assert reads_as_yaml(plain) and ruamel_node(plain) is not None


def test_a_cycle_in_five_thousand_checkpoints_is_located_without_ruamel_yaml() -> None:
    """The record the trust test reports a cycle in (500 kB on one line): located by scanning
    it, where reading it again with ruamel.yaml took seconds."""
    chain: list[dict[str, Any]] = [{"id": f"c{i}", "after": [f"c{i - 1}"]} for i in range(5000)]
    chain[0]["after"] = ["c4999"]
    line = json.dumps({"id": "long", "checkpoints": chain})
    record = Record(json.loads(line), 2, 1, segment=line)
    assert record.position(["checkpoints", 0, "after"]) == (2, line.index('["c4999"]') + 1)
    assert record.position(["checkpoints", 4999, "id"], at_key=True) == (2, line.index('"id": "c4999"') + 1)
    assert record.position(["checkpoints", 5000]) == (2, line.index("[{") + 1)  # the deepest point there is
    assert record.node is None  # no YAML node was built


def test_json_positions_find_the_deepest_point_of_a_path() -> None:
    text = '{\n  "cases": [\n    {"id": "a", "input": [1, {"x": 2}]}\n  ]\n}'
    line = text.split("\n")[2]
    positions = JsonPositions(text)
    assert positions.find(["cases", 0, "input", 1, "x"]) == (2, line.index("2}"))
    assert positions.find(["cases", 0, "input", 1, "x"], at_key=True) == (2, line.index('"x"'))
    assert positions.find(["cases", 0, "input", 0, "deeper"]) == (2, line.index("1,"))
    assert positions.find(["cases", 3]) == (1, text.index("[") - text.index("\n") - 1)
    assert JsonPositions(' "text"').find([]) is None  # a scalar has no place of its own
